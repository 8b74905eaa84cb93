"""Strategy `scd2`: slowly changing dimension type 2, correct under late and bunched events.

The package: `strategy.py` (the strategy: steps 1-2, the fast path's split, the change set),
`history.py` (steps 3-5), `fast.py` (the common case without steps 2-5), `events.py` (how a
version's absorbed events are stored), `implied.py` (full snapshots' re-sent rows implied by the
snapshot times, not stored), `resent.py` (re-sent rows left out, late batches refused),
`surrogate.py` (surrogate keys that follow versions).

Every key has versions `[valid_from, valid_to)`; the open one (`valid_to` NULL) is current. A
version opens when the *tracked* columns change (all non-key columns by default, or `track` /
`track_except`; never the `sequence_by` or delete-marker columns); a change to untracked columns
only updates the version it falls in. A delete closes the open version (and sets
`soft_delete_column` on it when configured); a later row for the key opens a new one. Validity
comes from `sequence_by` (a timestamp, date or number) or else the batch time.

How a batch is applied, so that the result never depends on how events were cut into batches or
in which order the batches came:

1. The *touched* keys are those in the batch (with `full_snapshots`, also the keys with a current
   version that the batch lacks: each gets a delete at the batch time).
2. The stored versions of the touched keys are turned back into events: a row at every
   `valid_from`, and a delete at a `valid_to` that no version of the key starts at.
3. The batch's events join them. On one key and one sequence value the batch wins over what is
   stored, and inside the batch the last row (by file, then record) wins; the others count as
   `duplicates`.
4. The touched keys' histories are recomputed from all their events in sequence order (windows
   over key, sequence), exactly as if every event had arrived at once.
5. The recomputed versions are compared with the stored ones on (key, valid_from): new versions
   are inserted, changed ones (valid_to, current flag, untracked values) updated, vanished ones
   deleted, in ONE MERGE: the single atomic commit the runner stages, audits and publishes.

Steps 2-5 are skipped for the keys `fast.py` can write directly (one batch event, newer than
every stored one, over a live current version or nothing): their change rows, the same as the
recomputation's, join the others' in that MERGE.

So several changes of one key in a batch each become a version; an event older than the current
version is slotted into history and the versions around it are re-cut so intervals chain with no
gap and no overlap; a re-sent unchanged row changes nothing.

A version stores the values of its latest event, and in `_lf_events` the sequence value of every
event it absorbed (re-sent rows, the delete that closed it, deletes of the already-deleted key),
so that a late event that splits it later re-cuts it exactly where a computation over all events
would: the part after a late delete starts at the first absorbed row after it. A key that has only
ever been deleted keeps its deletes in a *tombstone* row (valid_from = valid_to, not current,
soft-deleted, NULL values), replaced by real versions when rows for the key arrive. The cost is
one entry per event (stored as text, see `events.py`): an incremental feed that re-sends
unchanged rows every day rewrites its current versions and grows each by one entry a day
(`resent_rows: record`, its default). Full snapshots (`resent_rows: derive`, their default)
store only the events that changed a version: their re-sends are implied by the versions and the
snapshot times the table holds (`implied.py`). `resent_rows: skip` stores none and refuses late
batches (`resent.py`). Untracked columns of the earlier
part of a split version keep the version's latest values (only those are stored); its
`sequence_by` column is exact. Status codes of batch rows:

| code | meaning                                                          |
| ---- | ---------------------------------------------------------------- |
| N    | opens the first version of a key, or reopens a deleted key       |
| C    | a tracked change: opens a new version                            |
| T    | only untracked columns changed: the version is updated in place  |
| U    | nothing changed: a re-sent row or delete, a delete of nothing, a  |
|      | row equal to its version but for a newer `sequence_by` (recorded) |
| D    | a delete that closed a version                                   |
| L    | late: older than the key's latest stored event; slotted in       |

Target system columns: `valid_from`, `valid_to`, `is_current` (names configurable), the optional
soft-delete flag, `_lf_hash` (hashdiff of the tracked columns) and `_lf_batch_id` (the batch that
last wrote the version).

With `surrogate_key`, every version has a key that follows it through re-cuts (see
`_surrogate_keys`), plus `is_inferred`. Skeleton rows (made by fact lookups for keys not seen yet)
are current versions that absorbed no event: they contribute nothing to the recomputation, so
the key's real events replace them, and the real version covering the skeleton's start (or the
key's first one) takes over the skeleton's surrogate key. A full snapshot does not retire them.
"""

from lakefresh.strategies.scd2.strategy import Scd2Strategy

__all__ = ["Scd2Strategy"]
