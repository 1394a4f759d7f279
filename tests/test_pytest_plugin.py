"""The pytest plugin (autograd_dag.pytest_plugin): inner pytest runs of small test files, through pytester.

The inner runs are in-process (fast) except where the entry point itself, or pytest-xdist's
workers, are what is tested: those run pytest in a subprocess.
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import tomllib

import numpy as np
import pytest

import autograd_dag
from autograd_dag.check_records import set_recorder

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(autograd_dag.__file__).resolve().parent.parent
MODULE = "autograd_dag.pytest_plugin"
# An environment installed before the entry point existed (pip install -e runs again when
# pyproject.toml changes: make setup) does not load the plugin: the inner runs name it then.
INSTALLED = any(ep.value == MODULE for ep in importlib.metadata.entry_points(group="pytest11"))
LOAD = () if INSTALLED else ("-p", MODULE)

# bad_square's VJP is 3x too large at index 2 only; its JVP is right. lazy_square is right
# at order 1 and wrong at order 2 (its rules hide x from their own derivative).
HEADER = '''
import numpy as np
import pytest
import autograd_dag as ad

_mask = np.array([1.0, 1.0, 3.0, 1.0])
bad_square = ad.primitive(
    "test_plugin_bad_square", lambda x: x * x,
    vjp=lambda ct, out, x: (ct * 2.0 * x * _mask,),
    jvp=lambda t, out, x: t[0] * 2.0 * x, replace=True)
lazy_square = ad.primitive(
    "test_plugin_lazy_square", lambda x: x * x,
    vjp=lambda ct, out, x: (ct * 2.0 * ad.stop_gradient(x),),
    jvp=lambda t, out, x: t[0] * 2.0 * ad.stop_gradient(x), replace=True)
X = np.array([0.5, -1.0, 2.0, 1.5])

def bad(v):
    return bad_square(v)

def lazy(v):
    return lazy_square(v)
'''


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=HEADER + source)
    return pytester.runpytest_inprocess(*LOAD, "-p", "no:cacheprovider", *args)


def test_a_passing_and_a_failing_check_and_the_failure_at_the_users_line(pytester):
    result = run(pytester, '''
def test_good(gradcheck):
    gradcheck(lambda v: ad.tanh(v).sum(), (X,))

def test_bad(gradcheck):
    gradcheck(bad, (X,))   # the user's line
''')
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    # pytest shows the test's own line, then the check's report as the assertion message:
    # the argument, the mode, and the worst entry (index 2, analytic 12 = 3 * 2 * 2, numeric 4).
    result.stdout.fnmatch_lines([
        ">       gradcheck(bad, (X,))   # the user's line",
        "E       autograd_dag.testing.GradientMismatch: check_grads(bad): analytic and numerical*",
        "E         argument 0 ('v'), shape (4,), float64, reverse mode (VJP)*",
        "E           d output (2,) / d input (2,): analytic  1.200000e+01, numeric  4.000000e+00*",
        "E         gradcheck settings: seed=0, atol=1e-06, rtol=1e-05, eps=1e-06, order=1, modes=rev,fwd,*",
        "test_inner.py:*: GradientMismatch",
    ])
    # No frame of the library or the plugin is shown: the failure is at the user's line.
    assert "pytest_plugin.py" not in out and "testing.py" not in out and "checking.py" not in out


def test_the_marker_overrides_the_ini_and_the_command_line_overrides_the_ini(pytester):
    pytester.makepyprojecttoml('''
[tool.pytest.ini_options]
gradcheck_rtol = "1.0"
gradcheck_seed = "7"
''')
    source = '''
def test_loose_from_the_ini(gradcheck):
    # rtol 1 allows 12 for 4: the wrong entry passes at the ini's tolerance
    gradcheck(bad, (X,))
    assert gradcheck.settings["rtol"] == 1.0 and gradcheck.sources["rtol"] == "ini"

@pytest.mark.gradcheck(rtol=1e-5)
def test_strict_from_the_marker(gradcheck):
    assert gradcheck.sources["rtol"] == "marker"
    gradcheck(bad, (X,))

@pytest.mark.gradcheck(rtol=1.0)
def test_loose_from_the_marker(gradcheck):
    gradcheck(bad, (X,))
    assert gradcheck.sources["rtol"] == "marker"

@pytest.mark.gradcheck(order=2)
class TestClassMarker:
    @pytest.mark.gradcheck(modes="rev")
    def test_closest_wins_and_merges(self, gradcheck):
        assert gradcheck.settings["order"] == 2 and gradcheck.settings["modes"] == ("rev",)
        assert gradcheck.sources["seed"] == SEED_SOURCE and gradcheck.settings["seed"] == SEED
'''
    result = run(pytester, source.replace("SEED_SOURCE", '"ini"').replace("SEED", "7"))
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_strict_from_the_marker*", "E*d output (2,) / d input (2,)*",
                                 "E*rtol=1e-05 (marker)*"])
    assert "FAILED test_inner.py::test_strict_from_the_marker" in result.stdout.str()
    # The command line beats the ini (seed 3 for 7, rtol 1e-5 for 1); the marker still beats the command line.
    pytester.makepyfile(test_inner=HEADER + source.replace("SEED_SOURCE", '"command line"').replace("SEED", "3"))
    result = pytester.runpytest_inprocess(*LOAD, "-p", "no:cacheprovider", "--gradcheck-seed", "3",
                                          "--gradcheck-rtol", "1e-5")
    # The ini's rtol 1.0 is overridden: the first test's wrong entry is now caught (not the marked one's).
    result.assert_outcomes(passed=2, failed=2)
    assert "FAILED test_inner.py::test_loose_from_the_ini" in result.stdout.str()
    result.stdout.fnmatch_lines(["E*rtol=1e-05 (command line)*"])


def test_command_line_options_change_what_is_checked(pytester):
    source = '''
def test_bad_vjp(gradcheck):
    gradcheck(bad, (X,))

def test_wrong_second_derivative(gradcheck):
    gradcheck(lazy, (X,))
'''
    run(pytester, source).assert_outcomes(passed=1, failed=1)            # order 1: lazy is right
    result = pytester.runpytest_inprocess(*LOAD, "-p", "no:cacheprovider", "--gradcheck-order", "2")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["E*check_grads(lazy, order 2)*wrongly differentiated*"])
    # Forward mode alone: bad_square's JVP is right, so only lazy (at order 2) fails.
    result = pytester.runpytest_inprocess(*LOAD, "-p", "no:cacheprovider", "--gradcheck-order", "2",
                                          "--gradcheck-modes", "fwd")
    result.assert_outcomes(passed=1, failed=1)
    assert "FAILED test_inner.py::test_wrong_second_derivative" in result.stdout.str()


def test_random_points_are_drawn_from_the_seeded_generator(pytester):
    result = run(pytester, '''
DRAWN = []

def draw(rng):
    x = rng.standard_normal(4)
    DRAWN.append(x)
    return (x,)

@pytest.mark.gradcheck(points=4, seed=5)
def test_four_points(gradcheck):
    gradcheck(lambda v: ad.sin(v).sum(), draw)
    assert len(DRAWN) == 4 and len({tuple(x) for x in DRAWN}) == 4
    expected = np.random.default_rng(5).standard_normal(4)
    assert np.array_equal(DRAWN[0], expected)   # the same generator, the same draws: bit for bit

@pytest.mark.gradcheck(points=6)
def test_a_wrong_point_is_named(gradcheck):
    gradcheck(bad, lambda rng: (rng.standard_normal(4) + 3.0,))
''')
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E*at random point 1 of 6 (args drawn by <lambda> from gradcheck.rng, seed 0)"
                                 ": check_grads(bad)*", "E*points=6 (marker)*"])


def test_the_report_lists_every_check_worst_first(pytester):
    result = run(pytester, '''
def test_good(gradcheck):
    gradcheck(lambda v: ad.tanh(v).sum(), (X,))
    gradcheck(lambda v: (v * v).sum(), (X,))

def test_direct_calls_are_listed_too():
    ad.check_grads(lambda v: ad.exp(v).sum(), (X,), order=2)   # one record, though order 2 recurses

def test_bad(gradcheck):
    gradcheck(bad, (X,))
''', "--gradcheck-report")
    result.assert_outcomes(passed=2, failed=1)
    lines = result.stdout.lines
    start = next(k for k, line in enumerate(lines) if "gradient checks: 4 run, 1 failed, worst first" in line)
    assert lines[start + 1].split() == ["verdict", "err/tol", "worst", "err", "tolerance", "check(function)",
                                        "test"]
    rows = [line.split() for line in lines[start + 2:start + 6]]
    assert [r[0] for r in rows] == ["FAILED", "PASSED", "PASSED", "PASSED"]
    assert rows[0][4:] == ["check_grads(bad)", "test_inner.py::test_bad"]
    assert {r[5] for r in rows[1:]} == {"test_inner.py::test_good", "test_inner.py::test_direct_calls_are_listed_too"}
    ratio, error, tolerance = (float(v) for v in rows[0][1:4])
    # The worst entry: analytic 12 for numeric 4 (error 8) at tolerance 1e-6 + 1e-5 * 12.
    assert error == pytest.approx(8.0, rel=1e-3) and tolerance == pytest.approx(1.21e-4, rel=1e-2)
    assert ratio == pytest.approx(error / tolerance, rel=1e-2)
    passed_ratios = [float(r[1]) for r in rows[1:]]
    assert passed_ratios == sorted(passed_ratios, reverse=True) and all(0 <= q <= 1 for q in passed_ratios)
    # Without the option there is no table.
    result = pytester.runpytest_inprocess(*LOAD, "-p", "no:cacheprovider")
    assert "gradient checks:" not in result.stdout.str()


def test_invalid_settings_are_usage_errors(pytester):
    result = run(pytester, "def test_nothing(gradcheck):\n    pass\n", "--gradcheck-order", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gradcheck: --gradcheck-order: order='0' is not valid*"])
    result = run(pytester, '''
@pytest.mark.gradcheck(tolerance=1e-3)
def test_unknown(gradcheck):
    pass

@pytest.mark.gradcheck(modes="backward")
def test_bad_mode(gradcheck):
    pass
''')
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*unknown setting 'tolerance'; the settings are seed, atol, rtol*",
                                 "*gradcheck: marker: modes='backward' is not valid*"])


def test_the_marker_is_registered_and_documented(pytester):
    result = pytester.runpytest_inprocess(*LOAD, "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.gradcheck(seed=, atol=, rtol=, eps=, order=, modes=, points=, "
                                 "full=, batched=): settings of the gradcheck fixture*"])
    result = pytester.runpytest_inprocess(*LOAD, "--help")
    result.stdout.fnmatch_lines(["gradient checks (autograd_dag):", "*--gradcheck-seed=INT*", "*--gradcheck-report*",
                                 "*gradcheck_rtol (string):*"])


def _entry_point_site(tmp_path: pathlib.Path) -> pathlib.Path:
    """A directory whose dist-info declares pyproject.toml's pytest11 entry point, as pip install writes it."""
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert entry_points == {"autograd_dag": MODULE}
    info = tmp_path / "site" / "autograd_dag_plugin_probe-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: autograd-dag-plugin-probe\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return info.parent


def test_the_entry_point_loads_the_plugin_in_xdist_workers_and_the_report_collects_theirs(pytester, tmp_path):
    site = _entry_point_site(tmp_path)
    pytester.makepyfile(test_a=HEADER + "def test_a(gradcheck):\n    gradcheck(lambda v: ad.sin(v).sum(), (X,))\n",
                        test_b=HEADER + "def test_b(gradcheck):\n    gradcheck(bad, (X,))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    # No -p: the dist-info's entry point is what loads the plugin, in the controller and in each worker.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
                           "--gradcheck-report"], cwd=pytester.path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gradient checks: 2 run, 1 failed, worst first" in proc.stdout, proc.stdout
    assert re.search(r"FAILED .* check_grads\(bad\)  test_b\.py::test_b", proc.stdout)
    assert re.search(r"PASSED .* check_grads\(<lambda>\)  test_a\.py::test_a", proc.stdout)


def test_the_projects_own_configuration_does_not_register_the_plugin_twice(tmp_path):
    # With the entry point installed, a pytest_plugins or -p naming the module too would fail at
    # start-up ("Plugin already registered"): the project's own suite starts with it loaded once.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_entry_point_site(tmp_path)), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "--gradcheck-report",
                           "tests/test_layers.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_check_called_with_keywords_is_recorded_under_fs_name():
    def square_sum(x):
        return (x * x).sum()
    seen = []
    previous = set_recorder(seen.append)
    try:
        autograd_dag.check_grads(f=square_sum, args=(np.arange(3.0),), order=2)
    finally:
        set_recorder(previous)
    # order 2 runs check_grads inside itself: one record, holding the comparisons of both orders
    assert [(r.check, r.function, r.passed) for r in seen] == [("check_grads", "square_sum", True)]
    assert len(seen[0].comparisons) > 2 and 0 <= seen[0].ratio <= 1


def test_keywords_at_the_call_win_and_any_check_runs_with_the_settings(pytester):
    result = run(pytester, '''
@pytest.mark.gradcheck(rtol=1e-5)
def test_keyword_wins(gradcheck):
    gradcheck(bad, (X,), rtol=1.0)          # 12 for 4 is within rtol 1

def test_run_passes_the_settings_a_check_takes(gradcheck):
    gradcheck.run(ad.check_grads, bad, (X,), modes="fwd")   # the JVP is right
    gradcheck.grads_close(bad, (X,), modes=("fwd",))        # testing.assert_grads_close by its name
    with pytest.raises(AttributeError, match="no testing.assert_hessian_of_nothing"):
        gradcheck.hessian_of_nothing

@pytest.mark.gradcheck(order=2)
def test_run_fails_with_the_marker_order(gradcheck):
    gradcheck.run(ad.check_grads, lazy, (X,))
''')
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["E*GradientMismatch: check_grads(lazy, order 2)*", "E*order=2 (marker)*"])
