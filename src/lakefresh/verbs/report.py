"""`lakefresh report PIPELINE --file report.html`: one self-contained HTML file (no server, no
network: the charting library's script is inside the file) that shows, per table, what its
batches did over time:

1. status codes per batch (stacked bars: N new, C changed, U unchanged, D deleted...), each code
   in one colour on every chart of the page, with a legend that says what each code means for
   the table's strategy;
2. rows per batch: rows read, rows still in the target (effective), rows quarantined;
3. data-quality rules: violations per rule per batch;
4. seconds per phase per batch (read, stage, audit, publish);

with a line of figures above (batches published, rows now, batches waiting in the source, the
last batch and when, its freshness). The charts are drawn by Plotly (a well-kept library:
interactive, one file, no server); the page is a Jinja2 template.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from lakefresh.state.control import is_verb

if TYPE_CHECKING:
    from lakefresh.results import TableStatus

PHASES = ("read_seconds", "stage_seconds", "audit_seconds", "publish_seconds")

# one colour per status code, the same on every chart: adds green, changes blue, removals red,
# rows left alone grey, rows ignored or left out in muted tones
CODE_COLOURS = {
    "N": "#2ca02c",
    "+A": "#2ca02c",
    "C": "#1f77b4",
    "+C": "#1f77b4",
    "-C": "#aec7e8",
    "L": "#9467bd",
    "T": "#17becf",
    "D": "#d62728",
    "R": "#ff7f0e",
    "-R": "#d62728",
    "E": "#e377c2",
    "U": "#c7c7c7",
    "S": "#dbdb8d",
    "M": "#bcbd22",
    "O": "#8c564b",
    "K": "#7f7f7f",
    "F": "#c49c94",
    "W": "#f7b6d2",
    "X": "#9edae5",
    "Z": "#393b79",
}
OTHER_COLOUR = "#555555"


@dataclass
class TableReport:
    table: str
    status: dict[str, Any]
    batches: list[dict[str, Any]] = field(default_factory=list)  # published, oldest first
    codes: dict[str, str] = field(default_factory=dict)  # its strategy's status codes: meaning


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lakefresh: {{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
.figures span { display: inline-block; margin-right: 2rem; } .figures b { font-size: 1.2rem; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.chart { min-height: 320px; } .empty { color: #777; }
.legend span { display: inline-block; margin-right: 1.2rem; font-size: 0.9rem; }
.legend i { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem;
  vertical-align: middle; }
.fresh-warn b { color: #b8860b; } .fresh-error b { color: #d62728; }
</style>{{ script }}</head><body>
<h1>lakefresh: {{ title }}</h1><p>Written {{ written }} UTC; {{ tables|length }} table(s).</p>
{% for t in tables %}
<section class="table" id="table-{{ loop.index }}"><h2>{{ t.table }}</h2>
<p class="figures"><span><b>{{ t.status.batches_published }}</b> batches</span>
<span><b>{{ t.status.rows if t.status.rows is not none else "-" }}</b> rows</span>
<span><b>{{ t.status.pending if t.status.pending is not none else "-" }}</b> waiting</span>
<span>last: {{ t.status.last_batch_id or "-" }} {{ t.status.last_published_at or "" }}</span>
{% if t.status.freshness %}<span class="fresh-{{ t.status.freshness }}">freshness:
<b>{{ t.status.freshness }}</b></span>{% endif %}</p>
{% if t.legend %}<p class="legend">{% for code, meaning, colour in t.legend %}
<span><i style="background: {{ colour }}"></i><b>{{ code }}</b> {{ meaning }}</span>
{% endfor %}</p>{% endif %}
{% if t.charts %}<div class="grid">
{% for chart in t.charts %}<div class="chart">{{ chart }}</div>{% endfor %}</div>
{% else %}<p class="empty">No batch published yet.</p>{% endif %}
</section>
{% endfor %}</body></html>
"""


def render(title: str, tables: list[TableReport]) -> str:
    """The report page."""
    import jinja2
    from markupsafe import Markup
    from plotly.offline import get_plotlyjs

    charted = [
        {"table": t.table, "status": t.status, "charts": _charts(t), "legend": _legend(t)} for t in tables
    ]
    page: str = jinja2.Template(PAGE, autoescape=True).render(
        title=title,
        tables=charted,
        written=datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        script=Markup(f'<script type="text/javascript">{get_plotlyjs()}</script>'),
    )
    return page


def table_report(status: TableStatus, history: list[dict[str, Any]], codes: dict[str, str]) -> TableReport:
    """A table's section: its status, its published batches oldest first, and `codes`, its
    strategy's status codes with their meanings (strategies.status_codes)."""
    published = [r for r in history if r["status"] == "published" and not is_verb(r["batch_id"])]
    published.sort(key=lambda r: (r["published_at"] or r["started_at"] or datetime.min, r["batch_id"]))
    return TableReport(status.table, status.to_dict(), published, codes)


def _legend(t: TableReport) -> list[tuple[str, str, str]]:
    """(code, meaning, colour) of each status code the table's batches show."""
    shown = sorted({k for r in t.batches for k in (r["status_counts"] or {})})
    return [(c, t.codes.get(c, "a code of another strategy"), colour(c)) for c in shown]


def colour(code: str) -> str:
    """A status code's colour, the same on every chart."""
    return CODE_COLOURS.get(code, OTHER_COLOUR)


def _bar(name: str, x: list[str], y: list[Any], colour: str | None = None) -> dict[str, Any]:
    """A bar trace as plotly's figure schema has it, its keys in the order plotly writes them."""
    trace = {"name": name, "type": "bar", "x": x, "y": y, **({"marker": {"color": colour}} if colour else {})}
    return dict(sorted(trace.items()))


@cache
def _template() -> dict[str, Any]:
    """Plotly's default look (its `plotly` template), which a figure built as a plain dict does
    not get: read from the file plotly ships it in, not through `plotly.io.templates` (which
    builds and checks it as graph objects, a tenth of a second)."""
    from importlib import resources

    text = resources.files("plotly").joinpath("package_data/templates/plotly.json").read_text()
    return dict(json.loads(text))


def _charts(t: TableReport) -> list[Any]:
    """The table's charts. Figures are plotly's plain dicts, written without plotly's validation
    (graph_objects checks every property: most of a report's time without a JVM)."""
    import plotly.io as pio
    from markupsafe import Markup

    if not t.batches:
        return []
    ids = [r["batch_id"] for r in t.batches]
    codes = sorted({k for r in t.batches for k in (r["status_counts"] or {})})
    rules = sorted({k for r in t.batches for k in (r.get("rule_results") or {})})
    figures = [
        (
            "Status codes per batch",
            [
                _bar(c, ids, [(r["status_counts"] or {}).get(c, 0) for r in t.batches], colour(c))
                for c in codes
            ],
            "stack",
        ),
        (
            "Rows per batch",
            [
                _bar("rows", ids, [r["record_count"] or 0 for r in t.batches]),
                _bar("effective", ids, [r["effective_count"] or 0 for r in t.batches]),
                _bar("quarantined", ids, [r["quarantined_count"] or 0 for r in t.batches]),
            ],
            "group",
        ),
        (
            "Rule violations per batch",
            [_bar(n, ids, [(r.get("rule_results") or {}).get(n, 0) for r in t.batches]) for n in rules],
            "group",
        ),
        (
            "Seconds per phase",
            [_bar(p.split("_")[0], ids, [r[p] or 0 for r in t.batches]) for p in PHASES],
            "stack",
        ),
    ]
    out = []
    for title, traces, mode in figures:
        if not traces:  # no rules: say so instead of an empty chart
            out.append(Markup(f'<h3>{title}</h3><p class="empty">No data-quality rules on this table.</p>'))
            continue
        layout = {
            "title": {"text": title},
            "barmode": mode,
            "height": 320,
            "margin": {"l": 40, "r": 10, "t": 40, "b": 40},
            "template": _template(),
        }
        figure = {"data": traces, "layout": layout}
        out.append(Markup(pio.to_html(figure, validate=False, full_html=False, include_plotlyjs=False)))
    return out
