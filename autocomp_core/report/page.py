"""The report page: one self-contained HTML file (styles, scripts, data inline).

The same page serves three uses: the report of one run, one page across the runs of a
folder or suite, and the live dashboard (which leaves the data out and fetches it from
the server). Charts are drawn by Chart.js and diffs computed by jsdiff, both shipped
inside this package (``vendor/``, see ``scripts/vendor_js.sh``), so the page opens
offline and its Content-Security-Policy forbids it to load anything from anywhere.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from string import Template
from typing import Any

from .data import find_runs, is_run, run_data, run_row
from .static import static_summary

HERE = Path(__file__).parent
#: the inline report may load nothing: no script, style, font, image or connection from
#: any address; the dashboard's page may also talk to the server that sent it
CSP_REPORT = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
)
CSP_LIVE = CSP_REPORT + "; connect-src 'self'"


@cache
def _asset(path: str) -> str:
    return (HERE / path).read_text(encoding="utf-8")


def _script(path: str) -> str:
    """A script's text, made safe to inline: it cannot close its <script> element."""
    return re.sub(r"</(script)", r"<\\/\1", _asset(path), flags=re.IGNORECASE)


def _package_version() -> str:
    try:
        return version("autocomp-core")
    except PackageNotFoundError:
        return "dev"


def compress(payload: dict[str, Any]) -> str:
    """JSON, gzip-compressed and base64-encoded: the page inflates it with the browser's
    own DecompressionStream. Programs from one lineage differ little, and compress well."""
    raw = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def render_page(title: str, payload: dict[str, Any] | None = None) -> str:
    """The page with ``payload`` inline (a report), or without (the live dashboard)."""
    source = {"mode": "inline" if payload is not None else "live", "title": title}
    substitutions = {
        "csp": CSP_REPORT if payload is not None else CSP_LIVE,
        "version": _package_version(),
        "title": _escape_html(title),
        # the numbers in the HTML itself, for readers that run no script; the live page
        # has none to show until it asks the server
        "summary": static_summary(payload)
        if payload is not None
        else '<p class="muted">Loading&hellip;</p>',
        "css": _asset("assets/report.css"),
        "source": json.dumps(source).replace("<", "\\u003c"),
        "payload": compress(payload) if payload is not None else "",
        "chartjs": _script("vendor/chart.umd.min.js"),
        "diffjs": _script("vendor/diff.min.js"),
        "appjs": _script("assets/report.js"),
    }
    return Template(_asset("assets/page.html")).substitute(substitutions)


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def report_payload(runs: list[tuple[str, Path]], title: str, suite: bool) -> dict[str, Any]:
    """The inline data of a report: one run, or the runs of a suite (a list first)."""
    datas = [run_data(path, name) for name, path in runs]
    return {
        "kind": "suite" if suite else "run",
        "title": title,
        "rows": [run_row(d) for d in datas],
        "runs": datas,
    }


def write_html_report(target: Path, output: Path | None = None) -> Path:
    """Write the HTML report of a run directory, or of every run below a folder (a suite:
    one page across its problems). Returns the file written (default: report.html in
    ``target``)."""
    from ..errors import ConfigError
    from ..run.exports import atomic_write

    if is_run(target):
        runs, suite = [(target.name, target)], False
    else:
        runs = [(path.relative_to(target).as_posix(), path) for path in find_runs(target)]
        suite = True
        if not runs:
            raise ConfigError(
                f"report: no run found in {target} (a run directory holds run.sqlite)"
            )
    title = f"autocomp: {target.resolve().name}"
    output = output or target / "report.html"
    atomic_write(output, render_page(title, report_payload(runs, title, suite)))
    return output
