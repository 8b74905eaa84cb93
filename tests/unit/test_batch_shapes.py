"""The columns a waiting batch brings, told without Spark for `plan` (sources/batch_shapes.py):
from a CSV header line, JSON Lines keys, a Parquet footer; a transform's columns when its SQL is a
plain SELECT of `batch` naming its columns. Types are known where they are declared or stored,
and left to Spark's inference otherwise. (tests/spark/test_native_verbs.py and test_plan.py
compare the plans both roads make.)"""

from __future__ import annotations

from typing import Any

import pytest

from lakefresh.columns import PROVENANCE_COLUMNS
from lakefresh.config.models import PipelineConfig, TableConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.native import NativeTables, NotNative
from lakefresh.sources.batch_shapes import Shape, transformed_columns
from lakefresh.sources.native_listing import NativeListing
from lakefresh.verbs.plan_reads import added


def shapes(tmp_path: Any, source: dict[str, Any], files: dict[str, str], transform: str | None = None) -> Any:
    """Each batch's shape, the batches listed as a run lists them."""
    for name, text in files.items():
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / name).write_text(text, encoding="utf-8")
    table: dict[str, Any] = {"name": "t", "source": {"path": "in", **source}, "strategy": {"kind": "append"}}
    if transform:
        table["transform"] = {"sql": transform}
    config = PipelineConfig.model_validate(
        {"catalog": {"name": "c", "warehouse": str(tmp_path / "warehouse")}, "tables": [table]}
    )
    native = NativeListing(config, str(tmp_path), NativeTables.of(config, str(tmp_path / "warehouse")))
    return [native.shape(config.tables[0], ref) for ref in native.batches(config.tables[0])]


def test_a_csv_batch_reads_as_its_header_names_it_typed_where_declared(tmp_path):
    found = shapes(
        tmp_path,
        {"kind": "files", "format": "csv", "schema": {"id": "int", "name": "string"}},
        {"b1.csv": "id,name\n1,a\n", "b2.csv": "name,id,email\n2,b,b@x\n"},
    )
    assert found == [
        Shape(("id", "name"), ("int", "string")),
        Shape(("name", "id", "email"), ("string", "int", None)),  # email: Spark infers its type
    ]
    assert [s.inferred for s in found] == [False, True]


def test_a_csv_header_that_lacks_a_declared_column_is_the_error_the_run_gives(tmp_path):
    with pytest.raises(SourceError, match=r"lacks declared column\(s\) 'name' \(did you mean 'nmae'\?\)"):
        shapes(
            tmp_path,
            {"kind": "files", "format": "csv", "schema": {"id": "int", "name": "string"}},
            {"b1.csv": "id,nmae\n1,a\n"},
        )


def test_json_lines_read_as_every_records_keys_sorted_by_name(tmp_path):
    found = shapes(
        tmp_path,
        {"kind": "files", "format": "json", "schema": {"sku": "string"}},
        {"p1.json": '{"sku": "A", "title": "Kettle"}\nnot json\n\n{"sku": "B", "colour": "red"}\n'},
    )
    assert found == [Shape(("colour", "sku", "title"), (None, "string", None))]


def test_json_keys_that_differ_only_in_case_go_through_spark(tmp_path):
    with pytest.raises(NotNative, match="differ only in case"):
        shapes(tmp_path, {"kind": "files", "format": "json"}, {"p1.json": '{"Id": 1}\n{"id": 2}\n'})


def test_a_parquet_batch_reads_as_its_footer_says(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "in").mkdir()
    data = pa.table({"id": pa.array([1], pa.int64()), "amount": pa.array([1.5], pa.float64())})
    pq.write_table(data, tmp_path / "in" / "b1.parquet")
    found = shapes(
        tmp_path, {"kind": "files", "format": "parquet", "schema": {"amount": "decimal(10,2)"}}, {}
    )
    assert found == [Shape(("id", "amount"), ("bigint", "decimal(10,2)"))]


@pytest.mark.parametrize(
    ("sql", "made"),
    [
        ("SELECT *, _lf_file AS file FROM batch", ["id", "Name", *PROVENANCE_COLUMNS, "file"]),
        (
            "SELECT b.*, upper(Name) AS Upper FROM batch AS b WHERE id > 1",
            ["id", "Name", *PROVENANCE_COLUMNS, "Upper"],
        ),
        ("SELECT id, Name FROM batch", ["id", "Name"]),
        ("SELECT ID, b.name FROM batch b", ["ID", "name"]),  # Spark's names: the SELECT's spelling
        ("SELECT id, upper(Name) FROM batch", None),  # Spark names that column
        ("SELECT *, upper(nmae) AS n FROM batch", None),  # Spark fails: no such column
        ("SELECT b.id FROM batch b JOIN other o ON b.id = o.id", None),
        ("SELECT Name, count(*) AS n FROM batch GROUP BY Name", None),
    ],
)
def test_a_transform_makes_the_columns_its_plain_select_names(sql, made):
    table = TableConfig.model_validate(
        {
            "name": "t",
            "source": {"kind": "files", "path": "in", "format": "csv"},
            "strategy": {"kind": "append"},
            "transform": {"sql": sql},
        }
    )
    assert transformed_columns(table, ("id", "Name")) == made


def test_the_columns_batches_add_are_named_once_whatever_their_case():
    """Spark's names are case-insensitive: a column the target has, in any case, is no new
    column, and one that two batches spell differently is added once, as the first spells it."""
    read = [["id", "Note", "_lf_file"], ["ID", "note", "extra"]]
    assert added(["Id", "amount"], read) == ["Note", "extra"]
