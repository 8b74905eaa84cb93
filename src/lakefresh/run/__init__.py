"""The run: a pipeline's tables in order, each table's batches through the steps that apply them
exactly once.

The package, top down (each module imports only those below it; import-linter checks the order):
`runner.py` (the tables in order, each table's batches, the run's record), `backlog.py` (waiting
batches in groups, one commit per group), `steps.py` (one batch: read -> stage -> write -> audit
-> record -> publish), `attempt.py` (one try of one batch), `reading.py` (the read step: rows,
lookups, transform, rules, quarantine), `lookups.py`, `transform.py`, `rules.py`,
`bookkeeping.py` (settling an assessment, effective counts) and `assessment.py` (a table's lineage
against its log, read only).
"""
