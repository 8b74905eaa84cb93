"""One error tree for lakefresh.

Every error lakefresh raises on purpose derives from :class:`LakefreshError`. The runner retries
only what is :class:`TransientError`; everything else stops the table and is reported once::

    LakefreshError
    ├── TerminalError                 retrying the same thing gives the same failure
    │   ├── ConfigError               the pipeline file is wrong (file, field, value, valid values)
    │   │   └── ConfigChanged         a table's result-shaping settings changed since its last batch
    │   ├── SetupError                Java, jars or the Spark session cannot be made ready
    │   ├── SourceError               the source cannot be listed or read (missing folder, bad format)
    │   ├── SchemaError               a batch cannot fit the target (incompatible type change)
    │   ├── AuditError                a staged batch failed its audit; the target was not touched
    │   ├── BatchRefused              a batch with bad rows, under `bad_rows: refuse`; nothing written
    │   ├── StateError                the control tables are of another version, or disagree
    │   │   └── TakenError            another run published batches this one was applying
    │   ├── LineageError              the target's lineage lost published batches (a rollback)
    │   ├── TargetError               the target's rows break the strategy's rules (duplicate keys)
    │   └── InjectedFault             a fault injected on purpose (tests, drills)
    └── TransientError                may succeed when tried again
        ├── CommitConflictError       the target moved between staging and publishing
        ├── StoreInterrupted          the store dropped a request or asked to slow down
        └── LeaseHeld                 another run holds a table this one would write (exit 75)

`exit_code` is the command line's exit code for the error: 1, or 75 (EX_TEMPFAIL) for LeaseHeld.
"""

from __future__ import annotations


class LakefreshError(Exception):
    """Root of every error lakefresh raises on purpose."""

    transient: bool = False
    exit_code: int = 1


class TerminalError(LakefreshError):
    """Retrying the same operation gives the same failure."""


class TransientError(LakefreshError):
    """The operation may succeed when tried again."""

    transient = True


class ConfigError(TerminalError):
    """The pipeline file is invalid. Raised before Spark starts."""


class ConfigChanged(ConfigError):
    """A table's configuration changed since its last batch in a way that changes results."""


class SetupError(TerminalError):
    """Java, the Iceberg jars or the Spark session cannot be made ready."""


class SourceError(TerminalError):
    """A source cannot be listed or read."""


class SchemaError(TerminalError):
    """A batch's schema cannot be reconciled with the target's."""


class AuditError(TerminalError):
    """A staged batch failed its audit; nothing was published."""


class BatchRefused(TerminalError):
    """A batch held rows that cannot be loaded and its table refuses such batches whole."""


class StateError(TerminalError):
    """The control tables are missing, of another version, or inconsistent."""


class TakenError(StateError):
    """Another run of the table (overlapping runs) published batches this run was applying: this
    run stops before its own publish, so nothing is applied twice."""

    def __init__(self, table: str, batch_ids: list[str]) -> None:
        super().__init__(
            f"batch(es) {', '.join(batch_ids)} of {table} were published by another run of the table "
            "while this one ran: nothing was applied twice; the next run goes on from there"
        )


class LineageError(TerminalError):
    """Published batches are no longer in the target's lineage: someone rolled it back."""


class TargetError(TerminalError):
    """The target holds rows the strategy cannot work with (e.g. a key stored twice by another
    writer)."""


class InjectedFault(TerminalError):
    """A fault injected on purpose through ``LAKEFRESH_FAULTS``."""


class CommitConflictError(TransientError):
    """The target's head moved under a batch (after its change set read the target, or between
    staging and publishing); the batch is staged again."""


class StoreInterrupted(TransientError):
    """A request to the store was cut off or throttled (a dropped connection, S3's 503 Slow
    Down) before the batch's publish began: nothing of it is in the target, and it is tried
    again as a new attempt."""


class LeaseHeld(TransientError):
    """Another run (of this pipeline or another) holds the lease on a table this run would
    write; nothing was read or written. The lease ends when that run ends, or expires when it
    is no longer renewed (a killed run)."""

    exit_code = 75  # EX_TEMPFAIL: try again later

    def __init__(
        self,
        table: str,
        since: str,
        host: str,
        pid: int | None,
        pipeline: str | None,
        expires: str,
        waited: str | None = None,
    ) -> None:
        self.table = table
        where = f" ({pipeline})" if pipeline else ""
        after = f"waited {waited}; " if waited else ""
        super().__init__(
            f"another run holds {table} since {since}, started by {host}/pid {pid}{where}; it "
            f"expires at {expires} unless renewed; {after}wait for it with --wait DURATION "
            "(e.g. --wait 10m), or stop that run"
        )
