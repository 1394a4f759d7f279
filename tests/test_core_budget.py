"""The core — ``graph``, ``core``, ``tracing``, ``program`` — stays within its budget (issue 26).

The budget, the files and the README's sentence are written once, in
``scripts/core_budget.py``; these tests read them there.
"""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("core_budget", ROOT / "scripts" / "core_budget.py")
budget = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(budget)


def test_the_counts_are_wc_l():
    # wc -l counts newline characters; a file is read as bytes so no decoding changes the count.
    for name, n in budget.line_counts().items():
        assert n == len((ROOT / "autograd_dag" / f"{name}.py").read_bytes().split(b"\n")) - 1


def test_the_readmes_core_line_count_is_the_files_line_count():
    # The README stated 2,102 lines while the four files had grown to 2,644: a figure nobody
    # re-measures drifts. The script writes it from the same count this test reads.
    stated = budget.readme_figure()
    assert stated is not None, "README.md no longer states the core's line count in the Layout section"
    counted = sum(budget.line_counts().values())
    assert stated == counted, (f"README.md says the core is {stated:,} lines; the files have {counted:,}: "
                               f"run `{budget.WRITE_COMMAND}`")


def test_no_function_in_the_core_or_the_sweeps_is_longer_than_the_limit():
    # (reverse_sweep was 189 lines doing eleven jobs; grad_program 83 before its checks had a function)
    assert budget.long_functions() == [], (
        f"functions over {budget.MAX_FUNCTION_LINES} lines in the core or the sweeps: split them")


def test_the_core_is_within_its_line_budget():
    # The core regrew from 1,986 lines (#12) to 2,728 while nothing checked it (issue 26).
    counts = budget.line_counts()
    total = sum(counts.values())
    assert total <= budget.CORE_LINE_BUDGET, (
        f"the core is {total:,} lines ({', '.join(f'{k} {n}' for k, n in counts.items())}), over its budget "
        f"of {budget.CORE_LINE_BUDGET:,} (scripts/core_budget.py): move what is not the Tensor record, apply, "
        f"the tracer, the program model or Algorithm 4.1 to a module of its own")
