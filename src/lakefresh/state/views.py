"""What the reading verbs (`status`, `history`, `quarantine`) see of the control tables: their
rows, read whole through a :class:`~lakefresh.lakehouse.table_rows.TableRows` (Spark's, or the
native reader's without a JVM), and what is computed from them here, in Python, the same way
whichever road read them. A control table that does not exist yet reads as no rows (a reader
never creates one); one of another state version raises StateError as a run would."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakefresh.state.control import check_version, is_verb
from lakefresh.state.leases import LEASES_TABLE, LeaseRow, live_leases
from lakefresh.state.published import taken_from

if TYPE_CHECKING:
    from lakefresh.lakehouse.table_rows import TableRows


class ControlView:
    """Reads the control tables of one namespace as rows."""

    def __init__(self, tables: TableRows, namespace: str) -> None:
        self.tables = tables
        self.batches = f"{namespace}.batches"
        self.quarantine = f"{namespace}.quarantine"
        self.leases_table = f"{namespace}.{LEASES_TABLE}"
        self._exists: dict[str, bool] = {}

    def _ready(self, table: str) -> bool:
        """Whether the control table exists (read once); StateError when it is of another state
        version."""
        if table not in self._exists:
            self._exists[table] = self.tables.exists(table)
            if self._exists[table] and table in (self.batches, self.quarantine):
                check_version(table, self.tables.properties(table))
        return self._exists[table]

    def _rows(self, table: str, equal: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """The rows, each map column's entries ordered by key (a map has no order of its own,
        and each road gives its entries in another)."""
        found = self.tables.rows(table, equal) if self._ready(table) else []
        return [{k: _ordered(v) for k, v in r.items()} for r in found]

    def check(self) -> None:
        """StateError when a control table has another state version than this lakefresh's."""
        self._ready(self.batches)
        self._ready(self.quarantine)

    def log(self, table: str | None = None) -> list[dict[str, Any]]:
        """The `batches` rows (of one table), in no particular order."""
        return self._rows(self.batches, None if table is None else ("table_name", table))

    def live_leases(self) -> list[LeaseRow]:
        return live_leases(self._rows(self.leases_table))

    def waiting_quarantine(self) -> dict[str, int]:
        """Per table, its quarantined rows that no replay resolved."""
        out: dict[str, int] = {}
        for r in self._rows(self.quarantine):
            if r["resolved_by"] is None:
                out[r["table_name"]] = out.get(r["table_name"], 0) + 1
        return out

    def quarantined(self, table: str | None = None, batch: str | None = None) -> list[dict[str, Any]]:
        """Quarantined rows (of one table, of one of its batches), ordered by table, batch, file,
        record (then line, reason, attempt: an order that does not depend on how they were read)."""
        found = self._rows(self.quarantine, None if table is None else ("table_name", table))
        if batch is not None:
            found = [r for r in found if r["batch_id"] == batch]
        keys = ("table_name", "batch_id", "source_file", "record", "line", "reason", "attempt")
        return sorted(found, key=lambda r: tuple(nulls_first(r[k]) for k in keys))

    def history(self, table: str) -> list[dict[str, Any]]:
        """The table's `batches` rows, oldest attempt first (by start, batch, attempt), each
        batch's effective count as it is now: the count its row holds less the rows published
        batches' `superseded` maps took from it (state/published.py)."""
        rows = self.log(table)
        taken = taken_from(r["superseded"] for r in rows if r["status"] == "published")
        out = []
        for r in rows:
            less = taken.get(r["batch_id"], 0) if r["status"] == "published" else 0
            count = r["effective_count"]
            out.append({**r, "effective_count": None if count is None else count - less})
        keys = ("started_at", "batch_id", "attempt")
        return sorted(out, key=lambda r: tuple(nulls_first(r[k]) for k in keys))

    def published(self) -> dict[str, list[dict[str, Any]]]:
        """Per table, its published and reloaded rows of source batches (a verb's commit is not
        one), in the order they were published (then by attempt)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.log():
            if r["status"] in ("published", "reloaded") and not is_verb(r["batch_id"]):
                out.setdefault(r["table_name"], []).append(r)
        for rows in out.values():
            rows.sort(key=lambda r: (nulls_first(r["published_at"]), r["attempt"]))
        return out


def _ordered(value: Any) -> Any:
    """A map's entries ordered by key; any other value as it is."""
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def nulls_first(value: Any) -> tuple[bool, Any]:
    """A sort key that puts None first, as SQL's ascending order does."""
    return (value is not None, value if value is not None else 0)
