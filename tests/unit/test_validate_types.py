"""`lakefresh validate` reads the first rows of each local `files` source's first files and says
which declared types cannot hold them, without a JVM: one line per column with the declared type,
how many sampled values fail, one of them with its file and line, and a type that holds them all.
Some values failing is a warning (a run quarantines those rows); every sampled value failing is
an error (the declaration is wrong: a run would quarantine every row)."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from lakefresh.cli import app
from lakefresh.config import load_config
from lakefresh.sources.type_fit import sampled_types


def pipeline(tmp_path: Path, tables: str) -> Path:
    path = tmp_path / "pipeline.yml"
    path.write_text("tables:\n" + textwrap.indent(textwrap.dedent(tables).strip(), "  ") + "\n")
    return path


def put(tmp_path: Path, relative: str, text: str | bytes) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def validate(path: Path, *options: str) -> tuple[int, str]:
    shown = CliRunner().invoke(app, ["validate", str(path), *options])
    return shown.exit_code, shown.output


def lines(tmp_path: Path, tables: str) -> tuple[list[str], list[str], list[str]]:
    """validate's errors, warnings and notes about the sampled data."""
    path = pipeline(tmp_path, tables)
    report = sampled_types(load_config(path).tables, path)
    return report.errors, report.warnings, report.notes


def orders(schema: str, csv: str = "", path: str = "orders") -> str:
    options = f", csv: {csv}" if csv else ""
    return f"""
    - name: orders
      source: {{kind: files, path: {path}, format: csv, schema: {schema}{options}}}
      strategy: {{kind: append}}
    """


def test_an_int_column_holding_decimals_is_an_error_naming_the_type_that_holds_them(tmp_path):
    put(tmp_path, "orders/b1.csv", "order_id,amount\n1,10.50\n2,7.25\n3,\n")
    code, output = validate(pipeline(tmp_path, orders("{order_id: int, amount: int}")))
    assert code == 1
    assert output == (
        f"Error: {tmp_path}/pipeline.yml: 1 error(s) in the pipeline\n"
        "  tables[0] (orders).source.schema.amount: int holds none of the 2 sampled value(s), e.g. "
        "'10.50' (b1.csv, line 2): a run would quarantine every row; declare decimal(4,2), which "
        "holds them all\n"
    )


def test_some_values_that_do_not_parse_are_a_warning_with_their_count(tmp_path):
    put(tmp_path, "orders/b1.csv", "order_id,placed\n1,2025-01-31\n2,2025-02-30\n3,2025-03-01\n")
    put(tmp_path, "orders/b2.csv", "order_id,placed\n4,2025-04-01\n5,tomorrow\n")
    code, output = validate(pipeline(tmp_path, orders("{order_id: int, placed: date}")), "-o", "json")
    assert code == 0
    assert json.loads(output)["warnings"] == [
        "tables[0] (orders).source.schema.placed: date cannot hold 2 of 5 sampled values, e.g. "
        "'2025-02-30' (b1.csv, line 3): a run quarantines their rows"
    ]


def test_the_hint_is_the_narrowest_type_that_holds_every_sampled_value(tmp_path):
    put(tmp_path, "orders/b1.csv", "id,big,money,flag\n1,3000000000,1.5,1\n2,7,12.345,0\n3,8,1e2,yes\n")
    errors, warnings, _ = lines(tmp_path, orders('{id: int, big: int, money: "decimal(4,1)", flag: int}'))
    assert errors == []
    assert warnings == [
        "tables[0] (orders).source.schema.big: int cannot hold 1 of 3 sampled values, e.g. '3000000000' "
        "(b1.csv, line 2): a run quarantines their rows; bigint holds every sampled value",
        "tables[0] (orders).source.schema.money: decimal(4,1) cannot hold 1 of 3 sampled values, e.g. "
        "'12.345' (b1.csv, line 3): a run quarantines their rows; decimal(6,3) holds every sampled value",
        "tables[0] (orders).source.schema.flag: int cannot hold 1 of 3 sampled values, e.g. 'yes' "
        "(b1.csv, line 4): a run quarantines their rows; boolean holds every sampled value",
    ]


def test_the_sources_dialect_is_honoured(tmp_path):
    """Delimiter, quote, the text for NULL, date and timestamp formats, the time zone (a local
    time that daylight saving skips does not exist), a quoted cell over two lines."""
    put(
        tmp_path,
        "orders/b1.csv",
        "id;note;day;at\n"
        "1;'a; b';31/01/2025;31/01/2025 10:00\n"
        "2;'two\nlines';-;30/03/2025 02:30\n"
        "3;x;2025-01-31;-\n",
    )
    csv = (
        '{delimiter: ";", quote: "\'", null_value: "-", date_format: dd/MM/yyyy, '
        "timestamp_format: dd/MM/yyyy HH:mm}"
    )
    table = orders("{id: int, note: string, day: date, at: timestamp}", csv).replace(
        "format: csv,", "format: csv, timezone: Europe/Amsterdam,"
    )
    assert lines(tmp_path, table)[1] == [
        "tables[0] (orders).source.schema.day: date cannot hold 1 of 2 sampled values, e.g. "
        "'2025-01-31' (b1.csv, line 5): a run quarantines their rows",
        "tables[0] (orders).source.schema.at: timestamp cannot hold 1 of 2 sampled values, e.g. "
        "'30/03/2025 02:30' (b1.csv, line 3): a run quarantines their rows",
    ]


def test_dates_in_iso_text_against_a_date_format_are_named_so(tmp_path):
    put(tmp_path, "orders/b1.csv", "id,day\n1,2025-01-31\n")
    assert lines(tmp_path, orders("{id: int, day: date}", "{date_format: dd/MM/yyyy}"))[0] == [
        "tables[0] (orders).source.schema.day: date holds none of the 1 sampled value(s), e.g. "
        "'2025-01-31' (b1.csv, line 2): a run would quarantine every row; declare date (read as ISO "
        "text, without csv.date_format), which holds them all"
    ]


def test_a_file_without_a_header_and_another_encoding(tmp_path):
    put(tmp_path, "orders/b1.csv", codecs.BOM_UTF16_LE + "1,x\n2,3\n".encode("utf-16-le"))
    table = orders("{id: int, n: int}", "{header: false, encoding: UTF-16}")
    assert lines(tmp_path, table)[1] == [
        "tables[0] (orders).source.schema.n: int cannot hold 1 of 2 sampled values, e.g. 'x' "
        "(b1.csv, line 1): a run quarantines their rows"
    ]


def test_rows_quarantined_for_another_reason_are_not_judged(tmp_path):
    """A record with the wrong number of cells, or bytes that are not valid in the encoding, is
    quarantined for that: its values are not counted."""
    put(tmp_path, "orders/b1.csv", b"id,n\n1,2\n2,x,3\n3,\xff\n")
    assert lines(tmp_path, orders("{id: int, n: int}")) == ([], [], [])


def test_a_file_the_run_would_refuse_is_a_note(tmp_path):
    put(tmp_path, "orders/b1.csv", codecs.BOM_UTF16_LE + "id\n1\n".encode("utf-16-le"))
    assert lines(tmp_path, orders("{id: int}"))[2] == [
        f"tables[0] (orders): its files could not be sampled: file:{tmp_path}/orders/b1.csv starts "
        "with a UTF-16LE byte order mark, but csv.encoding is UTF-8; declare csv.encoding: UTF-16"
    ]


def test_a_long_value_is_read_whole(tmp_path):
    put(tmp_path, "orders/b1.csv", "id,text,n\n1," + "x" * 300_000 + ",z\n")
    assert lines(tmp_path, orders("{id: int, text: string, n: int}"))[0] == [
        "tables[0] (orders).source.schema.n: int holds none of the 1 sampled value(s), e.g. 'z' "
        "(b1.csv, line 2): a run would quarantine every row; declare string, which holds them all"
    ]


def test_the_sample_is_bounded_to_the_first_rows_of_the_first_files(tmp_path):
    for name in ("b1", "b2", "b3"):
        put(tmp_path, f"orders/{name}.csv", "id\n" + "1\n" * 5)
    put(tmp_path, "orders/b1.csv", "id\n" + "1\n" * 5 + "x\n")  # its sixth row
    put(tmp_path, "orders/b4.csv", "id\nx\n")  # the fourth file
    path = pipeline(tmp_path, orders("{id: int}"))
    assert sampled_types(load_config(path).tables, path, rows=5).misfits == []
    report = sampled_types(load_config(path).tables, path, files=4, rows=6)
    assert [(m.bad[0].file.rsplit("/", 1)[-1], m.bad[0].line, m.sampled) for m in report.misfits] == [
        ("b1.csv", 7, 17)
    ]
    assert validate(path, "--sample-rows", "0")[0] == 0


def test_json_lines_and_parquet(tmp_path):
    put(tmp_path, "events/e1.json", '{"id": 1, "at": "2025-01-31T10:00:00Z"}\n{"id": 2.5, "at": 7}\n')
    (tmp_path / "sales").mkdir()
    sales = pa.table({"n": pa.array([1.0, 2.5], pa.float64()), "big": pa.array([1, 1 << 40], pa.int64())})
    pq.write_table(sales, tmp_path / "sales" / "s1.parquet")
    errors, warnings, _ = lines(
        tmp_path,
        """
        - name: events
          source: {kind: files, path: events, format: json, schema: {id: int, at: timestamp}}
          strategy: {kind: append}
        - name: sales
          source: {kind: files, path: sales, format: parquet, schema: {n: int, big: int}}
          strategy: {kind: append}
        """,
    )
    assert errors == []
    assert warnings == [
        "tables[0] (events).source.schema.id: int cannot hold 1 of 2 sampled values, e.g. '2.5' "
        "(e1.json, line 2): a run quarantines their rows; decimal(2,1) holds every sampled value",
        "tables[0] (events).source.schema.at: timestamp cannot hold 1 of 2 sampled values, e.g. '7' "
        "(e1.json, line 2): a run quarantines their rows",
        "tables[1] (sales).source.schema.n: int cannot hold 1 of 2 sampled values, e.g. '2.5' "
        "(s1.parquet, line 2): a run quarantines their rows; double holds every sampled value",
        "tables[1] (sales).source.schema.big: int cannot hold 1 of 2 sampled values, e.g. "
        "'1099511627776' (s1.parquet, line 2): a run quarantines their rows; bigint holds every "
        "sampled value",
    ]


def test_what_validate_cannot_sample_gets_a_note(tmp_path):
    code, output = validate(
        pipeline(
            tmp_path,
            """
            - name: remote
              source: {kind: files, path: "s3a://bucket/in", format: csv, schema: {id: int}}
              strategy: {kind: append}
            - name: pulled
              source:
                kind: jdbc
                url: jdbc:postgresql://db/shop
                query: "SELECT * FROM orders WHERE id > {{ watermark }}"
                watermark_column: id
                initial_watermark: "0"
              strategy: {kind: append}
            """,
        ),
        "-o",
        "json",
    )
    assert code == 0, output
    assert json.loads(output)["notes"] == [
        "tables[0] (remote): validate samples only folders on this machine, not s3a://bucket/in: its "
        "values are checked when a batch is read",
        "tables[1] (pulled): validate does not sample a jdbc source's data: its values are checked "
        "when a batch is read",
    ]


def test_sampling_never_imports_pyspark(tmp_path):
    put(tmp_path, "orders/b1.csv", "order_id,amount\n1,10.50\n")
    path = pipeline(tmp_path, orders('{order_id: int, amount: "decimal(4,2)"}'))
    code = (
        "import sys; from typer.testing import CliRunner; from lakefresh.cli import app; "
        f"r = CliRunner().invoke(app, ['validate', {str(path)!r}]); "
        "assert r.exit_code == 0, r.output; "
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
