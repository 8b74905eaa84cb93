#!/usr/bin/env bash
# The example, start to finish: fresh data, a run, the per-batch counts, a re-run that does nothing,
# a plan, a wrong batch unloaded and its corrected file reloaded, the report written.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lakefresh="$here/../../.venv/bin/lakefresh"
python="$here/../../.venv/bin/python"
cd "$here"
rm -rf data warehouse
"$python" generate.py data

echo "== lakefresh validate"
"$lakefresh" validate pipeline.yml
echo "== lakefresh run (every batch, exactly once)"
"$lakefresh" run pipeline.yml
echo "== per-batch counts"
for table in customers customers_history dim_customer sales customer_changes crm_accounts orders products stock_changes traffic stock_levels stock_level_changes; do
  echo "-- $table"
  "$lakefresh" history pipeline.yml "$table"
done
echo "== the customers table"
"$python" - <<'PY'
import lakefresh
p = lakefresh.load_pipeline("pipeline.yml")
p.table("customers").orderBy("customer_id").select(
    "customer_id", "name", "email", "city", "updated_at", "_lf_batch_id").show(truncate=False)
print("customers_history: every change of a customer, as SCD2 versions")
p.table("customers_history").orderBy("customer_id", "valid_from").select(
    "customer_id", "city", "email", "valid_from", "valid_to", "is_current").show(truncate=False)
print("dim_customer: versions with surrogate keys; 42 is a skeleton made for an early sale")
p.table("dim_customer").orderBy("customer_id", "valid_from").select(
    "customer_sk", "customer_id", "name", "city", "valid_from", "valid_to", "is_current",
    "deleted", "is_inferred").show(truncate=False)
print("sales, with the surrogate key of the customer version valid at the sale")
p.table("sales").orderBy("sale_id").select(
    "sale_id", "customer_id", "customer_sk", "amount", "sold_at").show(truncate=False)
print("customer_changes: the customers table's change feed, read downstream")
p.table("customer_changes").orderBy("_lf_batch_id", "commit_in_load", "customer_id").select(
    "change", "customer_id", "city", "email", "commit_in_load", "snapshot_id").show(truncate=False)
print("crm_accounts: a Synapse Link export, folder by folder (the folder being written waits)")
p.table("crm_accounts").orderBy("Id").select(
    "Id", "name", "city", "credit_limit", "phone", "SinkModifiedOn", "_lf_batch_id").show(truncate=False)
p.quarantine().select("table_name", "batch_id", "line", "reason").show(truncate=False)
print("the stock change log, and the current stock derived from it")
p.table("stock_changes").orderBy("offset").select(
    "offset", "op", "sku", "qty", "event_time", "_lf_batch_id").show(truncate=False)
p.current("stock_changes").orderBy("sku").show()
print("traffic: each delivery replaced the hours it covers")
p.table("traffic").orderBy("hour", "page").select("hour", "page", "views", "_lf_batch_id").show()
print("stock_levels, a Delta Lake table, and its change data feed read downstream")
p.table("stock_levels").orderBy("sku").select("sku", "qty", "as_of", "_lf_batch_id").show()
p.table("stock_level_changes").orderBy("version", "sku").select("change", "sku", "qty", "version").show()
PY
echo "== a second run finds nothing new"
"$lakefresh" run pipeline.yml
echo "== status"
"$lakefresh" status pipeline.yml --pending
echo "== plan: what the next run would take (2025-01-04 has no _SUCCESS yet); writes nothing"
"$lakefresh" plan pipeline.yml --table orders
echo "== order 103 of 2025-01-02 was wrong: unload that day, as if it had never been loaded"
"$lakefresh" unload pipeline.yml --table orders --batch 2025-01-02
sed -i 's/^103,6,7.25$/103,6,72.50/' data/orders/2025-01-02/part-00000.csv
echo "== the corrected file reloaded in its place"
"$lakefresh" reload pipeline.yml --table orders --batch 2025-01-02
"$lakefresh" history pipeline.yml orders
"$python" -c "import lakefresh; lakefresh.load_pipeline('pipeline.yml').table('orders').orderBy('order_id').select('order_id', 'customer_id', 'amount', '_lf_batch_id').show()"
echo "== the report: one HTML file, charts per table"
"$lakefresh" report pipeline.yml -o report.html
