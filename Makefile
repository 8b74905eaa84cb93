.DEFAULT_GOAL := help
.PHONY: help setup test-setup test-spark3.5 demo demo-lake test lint docs unit bench bench-peers clean

help: ## list the targets
	@grep -E '^[a-z0-9.-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

setup: ## create .venv (Spark 4.1), install lakefresh, resolve the Iceberg runtime from Maven Central
	@bash scripts/setup.sh

demo: setup ## run the example pipeline on freshly generated data
	@bash examples/orders/demo.sh

demo-lake: setup ## the example on a lake on loopback: an S3-compatible server and a REST catalog, started and stopped here
	@.venv/bin/lakefresh jars --delta --s3 >/dev/null
	@.venv/bin/python -c "from lakefresh.lakehouse.jars import main; raise SystemExit(main(['--test-servers']))" >/dev/null
	.venv/bin/python examples/orders/demo_lake.py

test: ## set up both Spark lines side by side, lint, build the docs, every test on 4.1 and, beside it, the contract suites on 3.5, then the Delta tests
	@bash scripts/test.sh

SPARK35_TESTS = $(if $(filter 1,$(FULL)),tests/spark,tests/spark/test_contract_strategies.py tests/spark/test_contract_sources.py \
  tests/spark/test_ansi.py tests/spark/test_nested_json.py "tests/spark/test_delta.py::test_the_strategy_contract_holds_on_delta[key]")

test-spark3.5: ## what make test runs on Spark 3.5 (the contract suites, ANSI, nested JSON, the key contract on Delta); FULL=1: every Spark test (about 30 min)
	@LAKEFRESH_SPARK=3.5 LAKEFRESH_TEST_SERVICES=1 bash scripts/setup.sh
	.venv-spark3.5/bin/pytest $(SPARK35_TESTS)

test-setup: ## setup, plus the PostgreSQL server and the JDBC driver (Maven Central) the tests use
	@LAKEFRESH_TEST_SERVICES=1 bash scripts/setup.sh

lint: setup ## ruff, the import layers, mypy
	@bash scripts/lint.sh

docs: ## build the documentation site into site/ (mkdocs --strict: a broken link fails)
	@LAKEFRESH_DOCS=1 LAKEFRESH_NO_JARS=1 LAKEFRESH_NO_CLASS_ARCHIVE=1 bash scripts/setup.sh >/dev/null
	@bash scripts/docs.sh

unit: setup ## only the tests that need no JVM
	.venv/bin/pytest tests/unit

bench: setup ## key strategy against a hand-written MERGE (1M rows; see bench/README.md)
	.venv/bin/python bench/bench_key.py

bench-peers: ## key and scd2 against dbt-spark (incremental merge, snapshot) in one session, in .venv-peers
	@LAKEFRESH_PEERS=1 bash scripts/setup.sh
	cd bench && ../.venv-peers/bin/python bench_peers.py

clean: ## remove generated data and warehouses (keeps .venv)
	rm -rf examples/orders/data examples/orders/warehouse examples/orders/report.html bench/data site
