"""Functions stay short: a function's body (its docstring aside) is at most 60 lines in src/.

A longer function is split into named phases: functions whose names say what each phase does.
Run by scripts/lint.sh; exit status 1 names every function over the limit.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

LIMIT = 60


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
        f"{name}: {length} lines (at most {LIMIT})"
        for name, length in sorted(found.items())
        if length > LIMIT
    ]
    for line in problems:
        print(f"function length: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
