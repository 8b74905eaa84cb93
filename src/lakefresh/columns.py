"""The names of the columns lakefresh adds, in one place. All start with `_lf_`.

Provenance columns travel with a batch between read and stage and are never written:
`_lf_file`, `_lf_record` (ordinal of the record in its file), `_lf_line` (physical line it starts
on), `_lf_reason` (why the row is quarantined; NULL when good), `_lf_raw` (the row as read).

System columns are written to targets: `_lf_batch_id` (the batch that last wrote the row),
`_lf_hash` (change-detection hash), `_lf_updated_at` (the record's date, for `key`).

Change columns come with a table's changes (`TableBackend.changes`, the `table_changes` source):
`_lf_change_type`, `_lf_change_ordinal` (the commit's order), `_lf_commit_snapshot_id`.
"""

FILE_COLUMN = "_lf_file"
RECORD_COLUMN = "_lf_record"
SEQ_COLUMN = "_lf_group_seq"  # a row's batch in a backlog group read as one (0 = oldest; run/backlog.py)
LINE_COLUMN = "_lf_line"
REASON_COLUMN = "_lf_reason"
RAW_COLUMN = "_lf_raw"
PROVENANCE_COLUMNS = (FILE_COLUMN, RECORD_COLUMN, LINE_COLUMN, REASON_COLUMN, RAW_COLUMN)

BATCH_ID_COLUMN = "_lf_batch_id"
HASH_COLUMN = "_lf_hash"
UPDATED_AT_COLUMN = "_lf_updated_at"
STATUS_COLUMN = "_lf_status"  # in a change set only: what will happen to the row
SYSTEM_PREFIX = "_lf_"

EVENT_TIME_COLUMN = "_lf_event_time"  # a log event's time, while the event is built (changelog.py)
SCD2_SEQ_COLUMN = "_lf_seq"  # an scd2 event's sequence value (the batch's time without sequence_by)

CHANGE_TYPE_COLUMN = "_lf_change_type"  # INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER
CHANGE_ORDINAL_COLUMN = "_lf_change_ordinal"
# the version a change was committed in; its name is a column of users' tables, so it stays
CHANGE_SNAPSHOT_COLUMN = "_lf_commit_snapshot_id"
CHANGE_TIME_COLUMN = "_lf_commit_timestamp"  # when that version was committed

# Left out of a row's contents (lakehouse/functions.py's `contents`, which breaks the last tie
# between a key's rows): provenance; what is the same for the whole batch, or is its time when no
# column gives one (not the same on a rerun); what is the same for a commit's rows of a change
# feed, whose order comes first. The date and event time order the rows before the contents do.
NOT_CONTENTS = (
    *PROVENANCE_COLUMNS,
    BATCH_ID_COLUMN,
    UPDATED_AT_COLUMN,
    EVENT_TIME_COLUMN,
    SCD2_SEQ_COLUMN,
    SEQ_COLUMN,
    CHANGE_ORDINAL_COLUMN,
    CHANGE_SNAPSHOT_COLUMN,
    CHANGE_TIME_COLUMN,
)
