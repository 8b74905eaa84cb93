"""Functions stay short: a function's body (its docstring aside) is at most 60 lines in src/.

The functions listed in LONGER are older than the rule and wait to be split into named phases;
each may only get shorter (its listed length is a ceiling), and one split below the limit must
leave the list. Run by scripts/lint.sh; exit status 1 names every function over its limit.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

LIMIT = 60
LONGER = {
    "strategies/scd2/fast.py:fast_changes": 162,
    "strategies/scd2/strategy.py:Scd2Strategy.stage": 88,
    "strategies/group.py:stage_key_group": 64,
    "strategies/ledger.py:LedgerStrategy.stage": 63,
    "run/runner.py:Runner.run_table": 63,
    "strategies/group.py:fold_statuses": 62,
    "strategies/custom.py:CustomStrategy.stage": 62,
}


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    first = body[0]
    if len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        body = body[1:]  # the docstring
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def lengths(root: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for parent in ast.walk(tree):
            for node in ast.iter_child_nodes(parent):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    owner = f"{parent.name}." if isinstance(parent, ast.ClassDef) else ""
                    out[f"{path.relative_to(root)}:{owner}{node.name}"] = body_lines(node)
    return out


def main() -> int:
    found = lengths(Path(__file__).resolve().parent.parent / "src" / "lakefresh")
    problems = [
        f"{name}: {length} lines (at most {LONGER.get(name, LIMIT)})"
        for name, length in sorted(found.items())
        if length > LONGER.get(name, LIMIT)
    ]
    problems += [
        f"{name}: listed in LONGER but now {found[name]} lines: drop it"
        for name in LONGER
        if name in found and found[name] <= LIMIT
    ]
    problems += [f"{name}: listed in LONGER but gone: drop it" for name in LONGER if name not in found]
    for line in problems:
        print(f"function length: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
