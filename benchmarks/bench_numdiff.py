"""Accuracy of numerical Jacobians against exact ones: fixed steps, our checker's old step, the adaptive engine, numdifftools.

Each test function maps a 1-D float64 array to a 1-D array and has an exact
Jacobian. For each method the table gives the max relative error over the
Jacobian's entries (|est − exact| / |exact|; an entry whose exact value is 0 is
measured relative to the Jacobian's largest entry) and the number of evaluations
of f. Methods:

  fixed 1e-6     (f(x + h) − f(x − h)) / 2h with h = 1e-6 for every entry
  old checker    checking.py before the engine: h = 1e-6·max(1, |x|), steps h and h/2 extrapolated once
  numdiff        autograd_dag.numdiff.jacobian (adaptive steps, Richardson, least error estimate)
  numdifftools   numdifftools.Jacobian(f) with its defaults (if installed)

"bound" says on how many entries the engine's error estimate was at least its true error.

Run: PYTHONPATH=. python benchmarks/bench_numdiff.py
"""

from __future__ import annotations

import warnings

import numpy as np

from autograd_dag.checking import DEFAULT_EPS, _extrapolated, _step_scale
from autograd_dag.numdiff import jacobian

try:
    import numdifftools
except ImportError:  # a peer for the comparison only
    numdifftools = None


def _inverse_case(offset):
    A = np.array([[1.0, 1.0], [1.0, 1.0 + offset]]) + np.array([[0.3, 0.0], [0.0, 0.0]])

    def f(x):
        return np.linalg.inv(x.reshape(2, 2)).ravel()

    def exact(x):
        inv = np.linalg.inv(x.reshape(2, 2))
        # d inv(A)_ij / d A_kl = -inv_ik inv_lj
        return -np.einsum("ik,lj->ijkl", inv, inv).reshape(4, 4)
    return f, exact, A.ravel()


def _cases():
    """(name, kind, f, exact Jacobian, x): the fixed set of test functions."""
    M = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0], [0.7, -0.4, 1.1]])
    cases = [
        ("exp", "smooth", np.exp, lambda x: np.diag(np.exp(x)), np.array([-1.0, 0.5, 2.0])),
        ("sin(x)·cos(Mx)", "smooth", lambda x: np.sin(x) * np.cos(M @ x),
         lambda x: np.diag(np.cos(x) * np.cos(M @ x)) - (np.sin(x) * np.sin(M @ x))[:, None] * M,
         np.array([0.3, -1.2, 2.5])),
        ("polynomial", "smooth", lambda x: np.array([x[0] ** 3 * x[1] - 2 * x[1] ** 2, x[0] * x[1] * x[2] + x[2] ** 4]),
         lambda x: np.array([[3 * x[0] ** 2 * x[1], x[0] ** 3 - 4 * x[1], 0.0],
                             [x[1] * x[2], x[0] * x[2], x[0] * x[1] + 4 * x[2] ** 3]]),
         np.array([1.5, -0.7, 2.0])),
        ("x·sin(x/1e6), x~1e6", "badly scaled", lambda x: x * np.sin(x * 1e-6),
         lambda x: np.diag(np.sin(x * 1e-6) + x * 1e-6 * np.cos(x * 1e-6)), np.array([1.3e6, 2.7e6])),
        ("sin(1e6·x), x~1e-6", "badly scaled", lambda x: np.sin(1e6 * x),
         lambda x: np.diag(1e6 * np.cos(1e6 * x)), np.array([1.1e-6, 2.3e-6])),
        ("exp(1000·x)", "badly scaled", lambda x: np.exp(1000 * x),
         lambda x: np.diag(1000 * np.exp(1000 * x)), np.array([0.01, -0.005])),
        ("1/(x-1), x-1 = 1e-3", "near-singular", lambda x: 1 / (x - 1),
         lambda x: np.diag(-1 / (x - 1) ** 2), np.array([1.001, 0.999])),
        ("log, x ~ 1e-4", "near-singular", np.log, lambda x: np.diag(1 / x), np.array([1e-4, 1e-3])),
        ("sqrt, x ~ 1e-5", "near-singular", np.sqrt, lambda x: np.diag(0.5 / np.sqrt(x)), np.array([1e-5, 1e-4])),
    ]
    f, exact, x = _inverse_case(1e-4)
    cases.append(("inv(A), cond ~ 1e5", "near-singular", f, exact, x))
    return cases


class Counted:
    """f with a count of its evaluations."""

    def __init__(self, f):
        self.f, self.n = f, 0

    def __call__(self, x):
        self.n += 1
        return self.f(x)


def fixed_step(f, x, h=DEFAULT_EPS):
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, axis=1)


def old_checker(f, x, eps=DEFAULT_EPS):
    # The column loop of checking._difference_jacobians before the engine, on plain arrays.
    steps = eps * _step_scale(x)
    cols = []
    for j in range(x.size):
        def moved(step):
            y = x.copy()
            y[j] += step
            return f(y)
        h = steps[j]
        cols.append(_extrapolated((moved(h) - moved(-h)) / (2 * h), (moved(h / 2) - moved(-h / 2)) / h))
    return np.stack(cols, axis=1)


def max_rel_error(est, exact) -> float:
    est, exact = np.atleast_2d(est), np.atleast_2d(exact)
    scale = np.where(exact != 0, np.abs(exact), np.max(np.abs(exact)))
    return float(np.max(np.abs(est - exact) / scale))


def main():
    warnings.simplefilter("ignore")  # steps that leave f's domain give NaN and are discarded
    methods = ["fixed 1e-6", "old checker", "numdiff"] + (["numdifftools"] if numdifftools else [])
    header = f"{'function':24} {'kind':14}" + "".join(f" {m:>12} {'evals':>6}" for m in methods) + "  bound"
    print(header)
    print("-" * len(header))
    worst = {m: 0.0 for m in methods}
    for name, kind, f, exact, x in _cases():
        J = exact(x)
        row = f"{name:24} {kind:14}"
        for m in methods:
            cf = Counted(f)
            if m == "fixed 1e-6":
                est = fixed_step(cf, x)
            elif m == "old checker":
                est = old_checker(cf, x)
            elif m == "numdiff":
                result = jacobian(cf, (x,))
                est, err = result.value[0], result.error[0]
            else:
                est = numdifftools.Jacobian(cf)(x)
            e = max_rel_error(np.reshape(est, J.shape), J)
            worst[m] = max(worst[m], e)
            row += f" {e:12.1e} {cf.n:6d}"
        true = np.abs(np.reshape(jacobian(f, (x,)).value[0], J.shape) - J)
        row += f"  {int(np.sum(true <= err.reshape(J.shape)))}/{J.size}"
        print(row)
    print("-" * len(header))
    print(f"{'worst':39}" + "".join(f" {worst[m]:12.1e} {'':6}" for m in methods))


if __name__ == "__main__":
    main()
