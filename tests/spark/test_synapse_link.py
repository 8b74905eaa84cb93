"""Source `synapse_link`: Azure Synapse Link folders (written by `lakefresh.synapse_export`, in the
real layout) merged into a keyed target: folders still being written, deletes, a schema that
changes between folders, the look-back window, and backfills that overwrite or merge."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from lakefresh.synapse_export import SynapseExport, entity_attributes
from tests.conftest import rows

F1, F2, F3, F4 = (f"2025-03-01T{h:02d}.00.00Z" for h in (10, 11, 12, 13))
ACCOUNT = entity_attributes(("name", "string"), ("credit", "decimal"), ("opened", "dateTimeOffset"))
SCHEMAS = {"account": ACCOUNT, "contact": entity_attributes(("email", "string"))}

TABLE = """
- name: account
  source: {{kind: synapse_link, path: export, entity: account, look_back_interval: {window}}}
  strategy: {{kind: key, keys: [Id], date_column: SinkModifiedOn}}
"""
COLUMNS = ["Id", "name", "credit"]


def account(id_, name, modified_hour, credit=None, version=1, **more):
    at = datetime(2025, 3, 1, modified_hour, 30)
    if credit is not None:
        more["credit"] = credit
    return {
        "Id": id_,
        "SinkCreatedOn": at,
        "SinkModifiedOn": at,
        "name": name,
        "versionnumber": version,
        **more,
    }


def deleted(id_, modified_hour):
    return {"Id": id_, "SinkModifiedOn": datetime(2025, 3, 1, modified_hour, 45), "IsDelete": True}


def test_complete_folders_are_taken_once_in_order_and_deletes_delete(ws):
    export = SynapseExport(ws.folder("export"))
    export.write_folder(
        F1,
        SCHEMAS,
        {
            "account": {
                "2025.csv": [
                    account("a", "Ann", 10, Decimal("10.50"), opened=datetime(2020, 1, 2, 3, 4, 5)),
                    account("b", "Bob", 10),
                ]
            },
            "contact": {"2025.csv": [{"Id": "x", "email": "x@example.com"}]},
        },
    )
    export.write_folder(
        F2, SCHEMAS, {"account": {"2025.csv": [account("a", "Ann B", 11, version=2), account("c", "Cy", 11)]}}
    )
    with (ws.root / "export" / F2 / "account" / "2025.csv").open("a", encoding="utf-8") as f:
        f.write('"d","3/1/2025 11:00:00 AM"\n')  # two cells of eight
    export.write_folder(
        F3, SCHEMAS, {"account": {"2025.csv": [account("e", "Eve", 12)], "1.csv": [deleted("b", 12)]}}
    )
    export.set_current(F3)  # Synapse is still writing F3
    p = ws.pipeline(TABLE.format(window="1d"))

    first = p.run()
    assert first.ok, first.tables[0].error
    assert [(b.batch_id, b.counts, b.quarantined) for b in first.batches] == [
        (F1, {"N": 2}, 0),
        (F2, {"N": 1, "C": 1}, 1),
    ]
    target = p.table("account")
    assert rows(target, [*COLUMNS, "opened", "SinkModifiedOn", "IsDelete"]) == [
        ("a", "Ann B", None, None, datetime(2025, 3, 1, 11, 30), None),
        ("b", "Bob", None, None, datetime(2025, 3, 1, 10, 30), None),
        ("c", "Cy", None, None, datetime(2025, 3, 1, 11, 30), None),
    ]
    assert rows(p.quarantine("account"), ["line", "reason"]) == [
        (3, f"wrong number of cells: {F2}/model.json gives 8 columns")
    ]
    assert p.run().batches == []  # F3 is still being written

    export.set_current(F4)
    assert [b.batch_id for b in p.run().batches] == [F3]
    assert rows(p.table("account"), COLUMNS) == [("a", "Ann B", None), ("c", "Cy", None), ("e", "Eve", None)]
    assert p.run().batches == []


def test_each_folder_is_parsed_with_its_own_model_json(ws):
    export = SynapseExport(ws.folder("export"))
    typed = entity_attributes(("name", "string"), ("credit", "decimal"), ("opened", "dateTimeOffset"))
    export.write_folder(
        F1,
        {"account": typed},
        {
            "account": {
                "2025.csv": [account("a", "Ann", 10, Decimal("10.5"), opened=datetime(2020, 1, 2, 3, 4))]
            }
        },
    )
    # the next folder drops `credit` and `opened`, and adds `city`
    moved = entity_attributes(("name", "string"), ("city", "string"))
    export.write_folder(
        F2, {"account": moved}, {"account": {"2025.csv": [account("b", "Bob", 11, city="Oslo")]}}
    )
    export.set_current(F3)
    p = ws.pipeline(TABLE.format(window="1d"))
    assert p.run().ok
    assert rows(p.table("account"), ["Id", "name", "credit", "opened", "city"]) == [
        ("a", "Ann", Decimal("10.500000000000000000"), datetime(2020, 1, 2, 3, 4), None),
        ("b", "Bob", None, None, "Oslo"),
    ]


def test_backfill_overwrites_or_merges_and_streaming_goes_on_after_it(ws):
    export = SynapseExport(ws.folder("export"))
    export.write_folder(
        F1, SCHEMAS, {"account": {"2025.csv": [account("a", "Ann", 10), account("b", "Bob", 10)]}}
    )
    export.write_folder(F2, SCHEMAS, {"account": {"2025.csv": [account("b", "Bob B", 11, version=2)]}})
    export.set_current(F3)
    p = ws.pipeline(TABLE.format(window="1h"))  # the window starts at F2: F1 is older

    refused = p.run()
    assert not refused.ok
    assert (
        f"1 folder(s) of account ({F1} .. {F1}) are older than the look-back window"
        in refused.tables[0].error
    )
    assert "lakefresh backfill" in refused.tables[0].error
    [status] = p.status(pending=True)  # reported on the table, not raised
    assert (status.pending, "older than the look-back window" in status.source_error) == (None, True)
    assert not ws.spark.catalog.tableExists(f"lf_test.{ws.namespace}.account")

    backfill = p.backfill("account")  # overwrite, from the first folder
    assert [(b.batch_id, b.counts) for b in backfill.batches] == [(f"backfill@{F1}..{F2}", {"N": 2})]
    assert rows(p.table("account"), COLUMNS) == [("a", "Ann", None), ("b", "Bob B", None)]
    assert p.backfill("account").batches == []  # the same folders again: nothing
    assert p.run().batches == []  # streaming: F1 and F2 are covered

    export.write_folder(F3, SCHEMAS, {"account": {"2025.csv": [account("c", "Cy", 12)]}})
    export.set_current(F4)
    assert [b.batch_id for b in p.run().batches] == [F3]

    merged = p.backfill("account", behavior="merge", start=datetime(2025, 3, 1, 11))
    assert [(b.batch_id, b.counts) for b in merged.batches] == [(f"backfill@{F2}..{F3}", {"U": 2})]
    assert rows(p.table("account"), COLUMNS) == [("a", "Ann", None), ("b", "Bob B", None), ("c", "Cy", None)]

    rebuilt = p.backfill("account", behavior="overwrite", start=datetime(2025, 3, 1, 11))
    assert [b.batch_id for b in rebuilt.batches] == []  # the same folders as the merge: applied
    export.write_folder(F4, SCHEMAS, {"account": {"2025.csv": [account("d", "Di", 13)]}})
    export.set_current("2025-03-01T14.00.00Z")
    rebuilt = p.backfill("account", behavior="overwrite", start=datetime(2025, 3, 1, 11))
    assert [b.batch_id for b in rebuilt.batches] == [f"backfill@{F2}..{F4}"]
    # rebuilt from F2 on: `a`, last written in F1, is gone
    assert rows(p.table("account"), COLUMNS) == [("b", "Bob B", None), ("c", "Cy", None), ("d", "Di", None)]
    assert not ws.spark.catalog.tableExists(f"lf_test.{ws.namespace}.account__rebuild")
    assert p.run().batches == []
