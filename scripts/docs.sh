#!/usr/bin/env bash
# `make docs` (and `make test`, beside the lint): the documentation site built into site/ with
# --strict, so a broken link or anchor fails; the reference pages are generated from the code
# (docs/hooks/reference.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# mkdocs-material prints a notice about MkDocs 2.0 at every build: not about this site
# (and its INFO lines are progress; --quiet would hide the warnings that fail the build too)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict 2>&1 | { grep -v '^INFO ' || true; }
echo "docs: site/ built"
