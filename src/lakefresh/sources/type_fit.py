"""Declared types that cannot hold the data: `lakefresh validate` reads the first records of the
files a local `files` source lists (sampling.py) and judges each declared column's values as the
run's casts would (text_casts.py), without Spark.

A column whose sampled values do not all parse gets one line: the table and column, the declared
type, how many sampled values fail, one of them with its file and line, and the nearest type that
holds every sampled value. Some values failing is a warning: a run loads the others and
quarantines those rows (bad data is what the quarantine is for). Every sampled value failing is an
error: the declaration, not the data, is wrong, and a run would quarantine every row.

Only what is on this machine is sampled: a source in an object store, a JDBC query, a table or a
Synapse Link export gets a note that its values are checked when a batch is read.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakefresh.errors import LakefreshError
from lakefresh.sources.sampling import FILES, ROWS_PER_FILE, Sample, Value, sample
from lakefresh.sources.text_casts import Declared, Formats, declared, holds, holds_typed

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig
    from lakefresh.config.sources import FilesSourceConfig


@dataclass(frozen=True)
class Misfit:
    """A declared column some sampled values of which its type cannot hold."""

    where: str  # tables[0] (orders).source.schema.amount
    declared: str
    bad: list[Value]
    sampled: int
    near: str | None  # a type that holds every sampled value
    folder: str

    @property
    def every(self) -> bool:
        return len(self.bad) == self.sampled

    def line(self) -> str:
        """One line: where, the declared type, how many values fail, the first, a type that
        holds them all (for a warning, unless only `string` does: some bad values are data's)."""
        first = self.bad[0]
        name = first.file.removeprefix(self.folder.rstrip("/") + "/")
        example = f"e.g. {str(first.value)!r} ({name}, line {first.line})"
        if self.every:
            said = f"{self.declared} holds none of the {self.sampled} sampled value(s), {example}"
            hint = f"; declare {self.near}, which holds them all" if self.near else ""
            return f"{self.where}: {said}: a run would quarantine every row{hint}"
        said = f"{self.declared} cannot hold {len(self.bad)} of {self.sampled} sampled values, {example}"
        useful = self.near is not None and self.near != "string"
        hint = f"; {self.near} holds every sampled value" if useful else ""
        return f"{self.where}: {said}: a run quarantines their rows{hint}"


@dataclass
class TypeReport:
    """What sampling found: misfits (errors when every sampled value fails, else warnings), and
    notes of the tables whose data is not sampled."""

    misfits: list[Misfit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [m.line() for m in self.misfits if m.every]

    @property
    def warnings(self) -> list[str]:
        return [m.line() for m in self.misfits if not m.every]


def misfits(config: FilesSourceConfig, found: Sample, where: str, folder: str) -> list[Misfit]:
    """The declared columns of `config` whose sampled values its types do not all hold."""
    formats = Formats(config.csv.date_format, config.csv.timestamp_format, config.timezone)
    out = []
    for column, values in found.values.items():
        type_ = declared((config.schema_ or {})[column])
        file_type = found.file_types.get(column, "string")
        verdicts = [_judge(type_, v.value, file_type, formats) for v in values]
        if any(verdict is None for verdict in verdicts):
            continue  # a pattern or type this sample does not judge
        bad = [v for v, ok in zip(values, verdicts, strict=True) if not ok]
        if bad:
            near = _near(type_, [v.value for v in values], file_type, formats)
            path = f"{where}.source.schema.{column}"
            out.append(Misfit(path, type_.name, bad, len(values), near, folder))
    return out


def _judge(type_: Declared, value: Any, file_type: str, formats: Formats) -> bool | None:
    if file_type == "string":
        return holds(type_, value, formats)
    return holds_typed(type_, value, file_type)


def _near(type_: Declared, values: list[Any], file_type: str, formats: Formats) -> str | None:
    """The first type, from the narrowest, that holds every value; for a typed column (Parquet)
    the type the file has."""
    if file_type != "string":
        return None if file_type == "other" else file_type
    if type_.name in ("date", "timestamp") and (formats.date_format or formats.timestamp_format):
        plain = Formats(timezone=formats.timezone)
        if all(holds(type_, v, plain) for v in values):
            return f"{type_.name} (read as ISO text, without csv.{type_.name}_format)"
    candidates = ["int", "bigint", _decimal_for(type_, values), "double", "boolean", "date", "timestamp"]
    for candidate in [c for c in candidates if c is not None]:
        if all(holds(declared(candidate), v, formats) for v in values):
            return candidate
    return "string"


def _decimal_for(type_: Declared, values: list[str]) -> str | None:
    """decimal(p,s) with the digits the values are written with (and at least the declared
    decimal's), or None when they are not all plain numbers or need more than 38 digits."""
    whole, scale = type_.precision - type_.scale, type_.scale
    for value in values:
        try:
            digits = Decimal(value.strip()).as_tuple()
        except InvalidOperation:
            return None
        if not isinstance(digits.exponent, int):
            return None
        scale = max(scale, -digits.exponent)
        whole = max(whole, len(digits.digits) + digits.exponent)
    if whole + scale > 38 or whole + scale == 0:
        return None
    return f"decimal({whole + scale},{scale})"


def sampled_types(
    tables: list[TableConfig], pipeline_file: Path, files: int = FILES, rows: int = ROWS_PER_FILE
) -> TypeReport:
    """The declared types of each table with a local `files` source against the first `rows`
    records of its first `files` files, in the order a run takes them."""
    from lakefresh.config.checks import table_positions

    report = TypeReport()
    base = str(pipeline_file.resolve().parent)
    for position, table, parent in table_positions(tables):
        where = f"tables[{position}] ({table.name})"
        source = table.source
        if parent is not None:
            continue
        if source.kind != "files":
            report.notes.append(
                f"{where}: validate does not sample a {source.kind} source's data: its values are "
                "checked when a batch is read"
            )
        elif source.schema_:  # without one, no type is declared (unknown_columns says so)
            _sample_table(source, where, base, (files, rows), report)
    return report


def _sample_table(
    config: FilesSourceConfig, where: str, base: str, bounds: tuple[int, int], report: TypeReport
) -> None:
    path = config.path
    if path.startswith("file:"):  # file:/a, file:///a
        path = "/" + path.removeprefix("file:").lstrip("/")
    if "://" in path:
        report.notes.append(
            f"{where}: validate samples only folders on this machine, not {config.path}: its "
            "values are checked when a batch is read"
        )
        return
    folder = os.path.abspath(path if path.startswith("/") else f"{base}/{path}")
    try:
        paths = pending_files(config, folder, bounds[0])
        found = sample(config, paths, bounds[1])
    except (LakefreshError, OSError, ValueError, csv.Error) as exc:  # the run says it at its batch
        report.notes.append(f"{where}: its files could not be sampled: {exc}")
        return
    report.misfits += misfits(config, found, where, f"file:{folder}")


def pending_files(config: FilesSourceConfig, folder: str, files: int) -> list[str]:
    """The first `files` files of the batches the folder holds, in the run's order, up to the
    first batch that waits (none when the folder does not exist: local_problems says so)."""
    from lakefresh.lakehouse.storage import ArrowStorage
    from lakefresh.sources.base import ready
    from lakefresh.sources.file_listing import Listing

    if not os.path.isdir(folder):
        return []
    taken, _ = ready(Listing(config, ArrowStorage(), folder).batches(), set())
    return [path for ref in taken for path in ref.files][:files]
