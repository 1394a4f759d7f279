"""The pytest plugin installed with autograd_dag: a ``gradcheck`` fixture, a marker, options and a report.

pytest loads it through the ``pytest11`` entry point (``pyproject.toml``), so every
pytest run in an environment where autograd_dag is installed has:

- the ``gradcheck`` fixture: ``gradcheck(f, args)`` checks f's derivatives (as
  :func:`autograd_dag.testing.assert_grads_close`) with the session's settings, and a
  failure is an assertion error at your test's line whose message is the check's report;
- the marker ``@pytest.mark.gradcheck(rtol=1e-4, order=2, ...)``, overriding the
  settings for one test (or a class, or a module through ``pytestmark``);
- the settings from the command line (``--gradcheck-rtol 1e-4``) or from
  ``[tool.pytest.ini_options]`` (``gradcheck_rtol = "1e-4"``): seed, atol, rtol, eps,
  order, modes, points, full, batched. The closest wins: a keyword at the call, then the
  marker, then the command line, then the ini file, then the library's defaults;
- ``pytest --gradcheck-report``: a table in the terminal summary of every gradient
  check the session ran (through the fixture or by calling ``check_grads`` or an
  ``assert_*`` form directly), failures first, then by worst error over tolerance.

A test file using it::

    import numpy as np
    import autograd_dag as ad
    import pytest

    def test_layer(gradcheck):
        gradcheck(lambda x, w: ad.tanh(x @ w).sum(), (np.ones((2, 3)), np.full((3, 4), 0.1)))

    @pytest.mark.gradcheck(points=5, order=2)
    def test_at_random_points(gradcheck):
        # args as a function of a seeded numpy Generator: drawn `points` times
        gradcheck(lambda x: ad.sin(x).sum(), lambda rng: (rng.standard_normal(3),))
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from typing import Any, Callable

import numpy as np
import pytest

import autograd_dag

from . import checking, testing
from .check_records import CheckRecord, set_recorder

# Each setting: how a text (ini file, command line) or a marker's value becomes it, and what it means.
_KINDS = {
    "seed": ("int", "seed of the random projections and of the generator the random points are drawn from"),
    "atol": ("float", f"absolute tolerance (default {checking.DEFAULT_ATOL:g})"),
    "rtol": ("float", f"relative tolerance (default {checking.DEFAULT_RTOL:g})"),
    "eps": ("float", f"finite-difference step, times max(1, |x|) (default {checking.DEFAULT_EPS:g})"),
    "order": ("int", "highest order of derivatives checked (default 1; 2 checks second derivatives too)"),
    "modes": ("modes", "modes checked: rev, fwd or rev,fwd (default rev,fwd)"),
    "points": ("int", "number of random points a check whose args is a function of a numpy Generator "
                      "is run at (default 1)"),
    "full": ("bool", "compare whole Jacobians entry by entry instead of random projections (default false)"),
    "batched": ("bool", "also compare vmap of the VJP/JVP with a loop over examples (default false)"),
}
_DEFAULTS: dict[str, Any] = {"seed": 0, "atol": None, "rtol": None, "eps": None, "order": 1,
                             "modes": ("rev", "fwd"), "points": 1, "full": False,
                             "batched": False}
# Where each report's records travel from the test's process (an xdist worker) to the summary.
_PROPERTY = "autograd_dag.gradcheck"
_SESSION_SETTINGS = pytest.StashKey[tuple]()
_MARKER_HELP = ("gradcheck(seed=, atol=, rtol=, eps=, order=, modes=, points=, full=, batched=): settings of the "
                "gradcheck fixture for this test, overriding --gradcheck-* and the gradcheck_* ini keys")


def _coerce(name: str, value: Any, where: str) -> Any:
    """A setting's value from text (ini, command line) or a Python value (a marker); UsageError if invalid."""
    kind = _KINDS[name][0]
    if value is None and _DEFAULTS[name] is None:
        return None   # atol, rtol, eps: the library's default
    try:
        if kind == "modes":
            modes = tuple(m for m in re.split(r"[,\s]+", value) if m) if isinstance(value, str) else tuple(value)
            if not modes or set(modes) - {"rev", "fwd"}:
                raise ValueError
            return modes
        if kind == "bool":
            if isinstance(value, str):
                return {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}[
                    value.strip().lower()]
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError
            return bool(value)
        if kind == "int":
            number = int(value) if isinstance(value, str) else value
            if isinstance(number, bool) or not isinstance(number, (int, np.integer)):
                raise ValueError
            if name in ("order", "points") and number < 1:
                raise ValueError
            return int(number)
        number = float(value)
        if not math.isfinite(number) or number < 0 or (name == "eps" and number == 0):
            raise ValueError
        return number
    except (ValueError, TypeError, KeyError):
        raise pytest.UsageError(f"gradcheck: {where}: {name}={value!r} is not valid; {name}: "
                                f"{_KINDS[name][1]}") from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradcheck", "gradient checks (autograd_dag)")
    for name, (kind, text) in _KINDS.items():
        group.addoption(f"--gradcheck-{name}", dest=f"gradcheck_{name}", default=None, metavar=kind.upper(),
                        help=f"gradcheck fixture: {text}")
        parser.addini(f"gradcheck_{name}", f"gradcheck fixture: {text}", default="")
    group.addoption("--gradcheck-report", dest="gradcheck_report", action="store_true",
                    help="list every gradient check run (test, function, worst error, tolerance, verdict), "
                         "worst first, in the terminal summary")


def _session_settings(config: pytest.Config) -> tuple[dict, dict]:
    """The settings before any marker, and where each came from: the command line, the ini file, the defaults."""
    settings, sources = dict(_DEFAULTS), dict.fromkeys(_DEFAULTS, "default")
    for name in _KINDS:
        ini = config.getini(f"gradcheck_{name}")
        if ini not in ("", None):
            settings[name], sources[name] = _coerce(name, ini, f"ini key gradcheck_{name}"), "ini"
        option = config.getoption(f"gradcheck_{name}")
        if option is not None:
            settings[name], sources[name] = _coerce(name, option, f"--gradcheck-{name}"), "command line"
    return settings, sources


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    # Read here, so that a bad value stops the run at once (a usage error), not in each test.
    config.stash[_SESSION_SETTINGS] = _session_settings(config)
    if config.getoption("gradcheck_report"):
        config.pluginmanager.register(_Report(), "autograd_dag-gradcheck-report")


def pytest_unconfigure(config: pytest.Config) -> None:
    report = config.pluginmanager.get_plugin("autograd_dag-gradcheck-report")
    if report is not None:
        report.close()


class GradCheck:
    """The ``gradcheck`` fixture: gradient checks run with the session's settings.

    ``gradcheck(f, args, **overrides)`` runs :func:`autograd_dag.testing.assert_grads_close`;
    ``gradcheck.run(check, ...)`` runs any check function (one of ``autograd_dag``'s
    ``check_*`` or ``testing.assert_*``), giving it the settings its signature takes; and
    ``gradcheck.<name>(...)`` runs ``testing.assert_<name>`` (or ``autograd_dag.check_<name>``).
    ``args`` may be a function of a numpy Generator returning the tuple of arguments: the
    check then runs at ``points`` points drawn from :attr:`rng` (seeded with ``seed``).
    A failure raises :class:`autograd_dag.testing.GradientMismatch` (an AssertionError)
    whose message is the check's report, then the settings and where each came from.

    Attributes: ``settings`` (dict: seed, atol, rtol, eps, order, modes, points, full, batched),
    ``sources`` (where each setting came from) and ``rng`` (this test's generator).
    """

    def __init__(self, settings: dict, sources: dict):
        self.settings, self.sources = dict(settings), dict(sources)
        self.rng = np.random.default_rng(settings["seed"])

    def grads(self, f: Callable, args, **overrides) -> None:
        """``gradcheck(f, args)`` by name: f's derivatives (our autodiff) against finite differences."""
        __tracebackhide__ = True
        self.run(testing.assert_grads_close, f, args, **overrides)

    __call__ = grads

    def __getattr__(self, name: str) -> Callable:
        check = None if name.startswith("_") else (
            getattr(testing, f"assert_{name}", None) or getattr(autograd_dag, f"check_{name}", None))
        if check is None:
            raise AttributeError(f"gradcheck.{name}: no testing.assert_{name} or check_{name} in autograd_dag")
        return functools.partial(self.run, check)

    def run(self, check: Callable, *args, **overrides) -> Any:
        """Run ``check(*args, **overrides)`` with the settings it accepts (the keywords given win)."""
        __tracebackhide__ = True
        accepted = inspect.signature(check).parameters
        settings, sources = dict(self.settings), dict(self.sources)
        for name in set(overrides) & set(_KINDS):
            settings[name], sources[name] = _coerce(name, overrides.pop(name), "keyword"), "keyword"
        keywords = {name: value for name, value in settings.items()
                    if name in accepted and name not in ("points",) and value is not None}
        bound = inspect.signature(check).bind_partial(*args, **{**keywords, **overrides})
        draw = bound.arguments.get("args")
        points = settings["points"] if callable(draw) else 1
        for k in range(points):
            if callable(draw):
                point = draw(self.rng)
                bound.arguments["args"] = point if isinstance(point, tuple) else (
                    tuple(point) if isinstance(point, list) else (point,))
            try:
                check(*bound.args, **bound.kwargs)
            except AssertionError as exc:
                where = (f"at random point {k + 1} of {points} (args drawn by {getattr(draw, '__name__', 'args')}"
                         f" from gradcheck.rng, seed {settings['seed']}): " if callable(draw) else "")
                raise testing.GradientMismatch(f"{where}{exc}\n  gradcheck settings: " + ", ".join(
                    _shown(name, value, sources[name]) for name, value in settings.items())) from None
        return None


def _shown(name: str, value, source: str) -> str:
    """``rtol=0.0001 (marker)``: a setting as a failure's message lists it (the library's value for None)."""
    value = {"atol": checking.DEFAULT_ATOL, "rtol": checking.DEFAULT_RTOL, "eps": checking.DEFAULT_EPS}.get(
        name) if value is None else value
    text = ",".join(value) if isinstance(value, tuple) else f"{value:g}" if isinstance(value, float) else f"{value}"
    return f"{name}={text}" + ("" if source == "default" else f" ({source})")


@pytest.fixture
def gradcheck(request: pytest.FixtureRequest) -> GradCheck:
    """Gradient checks with the session's settings (--gradcheck-*, gradcheck_* ini keys) and the test's marker.

    ``gradcheck(f, args)``; see :class:`autograd_dag.pytest_plugin.GradCheck`.
    """
    settings, sources = (dict(d) for d in request.config.stash[_SESSION_SETTINGS])
    # The farthest marker first (module, class, then the test), so that the closest one wins.
    for marker in reversed(list(request.node.iter_markers("gradcheck"))):
        if marker.args:
            pytest.fail(f"gradcheck marker: give the settings as keywords, e.g. "
                        f"@pytest.mark.gradcheck(rtol=1e-4); got {marker.args!r}", pytrace=False)
        for name, value in marker.kwargs.items():
            if name not in _KINDS:
                pytest.fail(f"gradcheck marker: unknown setting {name!r}; the settings are "
                            f"{', '.join(_KINDS)}", pytrace=False)
            try:
                settings[name], sources[name] = _coerce(name, value, "marker"), "marker"
            except pytest.UsageError as exc:
                pytest.fail(str(exc), pytrace=False)
    return GradCheck(settings, sources)


class _Report:
    """``--gradcheck-report``: every check's record, attached to its test's report and listed at the end.

    The records travel in the reports' ``user_properties``, so that under pytest-xdist
    the workers' checks reach the summary the controller prints.
    """

    def __init__(self):
        self.pending: list[dict] = []        # checks run since the last test report
        self.records: list[tuple[str, dict]] = []
        self.previous = set_recorder(self.note)

    def note(self, record: CheckRecord) -> None:
        self.pending.append({"check": record.check, "function": record.function, "passed": record.passed,
                             "worst_error": record.worst_error, "tolerance": record.tolerance,
                             "ratio": record.ratio})

    def close(self) -> None:
        set_recorder(self.previous)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.pending:
            report.user_properties.append((_PROPERTY, self.pending))
            self.pending = []
        for name, value in report.user_properties:
            if name == _PROPERTY:
                self.records += [(report.nodeid, r) for r in value]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        records = self.records + [("(outside a test)", r) for r in self.pending]
        failed = sum(not r["passed"] for _, r in records)
        terminalreporter.write_sep("=", f"gradient checks: {len(records)} run, {failed} failed, worst first")
        if not records:
            return
        terminalreporter.write_line(f"{'verdict':7} {'err/tol':>9} {'worst err':>9} {'tolerance':>9}  "
                                    f"check(function)  test")
        # Failures first, then by the error's share of its tolerance (NaN, no comparison, last).
        for nodeid, r in sorted(records, key=lambda e: (e[1]["passed"], math.isnan(e[1]["ratio"]),
                                                        0.0 if math.isnan(e[1]["ratio"]) else -e[1]["ratio"])):
            terminalreporter.write_line(
                f"{'PASSED' if r['passed'] else 'FAILED':7} {r['ratio']:9.2e} {r['worst_error']:9.2e} "
                f"{r['tolerance']:9.2e}  {r['check']}({r['function']})  {nodeid}",
                red=not r["passed"])
