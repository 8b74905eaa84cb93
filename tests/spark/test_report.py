"""`lakefresh report`: one self-contained HTML file, opened the way a person
would, in a real headless browser (Debian's chromium), which must render every chart."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import cli_in_process

TABLES = """
- name: clicks
  source: {kind: files, path: in, format: csv, schema: {page: int, n: int}}
  strategy: {kind: key, keys: [page]}
  freshness: {warn_after: 1d}
  rules:
    - {name: positive, row: n > 0, action: warn}
- name: later
  source: {kind: files, path: later, format: csv}
  strategy: {kind: append}
"""


def rendered(path) -> str:
    """The page's DOM after its scripts ran in headless Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("needs chromium (make test-setup installs it)")
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=20000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_the_report_renders_every_chart_of_every_table_in_a_browser(ws):
    ws.write("in/b1.csv", "page,n\n1,5\n2,0\nx,1\n")
    ws.write("in/b2.csv", "page,n\n1,6\n3,2\n")
    ws.folder("later")
    assert ws.pipeline(TABLES).run().ok
    ws.write("in/b3.csv", "page,n\n4,1\n")  # waiting

    shown = cli_in_process("report", "pipeline.yml", "-o", "out/report.html", cwd=ws.root)
    assert shown.returncode == 0, shown.stdout
    page = ws.root / "out" / "report.html"
    assert shown.stdout.strip() == "report written to out/report.html"
    html = page.read_text(encoding="utf-8")
    assert "<script src=" not in html  # nothing to fetch: the charting script is inside

    dom = rendered(page)
    sections = re.split(r'<section class="table"', dom)[1:]
    assert [re.search(r"<h2>(.*?)</h2>", s).group(1) for s in sections] == ["clicks", "later"]
    clicks, later = sections
    assert clicks.count('<div class="chart">') == 4
    assert clicks.count('class="main-svg"') >= 4  # Plotly drew each chart
    for title in (
        "Status codes per batch",
        "Rows per batch",
        "Rule violations per batch",
        "Seconds per phase",
    ):
        assert title in clicks
    assert "<b>2</b> batches" in clicks and "<b>1</b> waiting" in clicks
    assert "freshness:\n<b>pass</b>" in clicks and "freshness" not in later
    # a legend names each code the table shows, for its strategy; a code has one colour
    legend = re.search(r'<p class="legend">(.*?)</p>', clicks, re.S).group(1)
    assert re.findall(r"<b>(.*?)</b> ([^<]*?)\s*</span>", legend) == [("C", "changed"), ("N", "new key")]
    assert '"marker":{"color":"#2ca02c"},"name":"N"' in html
    assert clicks.count("fill: rgb(229, 236, 246)") >= 4  # plotly's own look: its template's plot area
    assert "No batch published yet." in later
