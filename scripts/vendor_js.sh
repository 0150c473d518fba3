#!/usr/bin/env bash
# Refreshes the JavaScript libraries the HTML report ships inline (autocomp_core/report/vendor/):
# installs the versions pinned in package.json / package-lock.json from the npm registry and
# copies their minified browser builds and licenses next to them. The copies are committed,
# so installing autocomp needs neither npm nor the network; run this only to change a version.
set -euo pipefail
cd "$(dirname "$0")/../autocomp_core/report/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp package.json "$work/"
[ -f package-lock.json ] && cp package-lock.json "$work/"
if [ -f package-lock.json ]; then
  (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --silent)
else
  (cd "$work" && npm install --ignore-scripts --no-audit --no-fund --silent)
  cp "$work/package-lock.json" .
fi
cp "$work/node_modules/chart.js/dist/chart.umd.min.js" chart.umd.min.js
cp "$work/node_modules/chart.js/LICENSE.md" chart.js.LICENSE.md
cp "$work/node_modules/diff/dist/diff.min.js" diff.min.js
cp "$work/node_modules/diff/LICENSE" diff.LICENSE
echo "vendored: chart.js $(node -p "require('$work/node_modules/chart.js/package.json').version"), diff $(node -p "require('$work/node_modules/diff/package.json').version")"
