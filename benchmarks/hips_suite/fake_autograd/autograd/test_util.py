"""``autograd.test_util`` renamed: ``check_grads`` and ``combo_check`` call autograd_dag.check_grads.

HIPS's ``check_grads(fun, argnum, modes, order)(*args, **kwargs)`` checks
``fun`` in the arguments ``argnum`` (the others and the keywords held fixed);
here the same call goes to ``ad.check_grads`` (its own tolerances and
finite-difference steps). Every call is one *case*, recorded in ``RECORD``
with its outcome, so that the runner can count cases, not only test
functions: a failed case is remembered and the test continues with its next
case (the runner's pytest plugin fails the test afterwards). A case with a
complex argument is not run: autograd_dag refuses complex numbers in
differentiation, so it is recorded as excluded.
"""

import itertools
import re

import numpy as np

import autograd_dag as _ad

RECORD = []          # dicts: test, function, outcome ("pass" / "fail" / "complex"), cause
CURRENT = {"test": None}


def _is_complex(x) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_is_complex(v) for v in x)
    if isinstance(x, dict):
        return any(_is_complex(v) for v in x.values())
    if isinstance(x, _ad.Tensor):
        x = x.value
    return isinstance(x, complex) or np.iscomplexobj(x)


def cause_of(exc: BaseException) -> tuple[str, str]:
    """(outcome, cause) of an exception raised while checking a case."""
    text = str(exc)
    if "is complex" in text or "real numbers only" in text or "real floating-point" in text:
        return "complex", "complex value"
    # check_grads reports a derivative that could not be computed as a failed check: the cause is inside.
    match = re.search(r"(np\.[\w.]+)( with [\w, ]+| \(method '\w+'\))? has no rule", text)
    if match:
        return "fail", f"no rule for {match.group(1)}{match.group(2) or ''}"
    if "converting a Tensor" in text:
        return "fail", "numpy conversion of a Tensor (np.array / asarray)"
    inner = re.search(r"could not be computed: (.*)", text)
    if inner:
        return "fail", "derivative not computable: " + _first_line(inner.group(1))
    if isinstance(exc, _ad.GradientCheckError):
        return "fail", "derivative disagrees with finite differences"
    return "fail", f"{type(exc).__name__}: {_first_line(text)}"


def _first_line(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    first = re.sub(r" \(at [^)]*\)", "", first)
    first = re.sub(r"\[[^\]]*\]|\([^)]*\)", "(..)", first)
    return first[:90]


def _as_float(x):
    """Integer arrays as float64 (HIPS differentiates them as floats); tuples and lists kept as such."""
    if isinstance(x, (list, tuple)):
        return type(x)(_as_float(v) for v in x)
    if isinstance(x, (bool, np.bool_)):
        return x
    arr = np.asarray(x)
    return arr.astype(np.float64) if arr.dtype.kind in "iu" else arr


def check_grads(fun, argnum=0, modes=None, order=2):
    """Returns ``check(*args, **kwargs)``: ``ad.check_grads`` of fun in ``args[argnum]``."""
    argnums = (argnum,) if isinstance(argnum, int) else tuple(argnum)
    modes = tuple(modes) if modes is not None else ("fwd", "rev")

    def check(*args, **kwargs):
        entry = {"test": CURRENT["test"], "function": getattr(fun, "__name__", "f")}
        RECORD.append(entry)
        if _is_complex(args) or _is_complex(kwargs):
            entry.update(outcome="complex", cause="complex argument")
            return

        def partial_fun(*wrt):
            full = list(args)
            for i, v in zip(argnums, wrt):
                full[i] = v
            return fun(*full, **kwargs)
        partial_fun.__name__ = entry["function"]
        try:
            _ad.check_grads(partial_fun, tuple(_as_float(args[i]) for i in argnums), order=order, modes=modes)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded with its cause
            entry["outcome"], entry["cause"] = cause_of(exc)
            entry["message"] = str(exc)[:2000]
            return
        entry["outcome"] = "pass"

    return check


def combo_check(fun, *args, **kwargs):
    """Every combination of the given argument lists and keyword values, each one case."""
    def check_all(*arg_lists, **kwarg_lists):
        keys = list(kwarg_lists)
        for combo in itertools.product(*arg_lists):
            for values in itertools.product(*[kwarg_lists[k] for k in keys]):
                check_grads(fun, *args, **kwargs)(*combo, **dict(zip(keys, values)))
    return check_all
