#!/usr/bin/env bash
# `make lint` (and `make test`, beside its tests): ruff, the import layers, mypy, in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check src tests bench examples docs
.venv/bin/lint-imports
.venv/bin/mypy
