"""A record of the gradient checks run: each check's verdict and its worst error, for whoever listens.

A check function is wrapped in :func:`recorded`, and each comparison it makes of an
analytic value with a numeric one calls :func:`note_comparison` with the error and the
error allowed. When the outermost check returns (or fails), one :class:`CheckRecord` goes
to the recorder installed with :func:`set_recorder` (the pytest plugin's, for
``pytest --gradcheck-report``); with none installed, nothing is kept and a check costs
one context-variable lookup more.

A check run inside another (``check_grads`` at order 2 checks its derivatives with
itself; a check of a hand-written gradient may call ``check_grads``) adds its
comparisons to the outer check's record: the report lists what the user called.
"""

from __future__ import annotations

import contextvars
import functools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import GradientCheckError

__all__ = ["CheckRecord", "note_comparison", "recorded", "set_recorder"]


@dataclass
class CheckRecord:
    """One check as called: its name, f's name, the verdict, and the comparison nearest to failing.

    ``worst_error`` and ``tolerance`` are the absolute error |analytic − numeric| and the
    error allowed (atol + rtol·|value|) of the comparison with the largest ratio of the two
    (``ratio``); NaN when no comparison was made (a check refused before comparing).
    A passing check may have made comparisons beyond their tolerance that a later look
    settled (a finer step across a kink, the entries of a Jacobian after a projection):
    its worst is the worst of those within tolerance, as they decided the verdict.

    Example:
        >>> r = CheckRecord("check_grads", "f", passed=True)
        >>> r.note(2e-7, 1e-6); (r.worst_error, r.ratio)
        (2e-07, 0.2)
    """
    check: str
    function: str
    passed: bool = True
    message: str = ""                   # the failure's report (empty when the check passed)
    comparisons: list = field(default_factory=list)   # (error, allowed) of every comparison

    def note(self, error: float, allowed: float) -> None:
        self.comparisons.append((float(error), float(allowed)))

    def _worst(self) -> tuple[float, float]:
        within = [c for c in self.comparisons if _ratio(*c) <= 1.0]
        pool = within if self.passed and within else self.comparisons
        return max(pool, key=lambda c: _ratio(*c), default=(math.nan, math.nan))

    @property
    def worst_error(self) -> float:
        return self._worst()[0]

    @property
    def tolerance(self) -> float:
        return self._worst()[1]

    @property
    def ratio(self) -> float:
        return _ratio(*self._worst())


def _ratio(error: float, allowed: float) -> float:
    # A non-finite error (a NaN derivative) is as bad as it gets; a zero tolerance allows only zero.
    if math.isnan(error) and math.isnan(allowed):
        return math.nan
    if not math.isfinite(error):
        return math.inf
    return error / allowed if allowed > 0 else (0.0 if error == 0 else math.inf)


_recorder: Callable[[CheckRecord], None] | None = None
# The records of the checks running now, outermost first (a check may run inside another).
_open: contextvars.ContextVar[tuple[CheckRecord, ...]] = contextvars.ContextVar("autograd_dag_checks", default=())


def set_recorder(recorder: Callable[[CheckRecord], None] | None) -> Callable[[CheckRecord], None] | None:
    """Install the function every finished check's :class:`CheckRecord` is given to; returns the previous one.

    One recorder at a time, so that a pytest run inside a test (pytester) records
    its own checks only; the caller restores the previous one when done.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag.check_records import set_recorder
        >>> seen = []; previous = set_recorder(seen.append)
        >>> ad.check_grads(lambda x: (x * x).sum(), (np.ones(3),))
        >>> _ = set_recorder(previous)
        >>> seen[0].check, seen[0].passed, seen[0].ratio < 1
        ('check_grads', True, True)
    """
    global _recorder
    previous, _recorder = _recorder, recorder
    return previous


def note_comparison(error, allowed) -> None:
    """Tell the running check's record of a comparison: errors |analytic − numeric| and their allowances.

    ``error`` and ``allowed`` are numbers or arrays of the same shape (a Jacobian's
    entries); the entry with the largest error/allowed ratio is kept. Outside a
    recorded check, or with no recorder, it does nothing.

    Example:
        >>> note_comparison(1e-9, 1e-6)   # no check running: nothing happens
    """
    stack = _open.get()
    if not stack:
        return
    error, allowed = np.asarray(error, dtype=np.float64), np.asarray(allowed, dtype=np.float64)
    if error.size == 0:
        return
    ratio = np.where(np.isfinite(error), error / np.where(allowed > 0, allowed, np.nan), np.inf)
    ratio = np.where(np.isnan(ratio), np.where(error == 0, 0.0, np.inf), ratio)
    k = int(np.argmax(ratio))
    stack[0].note(error.flat[k], np.broadcast_to(allowed, error.shape).flat[k])


def recorded(check: Callable) -> Callable:
    """``check`` reporting a :class:`CheckRecord` to the recorder each time it is called from outside a check.

    ``check`` takes the function checked first (or as ``f=``) and raises :class:`GradientCheckError`
    (or an ``AssertionError``) when it fails; other errors (a bad option) are not a
    verdict and leave no record.

    Example:
        >>> @recorded
        ... def check_positive(f, x):
        ...     note_comparison(max(0.0, -f(x)), 0.0)
        >>> check_positive(abs, -2.0)
    """
    @functools.wraps(check)
    def run(*args, **kwargs):
        stack = _open.get()
        if stack or _recorder is None:
            return check(*args, **kwargs)
        f = args[0] if args else kwargs.get("f")
        record = CheckRecord(check.__name__, getattr(f, "__name__", type(f).__name__))
        token, verdict = _open.set((record,)), False
        try:
            result = check(*args, **kwargs)
            verdict = True
        except (GradientCheckError, AssertionError) as exc:
            record.passed, record.message, verdict = False, str(exc), True
            raise
        finally:
            _open.reset(token)
            # No verdict (a bad option raised another error): nothing was checked, nothing is recorded.
            if verdict and _recorder is not None:
                _recorder(record)
        return result
    return run
