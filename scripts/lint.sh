#!/usr/bin/env bash
# `make lint` (and `make test`, beside its tests): ruff (lint, and the format of the code and of
# the docs' Python blocks), the import layers, mypy, function lengths (scripts/function_lengths.py),
# in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check src tests bench examples docs scripts
.venv/bin/ruff format --check --quiet src tests bench examples docs scripts
.venv/bin/lint-imports
.venv/bin/mypy
.venv/bin/python scripts/function_lengths.py
