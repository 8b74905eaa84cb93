"""Nested values: JSON objects and arrays in a `files` batch (JSON Lines, or JSON text in a CSV
cell), stored as the declared `struct`, `array` or `map`, or as their JSON text when undeclared.
A member that does not fit its declared type quarantines its record; it never becomes NULL.
Undeclared, a nested value keeps its JSON text."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row

from tests.conftest import rows

NESTED = """
- name: people
  source:
    kind: files
    path: in
    format: json
    schema:
      id: int
      address: "struct<city: string, zip: int>"
      tags: "array<string>"
      scores: "map<string, int>"
  strategy: {kind: key, keys: [id]}
"""


def _lines(*records: Any) -> str:
    """JSON Lines, one record per line, compact: Spark 4 keeps a nested value's text as written,
    Spark 3.5 writes it again compact, so that both read the same text."""
    return "".join(f"{r if isinstance(r, str) else json.dumps(r, separators=(',', ':'))}\n" for r in records)


def test_declared_nested_types_are_stored_typed(ws):
    ws.write(
        "in/b1.json",
        _lines(
            {"id": 1, "address": {"city": "Lyon", "zip": 69001}, "tags": ["a", "b"], "scores": {"x": 1}},
            {"id": 2, "address": {"city": "Oslo", "zip": "0150"}, "tags": [], "scores": {}},
            {"id": 3, "address": None, "tags": None},
            {"id": 4, "address": {"city": "Rome"}, "tags": ["c", None]},
        ),
    )
    p = ws.pipeline(NESTED)
    result = p.run()
    assert result.ok, result.to_dict()
    assert p.table("people").schema.simpleString() == (  # JSON's columns come in name order
        "struct<address:struct<city:string,zip:int>,id:int,scores:map<string,int>,tags:array<string>,"
        "_lf_hash:binary,_lf_updated_at:timestamp,_lf_batch_id:string>"
    )
    assert rows(p.table("people"), ["id", "address", "tags", "scores"]) == [
        (1, Row(city="Lyon", zip=69001), ["a", "b"], {"x": 1}),
        (2, Row(city="Oslo", zip=150), [], {}),
        (3, None, None, None),
        (4, Row(city="Rome", zip=None), ["c", None], None),
    ]
    assert result.batches[0].quarantined == 0


def test_a_member_that_does_not_fit_quarantines_its_record(ws):
    ws.write(
        "in/b1.json",
        _lines(
            {"id": 1, "address": {"city": "Lyon", "zip": 69001}},
            {"id": 2, "address": {"city": "Oslo", "zip": "north"}},  # not an int
            {"id": 3, "address": {"city": "Bern", "zip": 3000, "canton": "BE"}},  # a member not declared
            {"id": 4, "address": ["Paris", 75001]},  # an array where an object is declared
            {"id": 5, "tags": {"a": 1}},  # an object where an array is declared
            {"id": 6, "scores": {"x": 1, "y": "high"}},  # a map value that is not an int
            {"id": 7, "address": "Nice"},  # text where an object is declared
            '{"id":8,"address":{"city":"Graz","city":"Linz"}}',  # a key written twice
        ),
    )
    p = ws.pipeline(NESTED)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("people"), ["id", "address"]) == [(1, Row(city="Lyon", zip=69001))]
    address = "is not a valid struct<city:string,zip:int>"
    assert rows(p.quarantine("people"), ["record", "line", "reason"]) == [
        (2, 2, """address: '{"city":"Oslo","zip":"north"}' """ + address),
        (3, 3, """address: '{"city":"Bern","zip":3000,"canton":"BE"}' """ + address),
        (4, 4, """address: '["Paris",75001]' """ + address),
        (5, 5, """tags: '{"a":1}' is not a valid array<string>"""),
        (6, 6, """scores: '{"x":1,"y":"high"}' is not a valid map<string,int>"""),
        (7, 7, "address: 'Nice' " + address),
        (8, 8, """address: '{"city":"Graz","city":"Linz"}' """ + address),
    ]


def test_undeclared_nested_values_keep_their_json_text(ws):
    ws.write(
        "in/b1.json",
        _lines({"id": 1, "address": {"city": "Lyon", "zip": 69001}, "tags": ["a", 2, {"b": True}]}),
    )
    p = ws.pipeline("""
    - name: people
      source: {kind: files, path: in, format: json, schema: {id: int}}
      strategy: {kind: key, keys: [id]}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("people"), ["id", "address", "tags"]) == [
        (1, '{"city":"Lyon","zip":69001}', '["a",2,{"b":true}]')
    ]


def test_json_text_in_a_csv_cell_is_parsed_to_its_declared_type(ws):
    ws.write("in/b1.csv", 'id,tags\n1,"[1, 2, 3]"\n2,"[4, ""x""]"\n3,\n4," [5]\t"\n5,"[6] 7"\n6,"[8] [9]"\n')
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, tags: "array<int>"}}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t")) == [(1, [1, 2, 3]), (3, None), (4, [5])]
    assert rows(p.quarantine("t"), ["record", "reason"]) == [
        (2, """tags: '[4, "x"]' is not a valid array<int>"""),
        (5, "tags: '[6] 7' is not a valid array<int>"),  # text after the array
        (6, "tags: '[8] [9]' is not a valid array<int>"),  # a second value
    ]


def test_a_member_that_would_be_rounded_to_fit_quarantines_its_record(ws):
    ws.write("in/b1.json", _lines({"id": 1, "prices": {"a": 1.5}}, {"id": 2, "prices": {"a": 1.25}}))
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: json, schema: {id: int, prices: "map<string, decimal(4,1)>"}}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t"), ["id", "prices"]) == [(1, {"a": Decimal("1.5")})]
    assert rows(p.quarantine("t"), ["record", "reason"]) == [
        (2, """prices: '{"a":1.25}' is not a valid map<string,decimal(4,1)>""")
    ]


def test_a_nested_parquet_value_into_a_text_column_is_its_json_text_and_bytes_are_refused(ws, spark):
    ws.write_parquet("in/b1.parquet", [(1, '{"a":1}')], "id int, info string")
    ws.write_parquet("in/b2.parquet", [(2, (2, ["x"]))], "id int, info struct<a: int, b: array<string>>")
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: parquet}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t")) == [(1, '{"a":1}'), (2, '{"a":2,"b":["x"]}')]  # not Spark's {2, [x]}

    ws.write_parquet("in/b3.parquet", [(3, bytearray(b"\xff"))], "id int, info binary")
    result = p.run()
    assert not result.ok
    assert "column 'info' of" in result.tables[0].error
    assert "is string but the batch has binary" in result.tables[0].error


# --- property: the SQL that reads JSON text against a small reference model -----------------

TYPE = "struct<a: int, b: array<int>, c: map<string, string>>"
_INT = re.compile(r"-?[0-9]+")

leaves = st.one_of(
    st.none(),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([2**31, True, "7", " 8 ", "x", "", 1.5]),
)
texts = st.one_of(st.none(), st.text(alphabet="ab1 ", max_size=3), st.integers(-5, 5), st.booleans())
values = st.one_of(
    st.none(),
    st.sampled_from(["oops", 3, [1]]),
    st.fixed_dictionaries(
        {},
        optional={
            "a": leaves,
            "b": st.one_of(st.none(), st.lists(leaves, max_size=3), st.sampled_from([{"x": 1}, 4])),
            "c": st.one_of(
                st.none(), st.dictionaries(st.sampled_from("pqr"), texts, max_size=2), st.just([])
            ),
            "z": st.just(1),  # a member the type does not name
        },
    ),
)


def _int(value: Any) -> tuple[bool, Any]:
    if value is None:
        return True, None
    if isinstance(value, bool | float):
        return False, None
    text = value.strip() if isinstance(value, str) else str(value)
    if not _INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
        return False, None
    return True, int(text)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value).replace(" ", "")


def reference(value: Any) -> tuple[bool, Any]:
    """Whether `value` (JSON) is a valid `TYPE`, and the value it is read as."""
    if value is None:
        return True, None
    if not isinstance(value, dict) or set(value) - {"a", "b", "c"}:
        return False, None
    ok_a, a = _int(value.get("a"))
    ok_b, b = True, None
    if value.get("b") is not None:
        if not isinstance(value["b"], list):
            return False, None
        read = [_int(v) for v in value["b"]]
        ok_b, b = all(ok for ok, _ in read), [v for _, v in read]
    c = value.get("c")
    if c is not None and not isinstance(c, dict):
        return False, None
    c = None if c is None else {k: _text(v) for k, v in c.items()}
    return ok_a and ok_b, {"a": a, "b": b, "c": c}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(values, min_size=1, max_size=20))
def test_json_text_is_read_as_the_reference_model_reads_it(spark, batch):
    from pyspark.sql.types import StringType, StructField, StructType

    from lakefresh.lakehouse.session import parse_schema
    from lakefresh.sources.json_text import from_json_text

    type_ = parse_schema(f"x {TYPE}").fields[0].dataType

    def leaf(
        text: str, kind: Any
    ) -> tuple[str, None]:  # the strict casts of `cast_strictly`, for int and string
        return (f"TRY_CAST(trim({text}) AS INT)" if kind.simpleString() == "int" else text), None

    value, valid = from_json_text("j", type_, leaf)
    data = [(i, None if v is None else json.dumps(v)) for i, v in enumerate(batch)]
    schema = StructType([StructField("i", StringType()), StructField("j", StringType())])
    found = spark.createDataFrame([(str(i), j) for i, j in data], schema).selectExpr(
        "CAST(i AS INT) AS i", f"{valid} AS valid", f"{value} AS value"
    )
    for row in sorted(found.collect()):
        ok, expected = reference(batch[row.i])
        assert row.valid == ok, (batch[row.i], row.valid)
        if ok:
            got = row.value.asDict(recursive=True) if row.value is not None else None
            assert got == expected, (batch[row.i], got)
