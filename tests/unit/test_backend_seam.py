"""The table-format seam: IcebergBackend, DeltaBackend and the router ByTable are TableBackends,
and SQL text is quoted in one place. No JVM.

mypy proves the conformance too (`_CONFORMS` at the end of each backend's module, and the API's
`backend` typed as TableBackend); this test says it without mypy, member by member, so a method
added to the protocol and forgotten in a backend (or given another signature) fails here.
"""

from __future__ import annotations

import inspect

import pytest

from lakefresh.lakehouse.backend import (
    StagedCommits,
    TableBackend,
    TableDefinitions,
    TableHistory,
    TableRows,
    TableUpkeep,
)
from lakefresh.lakehouse.delta import DeltaBackend
from lakefresh.lakehouse.formats import ByTable
from lakefresh.lakehouse.iceberg import IcebergBackend
from lakefresh.lakehouse.sql import (
    properties_sql,
    qualified_name,
    quote,
    sql_literal,
    standard_sql_literal,
)

PARTS = [TableDefinitions, TableHistory, StagedCommits, TableUpkeep, TableRows]
METHODS = sorted(
    name
    for part in PARTS
    for name, member in vars(part).items()
    if inspect.isfunction(member) and not name.startswith("_")
)


def test_the_protocol_declares_what_consumers_call():
    assert {"stage", "publish", "published_batches", "lineage", "changes", "live_records"} <= set(METHODS)
    assert list(TableBackend.__annotations__) == ["spark"]


def test_the_protocol_is_made_of_its_parts_each_method_in_one_of_them():
    assert [b for b in TableBackend.__bases__ if b in PARTS] == PARTS
    names = [n for part in PARTS for n, m in vars(part).items() if inspect.isfunction(m) and n[0] != "_"]
    assert len(names) == len(set(names))


def test_the_router_writes_only_what_names_no_table_and_routes_the_rest_by_its_table():
    written = {"log_table_properties", "publish", "carries_commit_properties", "broadcast_rows"}
    own = {n for n, m in vars(ByTable).items() if n in METHODS and getattr(m, "__wrapped__", None) is None}
    assert own == written

    class Format:
        def __init__(self, name: str) -> None:
            self.spark, self.name = None, name

        def exists(self, table: str) -> str:
            return f"{self.name}:{table}"

    router = ByTable(Format("iceberg"), Format("delta"), {"ns.d"}, {"ctl"})
    assert [router.exists(t) for t in ("ns.t", "ns.d", "ctl.batches")] == [
        "iceberg:ns.t",
        "delta:ns.d",
        "delta:ctl.batches",
    ]


BACKENDS = [IcebergBackend, DeltaBackend, ByTable]


def public(backend: type) -> set[str]:
    """Its public members, inherited ones too (lakehouse.merge.SqlWrites)."""
    return {n for klass in backend.__mro__[:-1] for n in vars(klass) if not n.startswith("_")}


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("name", METHODS)
def test_each_backend_has_every_protocol_method_with_the_same_signature(backend, name):
    expected = inspect.signature(getattr(TableBackend, name))
    found = getattr(backend, name, None)
    assert callable(found), f"{backend.__name__} lacks {name}"
    actual = inspect.signature(found)
    # names, kinds, defaults and (postponed, so textual) annotations, in order; `self` is typed
    # only in a base class's members, by what they need of their host (merge.SqlWritesHost)
    assert [shape(p) for p in actual.parameters.values()] == [shape(p) for p in expected.parameters.values()]
    assert actual.return_annotation == expected.return_annotation


def shape(parameter: inspect.Parameter) -> tuple[object, ...]:
    annotation = None if parameter.name == "self" else parameter.annotation
    return parameter.name, parameter.kind, parameter.default, annotation


def test_iceberg_backend_sets_the_protocol_attributes():
    session = object()
    backend = IcebergBackend(session, "cat")
    assert backend.spark is session


def test_format_only_members_stay_private():
    assert public(IcebergBackend) == set(METHODS)
    assert public(DeltaBackend) == {*METHODS, "location"}  # where a table's files are
    assert public(ByTable) == {*METHODS, "of"}  # which backend a table has


def test_identifiers_are_backticked_with_backticks_doubled():
    assert quote("a") == "`a`"
    assert quote("we`ird") == "`we``ird`"
    assert qualified_name("cat", "ns", "t`x") == "`cat`.`ns`.`t``x`"
    assert IcebergBackend(object(), "cat").qualified("ns.t") == "`cat`.`ns`.`t`"


def test_spark_sql_literals():
    assert sql_literal(None) == "NULL"
    assert sql_literal(True) == "TRUE"
    assert sql_literal(False) == "FALSE"
    assert sql_literal(42) == "42"
    assert sql_literal(0.5) == "0.5"
    assert sql_literal("it's") == "'it\\'s'"
    assert sql_literal("back\\slash") == "'back\\\\slash'"
    assert properties_sql({"a": "1", "b'": "x"}) == "'a'='1', 'b\\''='x'"


def test_standard_sql_literals_double_quotes_and_keep_backslashes():
    assert standard_sql_literal("it's \\ here") == "'it''s \\ here'"
