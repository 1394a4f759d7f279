"""The core's line budget: the one place its limit and its files are written.

The core — ``graph``, ``core``, ``tracing``, ``program`` — is what every user
pays for and every contributor reads first; it regrew past its budget once
while nothing checked it (issue 26). ``tests/test_core_budget.py`` fails when
the four files (``wc -l``) exceed :data:`CORE_LINE_BUDGET`, when a function in
them or in the sweeps (``autodiff``) is longer than :data:`MAX_FUNCTION_LINES`, and when README.md's figure is
not this count.

Run:  python scripts/core_budget.py           # the count per file, against the budget
      python scripts/core_budget.py --write   # write the count into README.md's Layout section
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORE = ("graph", "core", "tracing", "program")
# Held to the function-length limit too: the sweeps, which every gradient runs through.
SWEEPS = ("autodiff",)
CORE_LINE_BUDGET = 2000
MAX_FUNCTION_LINES = 80
# README.md's sentence; the figure may be wrapped onto the next line.
README_FIGURE = re.compile(r"(The core — `graph`, `core`, `tracing`, `program` —\s+is\s+)([\d,]+)(\s+lines)")
WRITE_COMMAND = "python scripts/core_budget.py --write"


def line_counts(root: pathlib.Path = ROOT) -> dict[str, int]:
    """``{module: lines}`` of the core's files, counted as ``wc -l`` does (newline characters)."""
    return {name: (root / "autograd_dag" / f"{name}.py").read_bytes().count(b"\n") for name in CORE}


def long_functions(root: pathlib.Path = ROOT) -> list[str]:
    """``module.function (n lines)`` for every function or method of the core and the sweeps over the limit."""
    found = []
    for name in CORE + SWEEPS:
        tree = ast.parse((root / "autograd_dag" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{name}.{node.name} ({lines} lines)")
    return found


def readme_figure(root: pathlib.Path = ROOT) -> int | None:
    """The core's line count README.md states, or None if the sentence is gone."""
    found = README_FIGURE.search((root / "README.md").read_text(encoding="utf-8"))
    return None if found is None else int(found.group(2).replace(",", ""))


def write_readme(root: pathlib.Path = ROOT) -> int:
    """Write the current count into README.md's sentence; returns it."""
    path = root / "README.md"
    total = sum(line_counts(root).values())
    text, n = README_FIGURE.subn(lambda m: f"{m.group(1)}{total:,}{m.group(3)}", path.read_text(encoding="utf-8"))
    if n != 1:
        raise SystemExit(f"README.md: expected one sentence matching {README_FIGURE.pattern!r}, found {n}")
    path.write_text(text, encoding="utf-8")
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the count into README.md")
    args = parser.parse_args(argv)
    counts = line_counts()
    for name, n in counts.items():
        print(f"{n:>6}  autograd_dag/{name}.py")
    total = sum(counts.values())
    print(f"{total:>6}  total (budget {CORE_LINE_BUDGET:,}: {'within' if total <= CORE_LINE_BUDGET else 'OVER'})")
    for found in long_functions():
        print(f"over {MAX_FUNCTION_LINES} lines: {found}")
    if args.write:
        write_readme()
        print(f"README.md now says {total:,}")
    elif readme_figure() != total:
        print(f"README.md says {readme_figure()}: run `{WRITE_COMMAND}`")
    return 0 if total <= CORE_LINE_BUDGET and not long_functions() else 1


if __name__ == "__main__":
    sys.exit(main())
