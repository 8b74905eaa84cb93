"""One backend over two table formats: each table goes to its format's backend.

A pipeline chooses the format per catalog or per table (`format: iceberg | delta`), and the
control tables' (`catalog.control_format`). Everything above `lakehouse/` sees one
:class:`TableBackend`, so nothing there knows which format a table has. A table lakefresh makes
beside a target (a rebuild's scratch table, `<target>__rebuild`; its tombstones,
`<target>__tombstones`) has the target's format.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.backend import SCRATCH, TOMBSTONES, StagedCommit, TableBackend


class ByTable:
    """Routes every call naming a table to the backend of that table's format. Each method of
    :class:`TableBackend` whose first argument is the table is forwarded to `of(table)` by a
    forwarder made from the protocol itself (`_routed`, at import); the few that name no table
    are written here."""

    def __init__(
        self, default: TableBackend, other: TableBackend, others: set[str], namespaces: set[str] | None = None
    ) -> None:
        self.spark = default.spark
        self.default = default
        self.other = other
        self.others = frozenset(others)
        self.namespaces = frozenset(namespaces or ())  # every table of these (the control tables')

    def of(self, table: str) -> TableBackend:
        """The backend of a table (`namespace.table`)."""
        if table.removesuffix(TOMBSTONES).removesuffix(SCRATCH) in self.others:
            return self.other
        if table.split(".")[0] in self.namespaces:
            return self.other
        return self.default

    def log_table_properties(self) -> dict[str, str]:
        control = self.other if self.namespaces else self.default  # the control tables' format
        return control.log_table_properties()

    def publish(self, staged: StagedCommit) -> int:
        return self.of(staged.table).publish(staged)

    def carries_commit_properties(self, table: str | None = None) -> bool:
        if table is not None:  # a Delta table's commits carry them whatever Iceberg's runtime
            return self.of(table).carries_commit_properties(table)
        return self.default.carries_commit_properties() and self.other.carries_commit_properties()

    def broadcast_rows(self) -> int:
        return self.default.broadcast_rows()

    if TYPE_CHECKING:  # the forwarders `_routed` adds: mypy sees them as the protocol's members

        def __getattr__(self, name: str) -> Any: ...


def _protocol_methods() -> dict[str, Callable[..., Any]]:
    """TableBackend's methods, from each of the protocols it is made of."""
    found: dict[str, Callable[..., Any]] = {}
    for part in reversed(TableBackend.__mro__):
        if part.__module__ == TableBackend.__module__:
            found |= {n: m for n, m in vars(part).items() if inspect.isfunction(m) and not n.startswith("_")}
    return found


def _forwarder(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def forward(self: ByTable, table: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.of(table), name)(table, *args, **kwargs)

    return functools.update_wrapper(forward, method)  # the protocol's name, doc and signature


def _routed(router: type[ByTable]) -> None:
    """A forwarder on `router` for each protocol method it does not write itself; one whose first
    argument is not the table cannot be routed by it, and fails the import here."""
    for name, method in _protocol_methods().items():
        if name in vars(router):
            continue
        first = list(inspect.signature(method).parameters)[1:2]
        if first != ["table"]:
            raise TypeError(f"TableBackend.{name} names no table first: ByTable must route it itself")
        setattr(router, name, _forwarder(name, method))


_routed(ByTable)

# mypy proves the seam here: ByTable has every member of TableBackend, with compatible types.
_CONFORMS: type[TableBackend] = ByTable
