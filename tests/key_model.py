"""A small reference model of the `key` strategy's rules (src/lakefresh/strategies/key/strategy.py), for
property tests: a table with hard deletes, one batch at a time."""

from __future__ import annotations

from collections import Counter


def key_reference(batches, by_batch_time: bool = False, clauses=("update", "insert")):
    """Per batch `bNN.csv` of events (key, value, day, op: "D" a delete), key.py's status table:
    each key's winning row (the latest day, then the last row; with `by_batch_time` the batch's
    own order is the day) judged against the stored row, with `clauses` (`when_matched`,
    `when_not_matched`; a list: each batch's own). Returns the table (id, value, batch) and, per
    batch, (name, status counts, duplicates, effective count at the end), both sorted."""
    each = clauses if isinstance(clauses, list) else [clauses] * len(batches)
    state: dict[int, tuple[str, int, str]] = {}  # id -> (value, day, batch)
    per_batch = []
    for b, events in enumerate(batches):
        when_matched, when_not_matched = each[b]
        name = f"b{b:02d}.csv"
        winners: dict[int, tuple] = {}
        for r, (key, value, day, op) in enumerate(events):
            day = b if by_batch_time else day
            if key not in winners or (day, r) >= (winners[key][1], winners[key][3]):
                winners[key] = (value, day, op, r)
        counts: Counter[str] = Counter()
        for key, (value, day, op, _) in winners.items():
            stored = state.get(key)
            if stored is None:
                status = "U" if op == "D" else ("N" if when_not_matched == "insert" else "X")
            elif day < stored[1]:
                status = "O"
            elif op == "D" or when_matched == "delete":
                status = "D"
            elif value != stored[0]:
                status = "C" if when_matched == "update" else "M"
            else:
                status = "S" if day > stored[1] else "U"
            counts[status] += 1
            if status in ("N", "C"):
                state[key] = (value, day, name)
            elif status == "D":
                del state[key]
        per_batch.append((name, dict(counts), len(events) - len(winners)))
    table = sorted((key, value, batch) for key, (value, _, batch) in state.items())
    owned = Counter(batch for _, _, batch in state.values())
    return table, sorted((name, counts, dups, owned[name]) for name, counts, dups in per_batch)
