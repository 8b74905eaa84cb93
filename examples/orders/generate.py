"""Generate the example's input: batches of a customer feed, sales facts, daily order folders,
product lists, daily stock snapshots, hourly web traffic that is re-sent with corrections, and an
Azure Synapse Link export of CRM accounts (timestamped folders, model.json, changelog.info).

The customer feed shows every record status: inserts (N), updates (C), unchanged rows (U), the
same values with a newer date (S), an update that arrives after a newer one (O), a delete (D),
a duplicate key inside one batch, and malformed rows that go to quarantine.

Usage: python generate.py OUTPUT_FOLDER
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from lakefresh.synapse_export import SynapseExport, entity_attributes

CUSTOMER_HEADER = "customer_id,name,email,city,updated_at,is_deleted\n"

CUSTOMER_BATCHES = {
    "customers_001.csv": [
        "1,Ann Lee,ann@example.com,Oslo,2025-01-01 09:00:00,false",
        "2,Bob Ray,bob@example.com,Rome,2025-01-01 09:00:00,false",
        "3,Cat Diaz,cat@example.com,Kyiv,2025-01-01 09:00:00,false",
        "4,Dan Oy,dan@example.com,Lima,2025-01-01 09:00:00,false",
        '5,"Eve ""the"" Third",eve@example.com,"Nice, FR",2025-01-01 09:00:00,false',
    ],
    "customers_002.csv": [
        "2,Bob Ray,bob.ray@example.com,Rome,2025-01-02 10:00:00,false",  # C: new email
        "3,Cat Diaz,cat@example.com,Kyiv,2025-01-01 09:00:00,false",  # U: unchanged
        "6,Fay Wu,fay@example.com,Oslo,2025-01-02 10:00:00,false",  # N
        "7,Gus,gus@example.com",  # quarantined: too few cells
        "8,Hal Ng,hal@example.com,Bern,yesterday,false",  # quarantined: not a timestamp
    ],
    "customers_003.csv": [
        "2,Bob Ray,bob@old-domain.example,Rome,2024-12-30 08:00:00,false",  # O: older than stored
        "4,Dan Oy,dan@example.com,Cusco,2025-01-03 11:00:00,false",  # C: moved
        "5,Eve,eve@example.com,Nice,2025-01-03 11:00:00,true",  # D: deleted in the source
    ],
    "customers_004.csv": [
        "1,Ann Lee,ann@example.com,Oslo,2025-01-04 12:00:00,false",  # S: same values, newer date
        "9,Ivy Sun,ivy@example.com,Turin,2025-01-04 12:00:00,false",  # duplicate key in batch:
        "9,Ivy Sun,ivy.sun@example.com,Turin,2025-01-04 12:30:00,false",  # the later one wins
    ],
}

# Sales facts. Customer 4 moved to Cusco on 2025-01-03: the two sales of customer 4 get the
# surrogate keys of different versions. Customer 42 is not in the feed yet (an early-arriving
# fact): a skeleton row is made for it, upgraded in place when its record arrives.
SALES_BATCHES = {
    "sales_001.csv": [
        (1000, 4, 20.0, "2025-01-02 15:00:00"),
        (1001, 1, 35.5, "2025-01-02 16:00:00"),
    ],
    "sales_002.csv": [
        (1002, 4, 12.0, "2025-01-04 10:00:00"),
        (1003, 42, 60.0, "2025-01-04 11:00:00"),
        (1002, 4, 12.0, "2025-01-04 10:00:00"),  # re-sent: the ledger keeps the first
    ],
}

ORDER_DAYS = {
    "2025-01-01": [(100, 1, 25.0), (101, 2, 12.5)],
    "2025-01-02": [(102, 3, 40.0), (103, 6, 7.25)],
    "2025-01-03": [(104, 4, 99.99)],
    "2025-01-04": [(105, 9, 15.0)],  # no _SUCCESS yet: still being written, not taken
}

PRODUCT_SNAPSHOTS = {
    "products_2025-01-01.json": [
        {"sku": "A-1", "title": "Kettle", "price": 30.0},
        {"sku": "B-2", "title": "Teapot", "price": 22.5},
    ],
    "products_2025-01-03.json": [
        {"sku": "A-1", "title": "Kettle", "price": 32.0},
        {"sku": "C-3", "title": "Mug", "price": 6.0},
    ],
}

# Full snapshots of the warehouse stock: the `snapshot` strategy turns them into an event log.
STOCK_SNAPSHOTS = {
    "stock_2025-01-01.csv": [("A-1", 10), ("B-2", 4)],
    "stock_2025-01-02.csv": [("A-1", 8), ("B-2", 4), ("C-3", 50)],  # -C/+C A-1, +A C-3
    "stock_2025-01-03.csv": [("A-1", 8), ("C-3", 45)],  # -R B-2 (sold out), -C/+C C-3
    "stock_2025-01-04.csv": [("A-1", 8), ("C-3", 45)],  # identical: nothing appended
}

# Hourly page views. Each delivery covers a window of hours and replaces what the table holds
# for those hours (`timestamp` strategy): the second one corrects 10:00 and 11:00 and drops the
# bogus 11:00 row for /cart; the third one is late data for one hour only.
TRAFFIC_BATCHES = {
    "traffic_001.csv": [
        ("2025-01-01 09:00", "/", 120),
        ("2025-01-01 10:00", "/", 140),
        ("2025-01-01 11:00", "/", 90),
        ("2025-01-01 11:00", "/cart", 9999),
    ],
    "traffic_002.csv": [
        ("2025-01-01 10:00", "/", 142),
        ("2025-01-01 11:00", "/", 95),
        ("2025-01-01 12:00", "/", 130),
    ],
    "traffic_003.csv": [("2025-01-01 09:00", "/", 121), ("2025-01-01 09:00", "/cart", 7)],
}


def generate(root: Path) -> None:
    base_time = 1_735_722_000  # 2025-01-01 09:00 UTC: file times follow the batch order
    customers = root / "customers"
    customers.mkdir(parents=True, exist_ok=True)
    for n, (name, lines) in enumerate(CUSTOMER_BATCHES.items()):
        path = customers / name
        path.write_text(CUSTOMER_HEADER + "\n".join(lines) + "\n", encoding="utf-8")
        os.utime(path, (base_time + n * 86_400,) * 2)

    for n, (day, orders) in enumerate(ORDER_DAYS.items()):
        folder = root / "orders" / day
        folder.mkdir(parents=True, exist_ok=True)
        body = "order_id,customer_id,amount\n" + "".join(f"{o},{c},{a}\n" for o, c, a in orders)
        (folder / "part-00000.csv").write_text(body, encoding="utf-8")
        if n < len(ORDER_DAYS) - 1:
            (folder / "_SUCCESS").write_text("", encoding="utf-8")

    sales = root / "sales"
    sales.mkdir(parents=True, exist_ok=True)
    for name, rows in SALES_BATCHES.items():
        body = "sale_id,customer_id,amount,sold_at\n" + "".join(f"{s},{c},{a},{t}\n" for s, c, a, t in rows)
        (sales / name).write_text(body, encoding="utf-8")

    products = root / "products"
    products.mkdir(parents=True, exist_ok=True)
    for name, items in PRODUCT_SNAPSHOTS.items():
        lines = "".join(json.dumps(item) + "\n" for item in items)
        (products / name).write_text(lines, encoding="utf-8")

    stock = root / "stock"
    stock.mkdir(parents=True, exist_ok=True)
    for name, items in STOCK_SNAPSHOTS.items():
        as_of = name.removeprefix("stock_").removesuffix(".csv")
        body = "sku,qty,as_of\n" + "".join(f"{sku},{qty},{as_of}\n" for sku, qty in items)
        (stock / name).write_text(body, encoding="utf-8")

    traffic = root / "traffic"
    traffic.mkdir(parents=True, exist_ok=True)
    for name, hours in TRAFFIC_BATCHES.items():
        body = "hour,page,views\n" + "".join(f"{h},{page},{views}\n" for h, page, views in hours)
        (traffic / name).write_text(body, encoding="utf-8")

    synapse_export(root / "synapse")


# Synapse Link: the `account` entity over four folders; the fourth is still being written
ACCOUNT = entity_attributes(
    ("name", "string"), ("city", "string"), ("credit_limit", "decimal"), ("createdon", "dateTimeOffset")
)
ACCOUNT_V2 = [*ACCOUNT[:-2], ("phone", "string"), *ACCOUNT[-2:]]  # a column added in the second folder
SYNAPSE_FOLDERS = [
    "2025-01-01T10.00.00Z",
    "2025-01-01T11.00.00Z",
    "2025-01-01T12.00.00Z",
    "2025-01-01T13.00.00Z",
]


def account(id_: str, hour: int, version: int, **values: object) -> dict[str, object]:
    at = datetime(2025, 1, 1, hour, 15)
    return {"Id": id_, "SinkCreatedOn": at, "SinkModifiedOn": at, "versionnumber": version, **values}


def synapse_export(root: Path) -> None:
    export = SynapseExport(root)
    created = datetime(2024, 6, 1, 8, 0)
    f1, f2, f3, f4 = SYNAPSE_FOLDERS
    export.write_folder(f1, {"account": ACCOUNT}, {"account": {"2025.csv": [
        account("a1", 10, 1, name="Contoso", city="Oslo", credit_limit=Decimal("1000"), createdon=created),
        account("a2", 10, 1, name="Fabrikam", city="Rome", credit_limit=Decimal("500"), createdon=created),
        account("a3", 10, 1, name="Northwind", city="Lima", credit_limit=Decimal("250"), createdon=created),
    ]}})  # fmt: skip
    export.write_folder(f2, {"account": ACCOUNT_V2}, {"account": {"2025.csv": [
        account("a2", 11, 2, name="Fabrikam", city="Rome", credit_limit=Decimal("750"), phone="+39 06 1234"),
        account("a4", 11, 1, name="Tailspin", city="Kyiv", credit_limit=Decimal("300"), phone="+380 44 987"),
    ]}})  # fmt: skip
    with (root / f2 / "account" / "2025.csv").open("a", encoding="utf-8") as f:
        f.write('"a9","1/1/2025 11:20:00 AM"\n')  # a row cut short: quarantined
    export.write_folder(f3, {"account": ACCOUNT_V2}, {"account": {
        "2025.csv": [account("a1", 12, 2, name="Contoso", city="Bergen", credit_limit=Decimal("1000"))],
        "1.csv": [{"Id": "a3", "SinkModifiedOn": datetime(2025, 1, 1, 12, 30), "IsDelete": True}],
    }})  # fmt: skip
    export.write_folder(f4, {"account": ACCOUNT_V2}, {"account": {"2025.csv": [
        account("a5", 13, 1, name="Litware", city="Graz", credit_limit=Decimal("150"), phone="+43 316 55"),
    ]}})  # fmt: skip
    export.set_current(f4)  # Synapse is still writing the fourth folder: it is not taken yet


if __name__ == "__main__":
    generate(Path(sys.argv[1] if len(sys.argv) > 1 else "data"))
