"""ONNX's own operator tests (``onnx.backend.test.case.node``) through the importer and back.

Every generated node test whose operators are all in the import table is loaded with
``ad.onnx.load``, executed on numpy and compared with onnx's expected outputs; the loaded
program is then exported and run on ONNX Runtime and compared again
(:mod:`autograd_dag.onnx.conformance`). A test listed in ``conformance.EXCEPTIONS`` must end
in a clear refusal (a library error), never a wrong value; the README lists each with its
reason. The data is generated once into a cache folder outside the checkout.
"""

from __future__ import annotations

import collections
import fnmatch
import pathlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
pytest.importorskip("onnxruntime", reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")

from autograd_dag.onnx import SUPPORTED_ONNX_OPS, conformance  # noqa: E402

CASES = conformance.node_cases()
IN_TABLE = [c for c in CASES if set(c.ops) <= set(SUPPORTED_ONNX_OPS)]
OUTSIDE = [c for c in CASES if not set(c.ops) <= set(SUPPORTED_ONNX_OPS)]
README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
GOAL = 0.98


def test_the_generator_gave_the_node_tests():
    # onnx 1.16+ defines over a thousand node tests; an empty or partial cache would pass vacuously.
    assert len(CASES) > 1000
    assert len(IN_TABLE) > 500


@pytest.mark.parametrize("case", IN_TABLE, ids=[c.name for c in IN_TABLE])
def test_node_test_passes_or_is_a_listed_refusal(case):
    result = conformance.run_case(case)
    if conformance.exception(case.name):
        assert result.status != "pass", f"{case.name} passes now: remove it from conformance.EXCEPTIONS"
        assert result.status == "refused", (f"{case.name} is a listed exception, which must be refused with a "
                                            f"library error; got {result.status} at {result.stage}: {result.detail}")
    else:
        assert result.status == "pass", f"{result.status} at {result.stage}: {result.detail}"


def test_every_operator_in_the_table_passes_the_goal():
    """>= 98 % of each table operator's own node tests pass, apart from the listed exceptions."""
    tests, excepted = collections.Counter(), collections.Counter()
    for c in IN_TABLE:
        if not c.expanded:
            tests[c.op_type] += 1
            excepted[c.op_type] += bool(conformance.exception(c.name))
    below = {op: f"{tests[op] - excepted[op]}/{tests[op]}" for op in tests
             if (tests[op] - excepted[op]) / tests[op] < GOAL and op not in conformance.BELOW_GOAL}
    assert not below, f"operators under {GOAL:.0%} of their node tests: {below}"


def test_operators_under_the_goal_are_explained():
    for op, reason in conformance.BELOW_GOAL.items():
        assert op in SUPPORTED_ONNX_OPS and reason
        assert any(c.op_type == op and conformance.exception(c.name) for c in IN_TABLE), op


def test_every_exception_names_node_tests_and_is_in_the_readme():
    names = [c.name for c in IN_TABLE]
    for pattern, reason in conformance.EXCEPTIONS.items():
        assert fnmatch.filter(names, pattern), f"{pattern} matches no node test of an operator in the table"
        assert reason
        assert f"`{pattern}`" in README, f"README does not list the exception {pattern}"


def test_tests_of_operators_outside_the_table_are_listed_as_unsupported():
    for case in OUTSIDE[:50]:
        result = conformance.run_case(case)
        missing = sorted(set(case.ops) - set(SUPPORTED_ONNX_OPS))
        assert result.status == "unsupported" and all(op in result.detail for op in missing), result
    rows = conformance.table([conformance.Result(c, "unsupported") for c in OUTSIDE])
    assert all(f"| {c.op_type}" in rows for c in OUTSIDE)


def test_the_runner_reports_a_wrong_value_as_a_failure():
    # The comparison must be able to fail: a float32 result off by 1e-4 relative and an integer off by one.
    case = IN_TABLE[0]
    assert conformance.compare(case, np.float32([1.0001]), np.float32([1.0]))
    assert not conformance.compare(case, np.float32([1.000001]), np.float32([1.0]))
    assert conformance.compare(case, np.int64([3]), np.int64([2]))
    assert conformance.compare(case, np.float64([1.0]), np.float32([1.0]))  # dtype
    assert not conformance.compare(case, np.float32([np.nan]), np.float32([np.nan]))


@pytest.mark.parametrize("name", sorted(conformance.LOOSER))
def test_a_looser_tolerance_is_needed_and_enough(name):
    # Each entry must be a test that fails at the default tolerance and passes at the stated one.
    case = next(c for c in CASES if c.name == name)
    assert conformance.run_case(case).status == "pass"
    saved = conformance.LOOSER.pop(name)
    try:
        assert conformance.run_case(case).status == "fail"
    finally:
        conformance.LOOSER[name] = saved


def test_the_readme_states_the_measured_figures():
    # The README's figures are this suite's own counts; they hold for the versions make test pins.
    ort = pytest.importorskip("onnxruntime")
    if (onnx.__version__, ort.__version__) != conformance.MEASURED_WITH:
        pytest.skip(f"the README's figures are for onnx/onnxruntime {conformance.MEASURED_WITH}; "
                    f"installed: {onnx.__version__}/{ort.__version__}")
    excepted = [c for c in IN_TABLE if conformance.exception(c.name)]
    ops = {c.op_type for c in IN_TABLE if not c.expanded}
    alone = sum(not c.expanded for c in IN_TABLE)
    figures = (f"**{len(IN_TABLE) - len(excepted):,} of {len(IN_TABLE):,}** node tests of the table's {len(ops)} "
               f"operators pass ({alone:,} tests of an operator alone, {len(IN_TABLE) - alone:,}\nof its "
               f"function-expanded form); 0 give a wrong value. The {len(excepted)} exceptions")
    assert figures in README, f"README: the conformance figures are now: {figures}"
