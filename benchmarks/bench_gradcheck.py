"""Gradient checkers compared on the same custom rules, right and deliberately wrong.

Each rule is written as a custom rule in each framework: ``ad.primitive`` with
its VJP; ``torch.autograd.Function`` with its ``backward``; ``jax.custom_vjp``;
for scipy a hand-written numpy gradient of the scalar u·F(x) (u fixed, random).
Every checker runs with its defaults, in reverse mode (the only mode a
torch Function / jax custom_vjp rule has), at the same float64 point:

  ours    ``ad.check_grads(f, (x,), modes=("rev",), order=k)``
  torch   ``torch.autograd.gradcheck`` (and ``gradgradcheck`` for order 2)
  jax     ``jax.test_util.check_grads(f, (x,), order=k, modes=["rev"])``
  scipy   ``scipy.optimize.check_grad(u·F, hand-written gradient, x)``; scipy
          returns a number, not a verdict: it counts as caught when that
          number exceeds 1e-5 · max(1, ‖gradient‖) (our default rtol). Order 2:
          the gradient checked as a function, against the hand-written Hessian.

The rules (F: R^n -> R^m):
  jacobian  tanh(A x), A 60×60 (a 3,600-entry Jacobian); wrong: entry (3, 7)
            of the Jacobian off by 1e-3 relative
  kink      x ↦ x (x > 0), −x/2 (x < 0), at points off the kink; wrong: the
            slope's sign on the negative side (+1/2)
  hessian   x sin x, the VJP calling a rule for F' = sin x + x cos x whose own
            VJP is F'' = 2 cos x − x sin x; wrong: the term −x sin x missing
            (checked at order 2)
  scaled    exp(x) at x in [10, 20] (values ~1e4 to ~5e8): right only, a
            badly scaled function for false alarms

"f calls" counts the Python calls of the checked function (scipy: of u·F;
for order 2, of u·F' too), analytic passes included. Prints one table per
rule and a summary; ``--fast``: ours only, small sizes (for the test suite).

    python benchmarks/bench_gradcheck.py [--fast]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import autograd_dag as ad

ROW, COL, WRONG_BY = 3, 7, 1e-3


class Problem:
    """The shared numbers: the matrix, the points, the output weights u (seeded)."""

    def __init__(self, n: int):
        rng = np.random.default_rng(0)
        self.n = n
        self.A = rng.standard_normal((n, n)) / np.sqrt(n)
        self.x_jac = rng.standard_normal(n)
        x = rng.standard_normal(8)
        self.x_kink = np.where(np.abs(x) < 0.1, 0.5, x)      # off the kink, both sides
        self.x_hess = rng.uniform(-2.0, 2.0, 6)
        self.x_scaled = rng.uniform(10.0, 20.0, 5)
        self.u = {name: rng.standard_normal(m) for name, m in
                  (("jacobian", n), ("kink", 8), ("hessian", 6), ("scaled", 5))}

    def point(self, family: str) -> np.ndarray:
        return {"jacobian": self.x_jac, "kink": self.x_kink, "hessian": self.x_hess,
                "scaled": self.x_scaled}[family]


# (family, wrong, order): three right rules' mistakes and four right rules.
RULES = [("jacobian", False, 1), ("kink", False, 1), ("hessian", False, 2), ("scaled", False, 1),
         ("jacobian", True, 1), ("kink", True, 1), ("hessian", True, 2)]


class Counted:
    """f with a count of its calls."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, *a):
        self.calls += 1
        return self.f(*a)


# ---------------------------------------------------------------- ours
def ours_function(P: Problem, family: str, wrong: bool):
    tag = f"bench_{family}_{int(wrong)}"
    if family == "jacobian":
        A, e = P.A, np.eye(P.n)[COL]

        def vjp(ct, out, x):
            g = (ct * (1.0 - out * out)) @ A
            return (g + e * (WRONG_BY * (1.0 - out[ROW] ** 2) * A[ROW, COL] * ct[ROW]),) if wrong else (g,)
        return ad.primitive(tag, lambda x: np.tanh(A @ x), vjp=vjp, replace=True)
    if family == "kink":
        neg = 0.5 if wrong else -0.5
        return ad.primitive(tag, lambda x: np.where(x > 0, x, -0.5 * x), replace=True,
                            vjp=lambda ct, out, x: (ct * np.where(np.asarray(getattr(x, "value", x)) > 0, 1.0, neg),))
    if family == "hessian":
        d2 = (lambda x: 2.0 * ad.cos(x)) if wrong else (lambda x: 2.0 * ad.cos(x) - x * ad.sin(x))
        dxsin = ad.primitive(tag + "_d", lambda x: np.sin(x) + x * np.cos(x), replace=True,
                             vjp=lambda ct, out, x: (ct * d2(x),))
        return ad.primitive(tag, lambda x: x * np.sin(x), replace=True, vjp=lambda ct, out, x: (ct * dxsin(x),))
    return ad.primitive(tag, np.exp, replace=True, vjp=lambda ct, out, x: (ct * out,))


def run_ours(P: Problem, family: str, wrong: bool, order: int):
    f = Counted(ours_function(P, family, wrong))
    try:
        ad.check_grads(f, (P.point(family),), order=order, modes=("rev",))
        return False, f.calls
    except ad.GradientCheckError:
        return True, f.calls


# ---------------------------------------------------------------- torch
def run_torch(P: Problem, family: str, wrong: bool, order: int):
    import torch

    x = torch.tensor(P.point(family), dtype=torch.float64, requires_grad=True)
    A = torch.tensor(P.A)

    class Jac(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = torch.tanh(A @ x)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            gx = A.T @ (g * (1 - out * out))
            if wrong:
                e = torch.zeros_like(gx)
                e[COL] = 1.0
                gx = gx + e * (WRONG_BY * (1 - out[ROW] ** 2) * A[ROW, COL] * g[ROW])
            return gx

    class Kink(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.where(x > 0, x, -0.5 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * torch.where(x > 0, 1.0, 0.5 if wrong else -0.5)

    class DXSin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(x) + x * torch.cos(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (2 * torch.cos(x) - (0 if wrong else x * torch.sin(x)))

    class XSin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * torch.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * DXSin.apply(x)

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = torch.exp(x)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    fn = {"jacobian": Jac, "kink": Kink, "hessian": XSin, "scaled": Exp}[family].apply
    f = Counted(fn)
    ok = torch.autograd.gradcheck(f, (x,), raise_exception=False)
    if order == 2:
        ok = ok and torch.autograd.gradgradcheck(f, (x,), raise_exception=False)
    return not ok, f.calls


# ---------------------------------------------------------------- jax
def run_jax(P: Problem, family: str, wrong: bool, order: int):
    import jax
    import jax.numpy as jnp
    from jax.test_util import check_grads

    jax.config.update("jax_enable_x64", True)
    A = jnp.asarray(P.A)

    if family == "jacobian":
        @jax.custom_vjp
        def fn(x):
            return jnp.tanh(A @ x)

        def bwd(out, g):
            gx = A.T @ (g * (1 - out * out))
            if wrong:
                gx = gx.at[COL].add(WRONG_BY * (1 - out[ROW] ** 2) * A[ROW, COL] * g[ROW])
            return (gx,)
        fn.defvjp(lambda x: (fn(x), fn(x)), bwd)
    elif family == "kink":
        @jax.custom_vjp
        def fn(x):
            return jnp.where(x > 0, x, -0.5 * x)
        fn.defvjp(lambda x: (fn(x), x), lambda x, g: (g * jnp.where(x > 0, 1.0, 0.5 if wrong else -0.5),))
    elif family == "hessian":
        @jax.custom_vjp
        def dxsin(x):
            return jnp.sin(x) + x * jnp.cos(x)
        dxsin.defvjp(lambda x: (dxsin(x), x),
                     lambda x, g: (g * (2 * jnp.cos(x) - (0 if wrong else x * jnp.sin(x))),))

        @jax.custom_vjp
        def fn(x):
            return x * jnp.sin(x)
        fn.defvjp(lambda x: (fn(x), x), lambda x, g: (g * dxsin(x),))
    else:
        @jax.custom_vjp
        def fn(x):
            return jnp.exp(x)
        fn.defvjp(lambda x: (fn(x), fn(x)), lambda out, g: (g * out,))

    f = Counted(fn)
    try:
        check_grads(f, (jnp.asarray(P.point(family)),), order=order, modes=["rev"])
        return False, f.calls
    except AssertionError:
        return True, f.calls


# ---------------------------------------------------------------- scipy
def run_scipy(P: Problem, family: str, wrong: bool, order: int):
    from scipy.optimize import check_grad

    u, A = P.u[family], P.A
    if family == "jacobian":
        F = lambda x: np.tanh(A @ x)  # noqa: E731

        def vjp(x):
            out = F(x)
            g = A.T @ (u * (1 - out * out))
            if wrong:
                g[COL] += WRONG_BY * (1 - out[ROW] ** 2) * A[ROW, COL] * u[ROW]
            return g
        stages = [(F, vjp)]
    elif family == "kink":
        stages = [(lambda x: np.where(x > 0, x, -0.5 * x), lambda x: u * np.where(x > 0, 1.0, 0.5 if wrong else -0.5))]
    elif family == "hessian":
        dF = lambda x: np.sin(x) + x * np.cos(x)  # noqa: E731
        d2F = (lambda x: 2 * np.cos(x)) if wrong else (lambda x: 2 * np.cos(x) - x * np.sin(x))
        stages = [(lambda x: x * np.sin(x), lambda x: u * dF(x)), (dF, lambda x: u * d2F(x))]
    else:
        stages = [(np.exp, lambda x: u * np.exp(x))]
    caught, calls = False, 0
    for F_k, grad_k in stages:
        fun = Counted(lambda x, F_k=F_k: float(u @ F_k(x)))
        x = P.point(family)
        err = check_grad(fun, grad_k, x)
        caught |= bool(err > 1e-5 * max(1.0, float(np.linalg.norm(grad_k(x)))))
        calls += fun.calls
    return caught, calls


CHECKERS = {"ours (ad.check_grads)": run_ours, "torch.autograd.gradcheck": run_torch,
            "jax.test_util.check_grads": run_jax, "scipy.optimize.check_grad": run_scipy}
REQUIRES = {"torch.autograd.gradcheck": "torch", "jax.test_util.check_grads": "jax",
            "scipy.optimize.check_grad": "scipy"}


def available(name: str) -> bool:
    module = REQUIRES.get(name)
    if module is None:
        return True
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def measure(n: int, checkers) -> dict:
    """{checker: [(family, wrong, caught, calls, seconds)]} over RULES."""
    P = Problem(n)
    results = {}
    for name in checkers:
        rows = []
        for family, wrong, order in RULES:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                caught, calls = CHECKERS[name](P, family, wrong, order)
            rows.append((family, wrong, caught, calls, time.perf_counter() - start))
        results[name] = rows
    return results


def summary(results: dict) -> str:
    n_wrong = sum(w for _, w, _ in RULES)
    lines = [f"| checker | wrong rules caught (of {n_wrong}) | false alarms (of {len(RULES) - n_wrong}) "
             f"| f calls | seconds |", "|---|---|---|---|---|"]
    for name, rows in results.items():
        caught = [f for f, w, c, _, _ in rows if w and c]
        alarms = [f for f, w, c, _, _ in rows if not w and c]
        lines.append(f"| {name} | {len(caught)} ({', '.join(caught) or '-'}) | {len(alarms)} "
                     f"({', '.join(alarms) or '-'}) | {sum(r[3] for r in rows)} | {sum(r[4] for r in rows):.2f} |")
    return "\n".join(lines)


def detail(results: dict) -> str:
    names = list(results)
    lines = ["| rule | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for k, (family, wrong, order) in enumerate(RULES):
        cells = []
        for name in names:
            _, _, caught, calls, _ = results[name][k]
            verdict = ("caught" if caught else "MISSED") if wrong else ("FALSE ALARM" if caught else "passes")
            cells.append(f"{verdict}, {calls} calls")
        lines.append(f"| {family} ({'wrong' if wrong else 'right'}, order {order}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="ours only, a 12×12 Jacobian (for the test suite)")
    args = parser.parse_args(argv)
    checkers = ["ours (ad.check_grads)"] if args.fast else [c for c in CHECKERS if available(c)]
    missing = [c for c in CHECKERS if c not in checkers and not args.fast]
    results = measure(12 if args.fast else 60, checkers)
    print(detail(results))
    print()
    print(summary(results))
    if missing:
        print(f"\nnot installed, skipped: {', '.join(missing)}")
    return results


if __name__ == "__main__":
    main()
