"""The `scd2` strategy (see the package's docstring for the steps a batch goes through)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from lakefresh.columns import BATCH_ID_COLUMN, FILE_COLUMN, HASH_COLUMN, RECORD_COLUMN, STATUS_COLUMN
from lakefresh.config.strategies import Scd2StrategyConfig
from lakefresh.errors import SchemaError
from lakefresh.lakehouse.backend import MergeClauses
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    absent_from_snapshot,
    appends,
    broadcast_if_small,
    data_columns,
    delete_flag,
    hashdiff,
    is_temporal,
    null_key_problems,
    ordering_problems,
    require_columns,
)
from lakefresh.strategies.materialize import materialize, materialize_with_counts
from lakefresh.strategies.scd2.events import DEL, SEEN, SEQ, SRC, decode, encode, stored_as_text
from lakefresh.strategies.scd2.fast import (
    FAST_CODE,
    KEPT,
    FastChanges,
    fast_changes,
    fast_path_enabled,
    together,
)
from lakefresh.strategies.scd2.history import Shape, recompute
from lakefresh.strategies.scd2.implied import at_next_snapshot, derives, next_snapshot_time, witness
from lakefresh.strategies.scd2.late import without_late_rows
from lakefresh.strategies.scd2.resent import left_out
from lakefresh.strategies.scd2.surrogate import follow_versions
from lakefresh.strategies.surrogate import largest_key, with_surrogate_key

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType


@dataclass
class _Touched:
    """A batch's events against the stored versions of the keys it touches (steps 1-2)."""

    new: DataFrame  # the batch's events, with the deletes of retired or absent keys
    stored: DataFrame | None  # the touched keys' stored versions, materialized; None: no target
    data: list[str]  # the stored versions' data columns
    as_text: bool  # whether the target keeps `_lf_events` as text
    late: int = 0  # late rows left out (late_rows other than apply)


class Scd2Strategy:
    kind = "scd2"
    config_type = Scd2StrategyConfig
    status_codes: ClassVar[dict[str, str]] = {
        "N": "opens a key (first version, or after a delete)",
        "C": "tracked change: opens a version",
        "T": "untracked change: version updated in place (untracked: update)",
        "U": "nothing changed",
        "D": "delete that closed a version",
        "L": "late: slotted into history",
        "O": "at or before the key's latest event: ignored (late_rows: ignore)",
    }
    range_type = None

    def __init__(self, config: Scd2StrategyConfig) -> None:
        if config.row_hash:  # the row's hash is its key from here on
            config = config.model_copy(update={"keys": [config.row_hash]})
        self.config = config

    def unique_keys(self) -> list[str]:
        return [*self.config.keys, self.config.valid_from_column]

    def system_columns(self) -> list[str]:
        cfg = self.config
        out = [cfg.valid_from_column, cfg.valid_to_column, cfg.is_current_column]
        out += [cfg.soft_delete_column] if cfg.soft_delete_column else []
        out += [cfg.valid_from_copy] if cfg.valid_from_copy else []
        sk = cfg.surrogate_key
        return out + ([sk.column, sk.inferred_column] if sk else [])

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        problems = null_key_problems(df, self.config.keys, self.config.sequence_by, "sequence_by")
        return problems + ordering_problems(df, self.config.sequence_by, "sequence_by", text="comma")

    def tracked(self, columns: list[str]) -> list[str]:
        cfg = self.config
        if cfg.change_detection == "sequence":  # every move of the sequence is a version
            return [c for c in [cfg.sequence_by] if c in columns]
        if cfg.track is not None:
            return [c for c in cfg.track if c in columns]
        skip = {*cfg.keys, *cfg.track_except, cfg.sequence_by, cfg.delete.column if cfg.delete else None}
        return [c for c in columns if c not in skip]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        """The batch's change set, in named phases: the batch as events (`_prepared`), against
        the stored versions of the keys it touches (`_touched`, steps 1-2), the keys the fast
        path takes written directly (`_fast_path`), the other keys' history recomputed and one
        change set made of both (`_change`, steps 3-5), then its counts (`_counted`)."""
        cfg = self.config
        left_out(cfg, ctx)  # resent_rows: skip takes batches in time order
        batch, columns, new = self._prepared(ctx, batch)
        total = ctx.rows_of(batch)
        target = ctx.target() if ctx.target_exists else None
        touched = self._touched(ctx, batch, target, new, total)
        all_columns = columns + [c for c in touched.data if c not in columns]
        values = [c for c in all_columns if c not in cfg.keys]
        shape = Shape(
            cfg, all_columns, self.tracked(all_columns), self._data_hash(values), first_load=target is None
        )
        fast, fused = self._fast_path(ctx, shape, touched)
        change, coded = self._change(ctx, shape, touched, fast, fused, total)
        if derives(cfg) and touched.stored is not None:  # a batch that changed nothing keeps its time
            change = witness(cfg, ctx.batch_time, touched.new, touched.stored, change, touched.as_text)
        return self._counted(change, fast, coded, touched.late, total)

    def _prepared(self, ctx: StageContext, batch: DataFrame) -> tuple[DataFrame, list[str], DataFrame]:
        """The batch (with `row_hash`), its data columns and its rows as events; a batch without
        the key or sequence columns, or whose sequence cannot open versions at 1970-01-01 when
        `first_valid_from` asks for it, stops here."""
        cfg = self.config
        if cfg.row_hash:
            batch = self._with_row_hash(batch)
        require_columns(batch, list(cfg.keys), "key column(s)")
        if cfg.sequence_by:
            require_columns(batch, [cfg.sequence_by], "sequence_by")
        system = set(self.system_columns())
        columns = [c for c in data_columns(batch) if c not in system and c not in cfg.drop_columns]
        new = self._batch_events(ctx, batch, columns)
        if cfg.first_valid_from != "sequence" and not is_temporal(new.schema[SEQ].dataType):
            raise SchemaError(
                f"first_valid_from: {cfg.first_valid_from} opens versions at 1970-01-01: "
                f"sequence_by {cfg.sequence_by!r} must be a date or timestamp, "
                f"not {new.schema[SEQ].dataType.simpleString()}"
            )
        return batch, columns, new

    def _touched(
        self, ctx: StageContext, batch: DataFrame, target: DataFrame | None, new: DataFrame, total: int
    ) -> _Touched:
        """1. The touched keys (with full snapshots, the retired ones too, their deletes added to
        the events); 2. their stored versions (back as events in `_change`), the deletes a newer
        snapshot applied before implies, and the late rows left out unless `late_rows: apply`."""
        cfg = self.config
        as_text = self._events_as_text(None if target is None else target.schema)
        if target is None:
            return _Touched(new, None, [], as_text)
        keys = list(cfg.keys)
        touched_keys = batch.select(*[quote(k) for k in keys]).distinct()
        if cfg.full_snapshots:
            absent, retired = self._retirements(ctx, batch, target)
            new = new.unionByName(retired, allowMissingColumns=True)
            touched_keys = touched_keys.unionByName(absent).distinct()
        stored = self._stored_versions(ctx, target, touched_keys, total, as_text)
        system = set(self.system_columns())
        stored_data = [c for c in stored.columns if c not in system and not c.startswith("_lf_")]
        if self._snapshot_times_ordered():
            later = self._at_next_snapshot(ctx, batch, new, target, stored, stored_data, as_text)
            new = new.unionByName(later, allowMissingColumns=True)
        late = 0
        if cfg.late_rows != "apply":
            new, late = without_late_rows(cfg, ctx, new, stored)
        return _Touched(new, stored, stored_data, as_text, late)

    def _fast_path(
        self, ctx: StageContext, shape: Shape, touched: _Touched
    ) -> tuple[FastChanges | None, ChangeSet | None]:
        """Keys with one batch event newer than all they hold (on a first load: one row) are
        written without recomputing (fast.py); the other keys go on to steps 2-5. Without
        surrogate keys (numbered over all of a change set's new versions at once), the fast
        path's rows are a change set of their own (the second value), counted by the pass that
        materializes it: one pass, not two."""
        from pyspark.sql import functions as F

        cfg = self.config
        if not (fast_path_enabled(ctx) and cfg.first_valid_from == "sequence" and cfg.untracked == "update"):
            return None, None
        keys, new, stored = shape.keys, touched.new, touched.stored
        with_stored = new if stored is None else self._with_rows_back(new, stored, touched.data)
        candidates = new
        if cfg.deletes == "new_record":  # a deletion version is the recomputation's to make
            deleting = new.filter(F.col(DEL)).select(*[quote(k) for k in keys])
            candidates = new.join(deleting, on=keys, how="left_anti")
        types, alone = with_stored.schema, cfg.surrogate_key is not None  # materialized alone
        fast = fast_changes(
            cfg, candidates, stored, types, shape.values, shape.tracked, shape.data_hash, alone
        )
        if fast is None or fast.counts is not None:
            return fast, None
        fused, found = self._change_set(ctx, shape, fast.rows, stored, touched.as_text, fast_codes=True)
        fast.counts, fast.batch_rows = {c: n for c, n in found.items() if n}, sum(found.values())
        # fresh attributes: a checkpoint keeps its input's, which a join with it rejects
        fast.keys = fused.rows.select(*[F.col(quote(k)).alias(k) for k in keys]).distinct()
        return fast, fused

    def _change(
        self,
        ctx: StageContext,
        shape: Shape,
        touched: _Touched,
        fast: FastChanges | None,
        fused: ChangeSet | None,
        total: int,
    ) -> tuple[ChangeSet, list[tuple[int, str, int]]]:
        """The change set, and the recomputed batch rows' counts by (source, status code): the
        fast path's (`fast`; `fused`: its own change set) alone when it wrote the whole batch and
        no key was retired, else the recomputation of the keys it did not take (steps 3-5) with
        the fast path's rows."""
        retirements = self.config.full_snapshots and ctx.target_exists
        if fast is not None and fast.batch_rows == total and not retirements:
            if fused is None:
                fused = self._change_set(ctx, shape, fast.rows, touched.stored, touched.as_text)[0]
            return fused, []
        new, stored = touched.new, touched.stored
        general_stored = stored
        if fast is not None and fast.batch_rows:
            assert fast.keys is not None
            new = new.join(fast.keys, on=shape.keys, how="left_anti")
            if stored is not None:
                general_stored = stored.join(fast.keys, on=shape.keys, how="left_anti")
        events = new if general_stored is None else self._with_rows_back(new, general_stored, touched.data)
        diff, coded = recompute(shape, events, general_stored)  # 3-5
        if fast is not None and fused is None:
            diff = diff.unionByName(fast.rows)
        change = self._change_set(ctx, shape, diff, stored, touched.as_text)[0]
        if fused is not None and fast is not None and fast.batch_rows:
            change = together(fused, change)
        return change, coded

    @staticmethod
    def _counted(
        change: ChangeSet,
        fast: FastChanges | None,
        coded: list[tuple[int, str, int]],
        late: int,
        total: int,
    ) -> ChangeSet:
        """The change set with the batch's counts: the fast path's and the recomputation's
        status codes, the late rows left out (O), and the duplicates: the batch rows that lost
        to a later row of theirs on the same key and sequence value."""
        counts: dict[str, int] = dict(fast.counts or {}) if fast is not None else {}
        for _, code, n in coded:
            counts[code] = counts.get(code, 0) + n
        if late:
            counts["O"] = late
        handled = sum(n for source, _, n in coded if source == 1) + (fast.batch_rows if fast else 0)
        change.counts, change.record_count, change.duplicates = counts, total, total - handled - late
        return change

    def _with_row_hash(self, batch: DataFrame) -> DataFrame:
        """The batch with `row_hash`: the hex of the hash of its stored columns (names sorted,
        NULLs left out), which identifies each row."""
        from pyspark.sql import functions as F

        cfg = self.config
        own = {*self.system_columns(), *cfg.drop_columns, cfg.row_hash}
        hashed = [c for c in data_columns(batch) if c not in own]
        return batch.withColumn(str(cfg.row_hash), F.hex(hashdiff(hashed, batch.schema)))

    def _batch_events(self, ctx: StageContext, batch: DataFrame, columns: list[str]) -> DataFrame:
        """The batch's rows as events: their values, sequence value (`sequence_by`, else the batch
        time), whether each is a delete, and where it came from."""
        from pyspark.sql import functions as F

        cfg = self.config
        seq = (
            F.col(quote(cfg.sequence_by))
            if cfg.sequence_by
            else utc_timestamp(ctx.batch_time).cast("timestamp")
        )
        return batch.select(
            *[F.col(quote(c)) for c in columns],
            seq.alias(SEQ),
            delete_flag(cfg.delete).alias(DEL),
            F.lit(1).alias(SRC),
            F.col(FILE_COLUMN),
            F.col(RECORD_COLUMN),
        )

    def _retirements(
        self, ctx: StageContext, batch: DataFrame, target: DataFrame
    ) -> tuple[DataFrame, DataFrame]:
        """1. With full snapshots, the keys with a live current version that the batch lacks, and
        a delete event for each: at the batch time in the sequence's own type (a date sequence:
        the batch time's date); a numeric sequence retires at the batch's highest value. When
        versions are valid from batch times (`_snapshot_times_ordered`), the keys with a version
        valid at the batch time: a snapshot older than the table's latest retires what was live
        then."""
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        skeleton = cfg.surrogate_key.inferred_column if cfg.surrogate_key else None
        live = F.col(quote(cfg.is_current_column))
        if self._snapshot_times_ordered():  # the versions valid at the batch time, current or not
            at = utc_timestamp(ctx.batch_time).cast("timestamp")
            valid_to = F.col(quote(cfg.valid_to_column))
            live = (F.col(quote(cfg.valid_from_column)) <= at) & (valid_to.isNull() | (valid_to > at))
        absent = absent_from_snapshot(
            target, batch, keys, live, skeleton, cfg.snapshot_scope, (), ctx.quarantined
        )
        deletion_time = utc_timestamp(ctx.batch_time).cast("timestamp")
        if cfg.sequence_by:
            seq_type = batch.schema[cfg.sequence_by].dataType
            if is_temporal(seq_type):
                deletion_time = deletion_time.cast(seq_type)
            else:
                deletion_time = F.lit(batch.agg(F.max(quote(cfg.sequence_by))).first()[0])  # type: ignore[index]
        retired = absent.select(
            *[F.col(quote(k)) for k in keys],
            deletion_time.alias(SEQ),
            F.lit(True).alias(DEL),
            F.lit(2).alias(SRC),  # a batch event the batch did not send: never a duplicate
            F.lit(None).cast("string").alias(FILE_COLUMN),
            F.lit(None).cast("long").alias(RECORD_COLUMN),
        )
        return absent, retired

    def _snapshot_times_ordered(self) -> bool:
        """Whether a full snapshot's absences follow from the batch times: with validity from the
        batch time (no `sequence_by`) and `late_rows: apply`, every snapshot leaves an event at
        its time on every key it holds (a row) or retires (a delete), so a snapshot that arrives
        after a newer one finds out which keys the next newer one lacked. Not with
        `resent_rows: skip`, whose snapshots leave no event on the keys they re-send (with
        `derive` the versions and the snapshot times imply those events: implied.py)."""
        cfg = self.config
        return (
            cfg.full_snapshots
            and not cfg.sequence_by
            and cfg.late_rows == "apply"
            and cfg.resent_rows != "skip"
        )

    def _at_next_snapshot(
        self,
        ctx: StageContext,
        batch: DataFrame,
        new: DataFrame,
        target: DataFrame,
        stored: DataFrame,
        stored_data: list[str],
        as_text: bool,
    ) -> DataFrame:
        """A snapshot older than one already applied: its keys' events at the next newer one
        (none when it is the newest)."""
        cfg = self.config
        if not derives(cfg):
            return self._absent_from_next_snapshot(ctx, batch, target, stored, as_text)
        micros = next_snapshot_time(cfg, target, ctx.batch_time, as_text)
        if micros is None:
            return new.limit(0)
        return at_next_snapshot(cfg, new, stored, micros, stored_data)

    def _absent_from_next_snapshot(
        self, ctx: StageContext, batch: DataFrame, target: DataFrame, stored: DataFrame, as_text: bool
    ) -> DataFrame:
        """A snapshot older than one already applied: a delete at the time of the next newer
        snapshot (the earliest stored event after the batch time) for each of the batch's keys
        with no event there, which that snapshot lacked. Applied in time order, it would have
        closed the key's version, or found the key absent (the recomputation absorbs the delete)."""
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        at = utc_timestamp(ctx.batch_time).cast("timestamp")
        seq_type = target.schema[cfg.valid_from_column].dataType
        events = decode(F.col(SEEN), seq_type) if as_text else F.col(SEEN)
        # a version's events are sorted: its last tells, without reading the rest, if any is later
        last = decode(F.substring_index(F.col(SEEN), ",", -1), seq_type) if as_text else events
        later = target.filter(F.array_max(last.getField("seq")) > at)
        after = F.array_min(F.filter(events.getField("seq"), lambda seq: seq > at))
        micros = later.agg(F.min(F.unix_micros(after))).first()[0]  # type: ignore[index]
        lacking = batch.select(*[quote(k) for k in keys]).distinct()
        if micros is None:  # no newer snapshot was applied
            micros, lacking = 0, lacking.limit(0)
        next_time = F.timestamp_micros(F.lit(micros)).cast(seq_type)
        there = stored.filter(F.exists(F.col(SEEN), lambda e: e.getField("seq") == next_time))
        lacking = lacking.join(there.select(*[quote(k) for k in keys]), on=keys, how="left_anti")
        return lacking.select(
            *[F.col(quote(k)) for k in keys],
            next_time.alias(SEQ),
            F.lit(True).alias(DEL),
            F.lit(2).alias(SRC),  # a batch event the batch did not send: never a duplicate
            F.lit(None).cast("string").alias(FILE_COLUMN),
            F.lit(None).cast("long").alias(RECORD_COLUMN),
        )

    def _stored_versions(
        self, ctx: StageContext, target: DataFrame, touched: DataFrame, total: int, as_text: bool
    ) -> DataFrame:
        """2. The touched keys' stored versions, their absorbed events decoded, materialized."""
        from pyspark.sql import functions as F

        touched = broadcast_if_small(ctx, touched, total)
        rows = target.join(touched, on=list(self.config.keys), how="left_semi")
        if as_text and SEEN in target.columns:
            rows = rows.withColumn(
                SEEN, decode(F.col(SEEN), target.schema[self.config.valid_from_column].dataType)
            )
        return materialize(rows)

    def _change_set(
        self,
        ctx: StageContext,
        shape: Shape,
        diff: DataFrame,
        stored: DataFrame | None,
        as_text: bool,
        fast_codes: bool = False,
    ) -> tuple[ChangeSet, dict[str, int]]:
        """The change rows in the target's shape (surrogate keys given, events encoded),
        materialized, with the audit's prediction and the rows of earlier batches they supersede;
        with `fast_codes` (rows of the fast path, not materialized), its batch rows per code."""
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        version_columns = [
            *shape.keys,
            *shape.values,
            cfg.valid_from_column,
            cfg.valid_to_column,
            cfg.is_current_column,
            *([cfg.soft_delete_column] if cfg.soft_delete_column else []),
            HASH_COLUMN,
            SEEN,
        ]
        own: list[str] = []
        if cfg.valid_from_copy:
            diff = diff.withColumn(cfg.valid_from_copy, F.col(quote(cfg.valid_from_column)))
        if sk:
            stored_sk = stored is not None and sk.column in stored.columns
            diff = follow_versions(cfg, ctx, diff, stored if stored_sk else None)
            own = [sk.column, sk.inferred_column]
        seq_type = diff.schema[SEEN].dataType.elementType["seq"].dataType  # type: ignore[attr-defined]
        changes, ops, superseded, codes = materialize_with_counts(
            diff.select(
                *[
                    encode(F.col(SEEN), seq_type).alias(SEEN) if c == SEEN and as_text else F.col(quote(c))
                    for c in version_columns
                ],
                *[F.col(quote(c)) for c in own],
                *([F.col(quote(cfg.valid_from_copy))] if cfg.valid_from_copy else []),
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
                F.col(STATUS_COLUMN),
                F.col("_lf_their_batch"),
                *([F.col(FAST_CODE)] if fast_codes else []),
            ),
            STATUS_COLUMN,
            ("I", "U", "D"),
            "_lf_their_batch",  # (skeletons belong to no batch)
            ("U", "D"),
            also=FastChanges.code_counts() if fast_codes else None,
        )
        change = ChangeSet(
            rows=changes.drop("_lf_their_batch", FAST_CODE),
            expected_delta=ops.get("I", 0) - ops.get("D", 0),
            written=ops.get("I", 0) + ops.get("U", 0),
            superseded=superseded,
            rewrites=ops.get("U", 0) + ops.get("D", 0),
        )
        return change, codes

    def _events_as_text(self, target: StructType | None) -> bool:
        """Whether the target (its schema; None: not created yet) keeps `_lf_events` as text.
        Tables it creates do (see events.py); older ones keep their array."""
        return target is None or SEEN not in target.fieldNames() or stored_as_text(target[SEEN].dataType)

    def _data_hash(self, values: list[str]) -> list[str]:
        """The columns whose change is a change of the row: all values but `sequence_by`."""
        return [c for c in values if c != self.config.sequence_by]

    def _with_rows_back(self, new: DataFrame, stored: DataFrame, stored_data: list[str]) -> DataFrame:
        """The batch's events and every event a stored version absorbed, back at its own sequence
        value (kept in `_lf_events`): rows with the version's values, and deletes, so a late event
        splits or closes the version exactly where a computation over all events would."""
        from pyspark.sql import functions as F

        cfg = self.config
        point = F.explode(F.col(SEEN)).alias("_lf_point")
        rows_back = stored.select(*[F.col(quote(c)) for c in stored_data], point).select(
            *[
                (
                    F.col("_lf_point.seq").cast(stored.schema[c].dataType).alias(c)
                    if c == cfg.sequence_by
                    else F.col(quote(c))
                )
                for c in stored_data
            ],
            F.col("_lf_point.seq").alias(SEQ),
            F.col("_lf_point.del").alias(DEL),
            F.lit(0).alias(SRC),
        )
        return new.unionByName(rows_back, allowMissingColumns=True)

    def skeleton_rows(self, ctx: StageContext, missing: DataFrame) -> DataFrame:
        """Target-shaped skeleton rows for natural keys the table lacks: `missing` holds the key
        columns, any default values and `_lf_at`, the earliest time a fact needs the key at. A
        skeleton is a current version from `_lf_at` that absorbed no event, so the key's real
        events later replace it entirely; its first real version takes over its surrogate key."""
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        assert sk is not None
        vf = cfg.valid_from_column
        target = ctx.target().schema if ctx.target_exists else None
        at_type = missing.schema["_lf_at"].dataType
        if target is not None and vf in target.fieldNames():
            at_type = target[vf].dataType
        as_text = self._events_as_text(target)
        rows = missing.withColumn(vf, F.col("_lf_at").cast(at_type))
        start = largest_key(ctx, sk)
        rows = with_surrogate_key(rows, sk, list(cfg.keys), F.lit(None), F.lit(True), start, also=(vf,))
        events = f"array<struct<seq:{at_type.simpleString()},del:boolean>>"
        return rows.select(
            *[F.col(quote(c)) for c in missing.columns if not c.startswith("_lf_")],
            F.col(quote(vf)),
            F.lit(None).cast(at_type).alias(cfg.valid_to_column),
            F.lit(True).alias(cfg.is_current_column),
            *([F.lit(False).alias(cfg.soft_delete_column)] if cfg.soft_delete_column else []),
            F.col(quote(sk.column)),
            F.lit(True).alias(sk.inferred_column),
            F.lit(None).cast("binary").alias(HASH_COLUMN),
            (F.lit("") if as_text else F.array().cast(events)).alias(SEEN),
            F.lit(None).cast("string").alias(BATCH_ID_COLUMN),
        )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        from pyspark.sql import functions as F

        columns = [c for c in change.rows.columns if c != STATUS_COLUMN]
        changes = change.written or change.expected_delta or change.rewrites
        if not ctx.target_exists or not changes or appends(ctx, change):
            inserts = change.rows.filter(F.col(STATUS_COLUMN) == "I").select(*map(quote, columns))
            ctx.backend.append(ctx.table, inserts)
            return
        ctx.backend.merge(
            ctx.table,
            change.rows.filter(F.col(STATUS_COLUMN) != F.lit(KEPT)),  # re-sent rows write nothing
            MergeClauses(
                keys=[*self.config.keys, self.config.valid_from_column],
                update_columns=columns,
                insert_columns=columns,
                update_when=f"s.{STATUS_COLUMN} = 'U'",
                delete_when=f"s.{STATUS_COLUMN} = 'D'",
                insert_when=f"s.{STATUS_COLUMN} = 'I'",
            ),
        )
