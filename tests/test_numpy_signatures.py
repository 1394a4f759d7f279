"""numpy's positional order: every public function of autograd_dag (and ad.linalg) named after a numpy
function, and every Tensor method named after an ndarray method, takes its positional arguments as
numpy does, or refuses them.

The rule checked: each positional parameter of ours has numpy's position and, where both can be
passed by keyword, numpy's name; every parameter beyond numpy's positional ones is keyword-only.
So ``ad.std(t, None, True)`` cannot silently mean ddof=1 (numpy reads True as dtype=).
"""

import inspect

import numpy as np
import pytest

import autograd_dag as ad

P = inspect.Parameter
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD, P.VAR_POSITIONAL)

# numpy's documented positional order where inspect.signature does not show it ("*x": *args).
DOCUMENTED = {
    # np.arange(0, 5, 1, float) runs; its text signature marks dtype keyword-only
    "arange": [("start", P.POSITIONAL_ONLY), ("stop", P.POSITIONAL_OR_KEYWORD),
               ("step", P.POSITIONAL_OR_KEYWORD), ("dtype", P.POSITIONAL_OR_KEYWORD)],
    # np.einsum(subscripts, *operands, out=None, dtype=None, order='K', casting='safe', optimize=False)
    "einsum": [("subscripts", P.POSITIONAL_OR_KEYWORD), ("operands", P.VAR_POSITIONAL)],
}
# ndarray methods whose signature is (self, /, axis=None, ..., **kwargs) in inspect; their documented order.
# (ndarray.any and .all take (axis, dtype, out, keepdims) at run time, checked below, unlike their docs.)
_KW = P.POSITIONAL_OR_KEYWORD
METHODS_DOCUMENTED = {
    "max": ["axis", "out", "keepdims", "initial", "where"],
    "min": ["axis", "out", "keepdims", "initial", "where"],
    "sum": ["axis", "dtype", "out", "keepdims", "initial", "where"],
    "prod": ["axis", "dtype", "out", "keepdims", "initial", "where"],
    "mean": ["axis", "dtype", "out", "keepdims"],
    "std": ["axis", "dtype", "out", "ddof", "keepdims"],
    "var": ["axis", "dtype", "out", "ddof", "keepdims"],
    "any": ["axis", "dtype", "out", "keepdims"],
    "all": ["axis", "dtype", "out", "keepdims"],
}
# Named like numpy's, but not numpy's function: said in its docstring.
NOT_NUMPYS = {
    ("ad", "trace"),  # ad.trace(f, *args) records a Program; numpy's trace is ad.linalg.trace / Tensor.trace
    ("ad.nn.functional", "identity"),  # the identity activation, not np.identity(n), the identity matrix
}


def numpy_positionals(fn):
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values() if p.kind in POSITIONAL]


def mismatches(ours_fn, theirs, drop_self=False):
    ours = [p for p in inspect.signature(ours_fn).parameters.values() if p.kind in POSITIONAL]
    if drop_self:
        ours = ours[1:]
    found = []
    for i, p in enumerate(ours):
        if i >= len(theirs):
            found.append(f"{p.name!r} is positional {i} where numpy takes {len(theirs)} positionals")
            continue
        name, kind = theirs[i]
        if (p.kind == P.VAR_POSITIONAL) != (kind == P.VAR_POSITIONAL):
            found.append(f"{p.name!r} ({p.kind.description}) at {i} where numpy has {name!r} ({kind.description})")
        elif p.kind == kind == P.POSITIONAL_OR_KEYWORD and p.name != name:
            found.append(f"{p.name!r} at {i} where numpy has {name!r} (both can be passed by keyword)")
        if p.kind == P.VAR_POSITIONAL:
            break
    return found


def named_after_numpy():
    seen = []
    for prefix, module in (("ad", ad), ("ad.linalg", ad.linalg), ("ad.nn.functional", ad.nn.functional)):
        for name in sorted(module.__all__):
            fn = getattr(module, name)
            if isinstance(fn, type) or not callable(fn) or (prefix, name) in NOT_NUMPYS:
                continue
            npm = np.linalg if module is ad.linalg else np
            target = next((getattr(m, name) for m in (npm, np.linalg, np.fft) if hasattr(m, name)), None)
            if target is not None:
                seen.append((f"{prefix}.{name}", fn, name, target))
    return seen


def test_every_function_named_after_numpy_takes_numpys_positional_order():
    checked, bad = 0, []
    for label, fn, name, target in named_after_numpy():
        theirs = DOCUMENTED.get(name) or numpy_positionals(target)
        bad += [f"{label}{inspect.signature(fn)}: {m}" for m in mismatches(fn, theirs)]
        checked += 1
    assert checked > 150, checked  # the walk found the functions (numpy 2: ~170 here)
    assert not bad, "\n".join(bad)


def test_every_tensor_method_named_after_ndarray_takes_its_positional_order():
    checked, bad = 0, []
    for name in sorted(dir(ad.Tensor)):
        ours = getattr(ad.Tensor, name)
        if name.startswith("_") or not callable(ours) or not hasattr(np.ndarray, name):
            continue
        if name in METHODS_DOCUMENTED:
            theirs = [(n, _KW) for n in METHODS_DOCUMENTED[name]]
        else:
            theirs = numpy_positionals(getattr(np.ndarray, name))[1:]
        bad += [f"Tensor.{name}: {m}" for m in mismatches(ours, theirs, drop_self=True)]
        checked += 1
    assert checked > 25, checked
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", ["any", "all"])
def test_ndarray_any_and_all_take_dtype_positionally_as_assumed_above(name):
    # The table above says ndarray.any(axis, dtype, out, keepdims); numpy's own run decides.
    a = np.ones((2, 3))
    assert getattr(a, name)(0, None, None, True).shape == (1, 3)
    t = ad.Tensor(a)
    assert getattr(t, name)(0, None, None, True).shape == (1, 3)


def test_std_and_var_refuse_numpys_dtype_position_instead_of_reading_it_as_ddof_or_keepdims():
    x = np.random.default_rng(0).standard_normal((3, 4))
    t = ad.Tensor(x)
    # ad.std(t, None, True) meant ddof=1; numpy reads True as dtype=.
    for fn in (ad.std, ad.var, ad.sum, ad.mean, ad.max, ad.min, ad.prod, ad.any, ad.all, ad.median,
               ad.nansum, ad.nanmean, ad.nanmax, ad.nanmin):
        with pytest.raises(TypeError, match="positional argument"):
            fn(t, None, True)
    # by keyword, numpy's meaning; a tolerance as std/var reduce in their own order (a few ulps)
    np.testing.assert_allclose(ad.std(t, 0, ddof=1, keepdims=True).value, np.std(x, 0, ddof=1, keepdims=True),
                               rtol=1e-14)
    np.testing.assert_allclose(ad.var(t, None, ddof=1).value, np.var(x, None, ddof=1), rtol=1e-14)
    np.testing.assert_allclose(t.std(0, None, None, 1, True).value, np.std(x, 0, None, None, 1, True),
                               rtol=1e-14)
