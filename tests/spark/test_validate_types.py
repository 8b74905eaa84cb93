"""`lakefresh validate` judges sampled values as the run casts them: the rows a run quarantines
for a value that does not parse are the rows validate flags, in CSV (its dialect, NULLs, date
format and time zone), JSON Lines and Parquet."""

from __future__ import annotations

from lakefresh.sources.sampling import sample
from lakefresh.sources.type_fit import misfits, pending_files

CSV_ROWS = [
    # id;qty;amount;price;ok;day;at  (every row but one value good, so a flagged line is one value)
    "1;7;10.50;1.5;true;31/01/2025;2025-01-31 10:00:00",
    "2;10.50;1;1;yes;01/02/2025;2025-02-01T10:00:00Z",  # an int with decimals
    "3; 8 ;10.505;1;t;02/02/2025;2025-02-02",  # more decimals than the scale
    "4;2147483648;1;1;n;03/02/2025;2025-02-03 10:00",  # an int overflow
    "5;1e3;1;1;0;04/02/2025;2025-02-04 10:00:00",  # an exponent in an int
    "6;1;10000.5;1;1;05/02/2025;2025-02-05 10:00:00",  # a decimal's precision exceeded
    "7;1;1.2E1;1e400;false;06/02/2025;2025-02-06 10:00:00",  # 1.2E1 fits; 1e400 is infinity
    "8;1;1;NaN;maybe;07/02/2025;2025-02-07 10:00:00",  # not a boolean
    "9;1;1;1;TRUE;2025-02-08;2025-02-08 10:00:00",  # a date not in csv.date_format
    "10;1;1;1;No;31/02/2025;2025-02-09 10:00:00",  # no such date
    "11;1;1;1,5;f;10/02/2025;2025-03-30 02:30:00",  # a comma in a double; a time in the DST gap
    "12;NULL;NULL;NULL;NULL;NULL;NULL",
    "13;;;;;;",
    '14;"1";"2.50";" 3 ";"y";"11/02/2025";"2025-02-11T10:00:00+01:00"',
    "15;-0;+1;.5;T;1/2/2025;2025-02-12 25:00:00",  # a one-digit day and month; an hour 25
    "16;1;1;0x1p3;F;12/02/25;2025-02-13 10:00:00 Europe/Paris",  # a two-digit year
]
SCHEMA = '{id: int, qty: int, amount: "decimal(6,2)", price: double, ok: boolean, day: date, at: timestamp}'
CSV_TABLE = f"""
- name: t
  source:
    kind: files
    path: in
    format: csv
    schema: {SCHEMA}
    timezone: Europe/Amsterdam
    csv: {{delimiter: ";", null_value: "NULL", date_format: dd/MM/yyyy}}
  strategy: {{kind: append}}
"""
JSON_LINES = [
    '{"id": 1, "qty": 7, "amount": 10.50, "ok": true, "day": "2025-01-31"}',
    '{"id": 2, "qty": 10.5, "amount": "10.5", "ok": "yes", "day": "2025-01-31 10:00"}',
    '{"id": 3, "qty": "8", "amount": 1.005, "ok": 1, "day": "31/01/2025"}',
    '{"id": 4, "qty": {"n": 1}, "amount": 1e1, "ok": null, "day": "2025-01-31T10:00:00Z"}',
]
JSON_TABLE = """
- name: j
  source:
    kind: files
    path: js
    format: json
    schema: {id: int, qty: int, amount: "decimal(4,2)", ok: boolean, day: date}
  strategy: {kind: append}
"""
PARQUET_TABLE = """
- name: p
  source: {kind: files, path: pq, format: parquet, schema: {id: int, n: int, d: "decimal(4,1)", s: int}}
  strategy: {kind: append}
"""


def flagged(p, table: str) -> list[int]:
    """The lines validate flags in the table's files (any column)."""
    config = p.config.table(table).source
    folder = p.base_dir / config.path
    paths = pending_files(config, str(folder), files=10)
    found = misfits(config, sample(config, paths), table, str(folder))
    return sorted({bad.line for misfit in found for bad in misfit.bad})


def quarantined(p, table: str) -> list[int]:
    return sorted(r["line"] for r in p.quarantined(table))


def test_validate_flags_the_rows_a_run_quarantines(ws):
    ws.write("in/b1.csv", "\n".join(["id;qty;amount;price;ok;day;at", *CSV_ROWS]) + "\n")
    ws.write("js/b1.json", "\n".join(JSON_LINES) + "\n")
    ws.write_parquet(
        "pq/b1.parquet",
        [(1, 2.0, 1.25, "3"), (2, 1.7, 1.5, "x"), (3, 3.0, 2.0, " 4 "), (4, 5.0, 123.45, "4.0")],
        "id int, n double, d double, s string",
    )
    p = ws.pipeline(CSV_TABLE + JSON_TABLE + PARQUET_TABLE)
    result = p.run()
    assert result.ok, result.to_dict()

    assert flagged(p, "t") == quarantined(p, "t") == [3, 4, 5, 6, 7, 9, 10, 11, 12, 16, 17]
    assert flagged(p, "j") == quarantined(p, "j") == [2, 3, 4]
    assert flagged(p, "p") == quarantined(p, "p") == [1, 2, 4]
