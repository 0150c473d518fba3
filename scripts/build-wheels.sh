#!/usr/bin/env bash
# Builds the wheels of autocomp-core and of every plugin under plugins/ (python -m build),
# each with its data (prompts, knowledge packs, problems, headers, runtimes), into dist/.
#   scripts/build-wheels.sh [OUT_DIR] [python -m build options, e.g. --no-isolation]
# --no-isolation builds with the hatchling of .venv instead of fetching it (works offline).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
OUT="dist"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then OUT="$1"; shift; fi
mkdir -p "$OUT"
rm -f "$OUT"/autocomp_*.whl
for project in . plugins/*/; do
  [ -f "$project/pyproject.toml" ] || continue
  "$PY" -m build --wheel --outdir "$OUT" "$@" "$project" >"$OUT/.build.log" 2>&1 \
    || { cat "$OUT/.build.log" >&2; echo "building the wheel of $project failed" >&2; exit 1; }
done
rm -f "$OUT/.build.log"
ls -1 "$OUT"/autocomp_*.whl
