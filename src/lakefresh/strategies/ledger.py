"""Strategy `ledger` (Open Data Fabric's ledger merge): append-only with a primary key.

A row whose key the ledger already holds is not appended again, even when its other columns
differ: a ledger records what happened, and a fact once recorded is not restated. Status codes:

| code | meaning                                         | target    |
| ---- | ----------------------------------------------- | --------- |
| N    | a key the ledger does not hold yet              | appended  |
| K    | a key the ledger already holds (values ignored) | untouched |

Several rows with one key in a batch: the one with the earliest `event_time` is kept; on equal
event times (or without an event time column), the first by file name, then by record in the file.
The others count as `duplicates`. NULL keys and NULL event times go to quarantine (in a
change log, see below).

With `output: change_log` the ledger is an event log (strategies/changelog.py): every appended
row is a `+A` event, and a NULL date or timestamp event time takes the batch's time instead of
going to quarantine (with `null_event_times: keep`, any NULL event time is stored as NULL). A
batch's events are ordered, and take their offsets, by event time (a NULL first), then by
arrival (file, then record), as Open Data Fabric's ledger writes them; `log_order: arrival`
orders them by arrival alone. Either way the offsets continue the log's without a gap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.columns import BATCH_ID_COLUMN, FILE_COLUMN, RECORD_COLUMN
from lakefresh.config.strategies import LedgerStrategyConfig
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    broadcast_if_small,
    count_by,
    data_columns,
    null_key_problems,
    ordering_problems,
    require_columns,
)
from lakefresh.strategies.changelog import (
    EVENT_TIME,
    OP,
    arrival_order,
    as_log,
    check_names,
    event_time_of,
    event_time_problems,
)
from lakefresh.strategies.materialize import materialize
from lakefresh.strategies.ordering import first_row_first

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class LedgerStrategy:
    kind = "ledger"
    config_type = LedgerStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {"N": "appended", "K": "key already in the ledger (ignored)"}
    range_type = None

    def __init__(self, config: LedgerStrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return list(self.config.keys)

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        if self.config.writes_change_log():
            return [
                *null_key_problems(df, self.config.keys),
                *event_time_problems(df, self.config),
            ]
        return [
            *null_key_problems(df, self.config.keys, self.config.event_time, "event time"),
            *ordering_problems(df, self.config.event_time, "event time", text=""),  # text sorts as text
        ]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        """Each key's first row of the batch (`_firsts`), told whether the ledger holds its key
        (`_against_ledger`), staged with its code (`_staged`), and the new ones appended (as
        the log's events, with `output: change_log`)."""
        from pyspark.sql import functions as F

        cfg = self.config
        require_columns(batch, list(cfg.keys), "key column(s)")
        log = cfg.writes_change_log()
        if log:
            check_names(cfg, data_columns(batch), cfg.event_time)
        batch, firsts = self._firsts(ctx, batch)
        columns = data_columns(batch)
        total = ctx.rows_of(batch)
        staged = self._staged(ctx, self._against_ledger(ctx, firsts, total), columns)
        counts = count_by(staged, "_lf_code")
        appended = counts.get("N", 0)
        rows = staged.filter(F.col("_lf_code") == "N").drop("_lf_code")
        if log:
            events = rows.withColumn(OP, F.lit("+A"))
            rows = materialize(as_log(events, cfg, ctx, self._log_order(events), columns).drop(OP))
        return ChangeSet(
            rows=rows,
            counts={"N": appended, "K": counts.get("K", 0)},
            record_count=total,
            duplicates=total - sum(counts.values()),
            expected_delta=appended,
            written=appended,
            superseded={},
        )

    def _firsts(self, ctx: StageContext, batch: DataFrame) -> tuple[DataFrame, DataFrame]:
        """The batch (in a change log, with the log's event time: a NULL date or timestamp is the
        batch's), and each key's first row of it: the earliest event time, then by arrival."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        cfg = self.config
        leading = []
        if cfg.event_time:
            require_columns(batch, [cfg.event_time], "event_time")
            when = F.col(quote(cfg.event_time))
            if cfg.writes_change_log():  # the log's event time: a NULL date or timestamp is the batch's
                batch_time = utc_timestamp(ctx.batch_time).cast("timestamp")
                batch = batch.withColumn(EVENT_TIME, event_time_of(batch, cfg, batch_time))
                when = F.col(EVENT_TIME)
            leading = [when.asc()]
        first = Window.partitionBy(*[quote(k) for k in cfg.keys]).orderBy(
            *first_row_first(batch, *leading, nulls_first=True)
        )
        ranked = batch.withColumn("_lf_rank", F.row_number().over(first))
        return batch, ranked.filter(F.col("_lf_rank") == 1)

    def _against_ledger(self, ctx: StageContext, firsts: DataFrame, total: int) -> DataFrame:
        """The first rows with `_lf_seen`: true when the ledger already holds their key."""
        from pyspark.sql import functions as F

        keys = list(self.config.keys)
        if not ctx.target_exists:
            return firsts.withColumn("_lf_seen", F.lit(None).cast("boolean"))
        batch_keys = broadcast_if_small(ctx, firsts.select(*[quote(k) for k in keys]), total)
        seen = (
            ctx.target()
            .select(*[F.col(quote(k)) for k in keys])
            .join(batch_keys, on=keys, how="left_semi")
            .distinct()
            .withColumn("_lf_seen", F.lit(True))
        )
        return firsts.join(seen, on=keys, how="left")

    def _staged(self, ctx: StageContext, firsts: DataFrame, columns: list[str]) -> DataFrame:
        """The first rows in the ledger's shape (a change log's: with their arrival and event
        time), the batch id and their code (N, K), materialized."""
        from pyspark.sql import functions as F

        cfg = self.config
        log = cfg.writes_change_log()
        # the log's event time, computed by `_firsts` (NULLs filled), or the batch's time
        when_logged = F.col(EVENT_TIME) if cfg.event_time else utc_timestamp(ctx.batch_time).cast("timestamp")
        log_time = [when_logged.alias(EVENT_TIME)] if log else []
        return materialize(
            firsts.select(
                *[F.col(quote(c)) for c in columns],
                *([F.col(FILE_COLUMN), F.col(RECORD_COLUMN), *log_time] if log else []),
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
                F.when(F.col("_lf_seen"), F.lit("K")).otherwise(F.lit("N")).alias("_lf_code"),
            )
        )

    def _log_order(self, events: DataFrame) -> list[Column]:
        """The order of a batch's new events, which their offsets follow: by event time (a NULL
        first), then by arrival; or, with `log_order: arrival`, by arrival alone."""
        from pyspark.sql import functions as F

        if self.config.event_time and self.config.log_order == "event_time":
            return first_row_first(events, F.col(EVENT_TIME).asc_nulls_first(), nulls_first=True)
        return arrival_order(events)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
