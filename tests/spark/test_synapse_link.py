"""Source `synapse_link`: Azure Synapse Link folders (written by `lakefresh.synapse_export`, in the
real layout) merged into a keyed target: folders still being written, deletes, a schema that
changes between folders, the look-back window, and backfills that overwrite or merge."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from lakefresh.synapse_export import SynapseExport, _csv_line, entity_attributes
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


GROWN = [*ACCOUNT, ("city", "string")]  # Synapse appends a new column after the last one


def test_rows_written_before_a_column_was_appended_bind_it_to_null(ws):
    """A column appended to an entity during a folder's period: the folder's model.json has it,
    rows written before it do not (one cell fewer). Those rows bind it to NULL; a row with more
    cells than the model, or fewer than the model before the append, stays malformed."""
    export = SynapseExport(ws.folder("export"))
    export.write_folder(F1, {"account": ACCOUNT}, {"account": {"2025.csv": [account("a", "Ann", 10)]}})
    export.write_folder(
        F2, {"account": GROWN}, {"account": {"2025.csv": [account("b", "Bob", 11, city="Oslo")]}}
    )
    with (ws.root / "export" / F2 / "account" / "2025.csv").open("a", encoding="utf-8") as f:
        f.write(_csv_line(account("c", "Cy, Jr", 11), ACCOUNT))  # before the append: 8 cells of 9
        f.write(_csv_line(account("d", "Di", 11, city="Rome"), GROWN).rstrip("\n") + ',"x"\n')  # 10
        f.write('"e","3/1/2025 11:00:00 AM"\n')  # 2 cells: no model ever had 2 columns
    export.set_current(F3)
    p = ws.pipeline(TABLE.format(window="1d"))

    result = p.run()
    assert result.ok, result.tables[0].error
    assert [(b.batch_id, b.counts, b.quarantined) for b in result.batches] == [
        (F1, {"N": 1}, 0),
        (F2, {"N": 2}, 2),
    ]
    assert rows(p.table("account"), ["Id", "name", "city"]) == [
        ("a", "Ann", None),
        ("b", "Bob", "Oslo"),
        ("c", "Cy, Jr", None),
    ]
    assert rows(p.quarantine("account"), ["line", "reason"]) == [
        (3, f"wrong number of cells: {F2}/model.json gives 9 columns"),
        (4, f"wrong number of cells: {F2}/model.json gives 9 columns"),
    ]


def test_a_model_json_whose_columns_do_not_line_up_with_the_data_refuses_the_folder(ws):
    """A model.json reordered against its data is seen where the types tell (here `name`, text, sits
    where the model says `versionnumber`, an integer): the folder is refused, nothing quarantined
    by the thousand. Two columns of one type swapped cannot be seen (README: Synapse Link)."""
    export = SynapseExport(ws.folder("export"))
    rows_ = [account("a", "Ann", 10), account("b", "Bob", 10)]
    export.write_folder(F1, {"account": ACCOUNT}, {"account": {"2025.csv": rows_}})
    model = ws.root / "export" / F1 / "model.json"
    good = model.read_text()
    swapped = ACCOUNT.copy()
    swapped[3], swapped[6] = swapped[6], swapped[3]  # name <-> versionnumber
    export.write_folder(F1, {"account": swapped}, {})  # only model.json changes
    export.set_current(F2)
    p = ws.pipeline(TABLE.format(window="1d"))

    refused = p.run()
    assert not refused.ok
    error = refused.tables[0].error
    assert f"{F1}/model.json does not line up with" in error, error
    assert "versionnumber (int64) holds 'Ann', 'Bob'" in error and "reordered" in error, error
    assert not ws.spark.catalog.tableExists(f"lf_test.{ws.namespace}.account")

    model.write_text(good)
    assert p.run().ok
    assert rows(p.table("account"), ["Id", "name", "versionnumber"]) == [("a", "Ann", 1), ("b", "Bob", 1)]


def test_a_folder_that_never_gets_its_model_json_holds_the_later_ones_then_is_reported(ws):
    """Synapse writes model.json last. A finished folder without one waits, and so do the folders
    after it (taking them would cover it for good); after model_grace_period the run fails naming
    it, instead of skipping its rows in silence."""
    export = SynapseExport(ws.folder("export"))
    export.write_folder(F1, SCHEMAS, {"account": {"2025.csv": [account("a", "Ann", 10)]}})
    export.write_folder(F2, SCHEMAS, {"account": {"2025.csv": [account("b", "Bob", 11)]}})
    model = ws.root / "export" / F1 / "model.json"
    kept = model.read_text()
    model.unlink()
    export.set_current(F3)  # F1 finished two hours before
    table = """
    - name: account
      source: {kind: synapse_link, path: export, entity: account, model_grace_period: %s}
      strategy: {kind: key, keys: [Id], date_column: SinkModifiedOn}
    """
    waiting = ws.pipeline(table % "3h")
    assert waiting.run().batches == []  # F1 may still get it; F2 waits behind it

    late = ws.pipeline(table % "1h", name="late.yml")
    failed = late.run()
    assert not failed.ok
    assert f"folder {F1} holds files of account but no model.json, 2:00:00 after it" in failed.tables[0].error
    assert "model_grace_period is 1:00:00" in failed.tables[0].error

    model.write_text(kept)
    assert [b.batch_id for b in late.run().batches] == [F1, F2]
    assert rows(late.table("account"), ["Id", "name"]) == [("a", "Ann"), ("b", "Bob")]
