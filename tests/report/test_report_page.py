"""``autocomp-core report --html``: one self-contained page, checked in headless Chromium.

The page of a real run must draw its plots, show one tree node per candidate, show a
candidate's diff when it is clicked, make no request but for its own file, log no
error, and show text from the run (LLM-written, untrusted) as text."""

from __future__ import annotations

import base64
import difflib
import gzip
import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()
CHARTS = ["score-chart", "speedup-chart", "tokens-chart", "timeline-chart"]
PAINTED = """(id) => {
  const c = document.getElementById(id);
  const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
  return n;
}"""


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "report", *args, "--html"], capture_output=True, text=True, check=False
    )


def payload_of(page: Path) -> dict:
    blob = re.search(r'id="autocomp-data"[^>]*>([^<]*)<', page.read_text()).group(1)
    return json.loads(gzip.decompress(base64.b64decode(blob)))


def journal(run: Path) -> list:
    store = RunStore(run)
    try:
        return store.candidates()
    finally:
        store.close()


def test_report_html_writes_one_self_contained_file(run_copy, tmp_path):
    out = report(str(run_copy))
    assert out.returncode == 0, out.stderr
    page = Path(out.stdout.strip())
    assert page == run_copy / "report.html"
    html = page.read_text()
    # nothing to fetch: no external script, style sheet, font, image or frame
    assert not re.search(r"<(script|img|iframe)[^>]+src=|<link\b|@import|@font-face", html)
    assert "default-src 'none'" in html
    data = payload_of(page)
    assert data["kind"] == "run"
    assert len(data["runs"][0]["candidates"]) == len(journal(run_copy))
    elsewhere = report(str(run_copy), "--output", str(tmp_path / "r.html"))
    assert elsewhere.returncode == 0 and (tmp_path / "r.html").exists()


def test_report_html_of_a_folder_without_runs_fails_in_one_line(tmp_path):
    out = report(str(tmp_path))
    assert out.returncode == 2
    expected = f"error: report: no run found in {tmp_path} (a run directory holds run.sqlite)"
    assert out.stderr.strip().splitlines() == [expected]


def test_report_page_in_a_browser(run_copy, open_page, screenshots):
    assert report(str(run_copy)).returncode == 0
    url = (run_copy / "report.html").as_uri()
    view = open_page(url)
    page = view.page
    for chart in CHARTS:
        assert page.evaluate(PAINTED, chart) > 500, f"{chart} drew nothing"
    cands = journal(run_copy)
    nodes = page.locator("#tree .node")
    assert nodes.count() == len(cands)
    assert sorted(nodes.evaluate_all("ns => ns.map(n => n.dataset.id)")) == sorted(
        c.id for c in cands
    )
    assert page.locator("#failures tbody tr").count() >= 1
    # the audit-label filter dims every candidate without the chosen label
    refused = sum(not c.correct for c in cands)
    page.select_option("#label-filter", "refused")
    assert page.locator("#tree .node:not(.dimmed)").count() == refused
    assert page.locator('#tree .node:not(.dimmed)[data-label="refused"]').count() == refused
    page.select_option("#label-filter", "")
    assert page.locator("#tree .node.dimmed").count() == 0

    # a child whose program differs from its parent's: its diff names the changed lines
    by_id = {c.id: c for c in cands}
    child = next(
        c for c in cands if c.origin == "plan" and c.code and c.code != by_id[c.parents[0]].code
    )
    parent = by_id[child.parents[0]]
    page.click(f'#tree .node[data-id="{child.id}"]')
    diff = page.locator("#detail-diff").inner_text()
    assert f"--- {parent.id}" in diff and f"+++ {child.id}" in diff
    expected = difflib.ndiff(parent.code.splitlines(), child.code.splitlines())
    for line in expected:
        if line[:2] in ("+ ", "- "):
            assert line[0] + line[2:] in diff.splitlines(), line
    assert page.locator("#detail-plan").inner_text() == child.plan
    page.click('#detail button[data-tab="diff-baseline"]')
    assert page.locator("#detail-diff").inner_text().startswith("--- root")
    page.click('#detail button[data-tab="evaluation"]')
    assert page.locator("#detail-eval").is_visible()

    best = page.locator("#tree .node .best-ring").locator("..").get_attribute("data-id")
    page.click(f'#tree .node[data-id="{best}"]')
    page.click('#detail button[data-tab="diff-parent"]')
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(screenshots / "report.png"), full_page=True)
    assert view.requests == [url]  # nothing but the file itself
    assert view.errors == []


def test_suite_page_across_problems(suite_dir, tmp_path, open_page, screenshots):
    target = tmp_path / "suite.html"
    assert report(str(suite_dir), "--output", str(target)).returncode == 0
    view = open_page(target.as_uri())
    page = view.page
    rows = page.locator("#runs tbody tr")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.run)") == [
        "count_pairs",
        "prefix_max",
        "sum_squares",
    ]
    assert page.evaluate(PAINTED, "suite-chart") > 500
    page.screenshot(path=str(screenshots / "suite.png"), full_page=True)
    page.click('#runs tr[data-run="sum_squares"]')
    page.wait_for_selector("#tree .node")
    assert page.locator("#tree .node").count() == len(journal(suite_dir / "sum_squares"))
    assert page.evaluate(PAINTED, "score-chart") > 500
    page.go_back()
    page.wait_for_selector("#runs")
    assert all(url == target.as_uri() for url in view.requests), view.requests
    assert view.errors == []


HOSTILE = (
    '<img src="http://192.0.2.1/x.png" onerror="window.__pwned=1">'
    "</script><script>window.__pwned=2</script>"
)


def test_text_from_the_run_is_shown_as_text(run_copy, open_page):
    victim = next(c for c in journal(run_copy) if c.origin == "plan")
    with sqlite3.connect(run_copy / "run.sqlite") as db:
        db.execute("UPDATE candidates SET plan = ? WHERE id = ?", (HOSTILE, victim.id))
    assert report(str(run_copy)).returncode == 0
    url = (run_copy / "report.html").as_uri()
    view = open_page(f"{url}#c={victim.id}")
    assert view.page.locator("#detail-plan").inner_text() == HOSTILE
    assert view.page.evaluate("window.__pwned") is None
    assert [r.split("#")[0] for r in view.requests] == [url]
    assert view.errors == []


def best_and_baseline(run: Path, best: float) -> tuple[str, float]:
    """Scores of ``run`` moved so that its best candidate measures ``best`` exactly and
    every other one a million more than it did; returns the best's id and the baseline."""
    cands = journal(run)
    top = min((c for c in cands if c.correct), key=lambda c: (c.score, c.iteration, c.id))
    root = next(c for c in cands if c.origin == "root")
    with sqlite3.connect(run / "run.sqlite") as db:
        db.execute("UPDATE candidates SET score = score + 1000000 WHERE score IS NOT NULL")
        db.execute("UPDATE candidates SET score = ? WHERE id = ?", (best, top.id))
    return top.id, root.score + 1_000_000


def test_cycle_counts_are_shown_exactly(run_copy, open_page):
    """461,425 cycles is shown as 461,425, not rounded to 461,430; in the page as a
    browser draws it and in the HTML itself, for readers that run no script."""
    best_id, baseline = best_and_baseline(run_copy, 461425.0)
    assert report(str(run_copy)).returncode == 0
    html = (run_copy / "report.html").read_text()
    static = re.search(r'<main id="app">(.*?)</main>', html, re.S).group(1)
    assert "Loading" not in static
    assert "461425" in static and f"{int(baseline)}" in static
    view = open_page((run_copy / "report.html").as_uri())
    head = view.page.locator("#run-head").inner_text()
    assert "461,425" in head and f"{int(baseline):,}" in head, head
    view.page.click(f'#tree .node[data-id="{best_id}"]')
    assert "461,425" in view.page.locator("#detail").inner_text()
    assert view.errors == []


def test_runs_of_the_same_problem_are_told_apart(suite_dir, tmp_path, open_page):
    root = tmp_path / "two"
    for name in ("monday", "tuesday"):
        shutil.copytree(suite_dir / "sum_squares", root / name / "sum_squares")
    target = tmp_path / "two.html"
    assert report(str(root), "--output", str(target)).returncode == 0
    static = re.search(r'<main id="app">(.*?)</main>', target.read_text(), re.S).group(1)
    assert "monday/sum_squares" in static and "tuesday/sum_squares" in static
    view = open_page(target.as_uri())
    labels = view.page.evaluate('Chart.getChart("suite-chart").data.labels')
    assert labels == ["monday/sum_squares", "tuesday/sum_squares"]
    assert view.errors == []
