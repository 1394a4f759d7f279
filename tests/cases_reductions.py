"""Table of cases for mean, var, max, min, logsumexp, softargmax and argmax.

Each ``ref`` is the seed's formula written directly in numpy (sorting for the
extrema, exp/log for the soft ones), never the code under test.
"""

import numpy as np

from tests.cases import Case
from autograd_dag.primitives import fused as F
from autograd_dag.primitives import reductions as R


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _over_last(x, axis, keepdims, fn):
    """fn applied along the last axis after moving ``axis`` (None, int or tuple) there."""
    axes = tuple(range(x.ndim)) if axis is None else \
        tuple(a % x.ndim for a in ((axis,) if np.isscalar(axis) else axis))
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes)).reshape([x.shape[a] for a in rest] + [int(np.prod([x.shape[a] for a in axes]))])
    out = fn(moved)
    if keepdims:
        out = out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return out


def _mean_ref(axis=None, keepdims=False):
    return lambda x: _over_last(x, axis, keepdims, lambda m: m.sum(-1) / m.shape[-1])


def _var_ref(axis=None, keepdims=False):
    def ref(x):
        def v(m):
            c = m - m.sum(-1, keepdims=True) / m.shape[-1]
            return (c * c).sum(-1) / m.shape[-1]
        return _over_last(x, axis, keepdims, v)
    return ref


def _max_ref(axis=None, keepdims=False):
    return lambda x: _over_last(x, axis, keepdims, lambda m: np.sort(m, -1)[..., -1])


def _min_ref(axis=None, keepdims=False):
    return lambda x: _over_last(x, axis, keepdims, lambda m: np.sort(m, -1)[..., 0])


def _lse_ref(axis=-1, keepdims=False, gamma=1.0):
    # lse_γ(u) = γ log Σ exp(u/γ), the seed's definition (inputs are small: no shift needed).
    return lambda x: _over_last(x, axis, keepdims, lambda m: gamma * np.log(np.sum(np.exp(m / gamma), -1)))


def _softargmax_ref(axis=-1, gamma=1.0):
    def ref(x):
        e = np.exp(x / gamma)
        return e / np.sum(e, axis=axis, keepdims=True)
    return ref


def _argmax_ref_last(x):
    return np.eye(x.shape[-1])[np.argmax(x, axis=-1)]


CAUSAL = np.where(np.arange(4)[None, :] <= np.arange(4)[:, None], 0.0, -np.inf)


def _masked_softargmax_ref(scale, mask=None):
    def ref(x, m=None):
        z = scale * x + (mask if m is None else m)
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return ref


CASES = []

# ------------------------------------------------------------------ mean
for shape, axis, keepdims in [((3, 4), None, False), ((3, 4), 0, False), ((3, 4), -1, True),
                              ((2, 3, 4), (0, 2), False), ((2, 3, 4), (-1, 0), True),
                              ((4, 1), 1, False), ((0, 3), 1, False), ((5,), 0, True), ((), None, False)]:
    CASES.append(Case("mean", lambda x, a=axis, k=keepdims: R.mean(x, a, keepdims=k), _normal(shape),
                      _mean_ref(axis, keepdims), id=f"mean-{shape}-ax{axis}-k{int(keepdims)}"))

# ------------------------------------------------------- var (composite)
for shape, axis, keepdims in [((3, 4), None, False), ((3, 4), -1, True), ((2, 3, 4), (0, 2), False)]:
    CASES.append(Case("mean", lambda x, a=axis, k=keepdims: R.var(x, a, keepdims=k), _normal(shape),
                      _var_ref(axis, keepdims), id=f"var-{shape}-ax{axis}-k{int(keepdims)}"))

# ------------------------------------------------------------- max / min
for name, fn, ref in [("max", R.max, _max_ref), ("min", R.min, _min_ref)]:
    for shape, axis, keepdims in [((3, 4), None, False), ((3, 4), 1, False), ((3, 4), 0, True),
                                  ((2, 3, 4), (0, 2), False), ((2, 3, 4), -1, True),
                                  ((4, 1), -1, False), ((0, 3), 1, False), ((6,), None, True)]:
        CASES.append(Case(name, lambda x, a=axis, k=keepdims, f=fn: f(x, a, keepdims=k), _normal(shape),
                          ref(axis, keepdims), id=f"{name}-{shape}-ax{axis}-k{int(keepdims)}"))

# ------------------------------------------------------------- logsumexp
for shape, axis, keepdims, gamma in [((5,), -1, False, 1.0), ((3, 4), -1, False, 1.0),
                                     ((3, 4), 0, True, 0.5), ((3, 4), None, False, 3.0),
                                     ((2, 3, 4), (0, 2), False, 0.1), ((2, 3, 4), -2, True, 2.0),
                                     ((4, 1), -1, False, 1.0), ((0, 3), 1, False, 1.0)]:
    CASES.append(Case("logsumexp", lambda x, a=axis, k=keepdims, g=gamma: F.logsumexp(x, a, k, g),
                      _normal(shape), _lse_ref(axis, keepdims, gamma),
                      id=f"logsumexp-{shape}-ax{axis}-k{int(keepdims)}-g{gamma}"))

# ------------------------------------------------------------ softargmax
for shape, axis, gamma in [((5,), -1, 1.0), ((3, 4), -1, 1.0), ((3, 4), 0, 0.5), ((3, 4), 1, 4.0),
                           ((2, 3, 4), (0, 2), 1.0), ((2, 3, 4), -2, 0.2), ((4, 1), -1, 1.0),
                           ((0, 3), 1, 1.0)]:
    CASES.append(Case("softargmax", lambda x, a=axis, g=gamma: F.softargmax(x, a, g), _normal(shape),
                      _softargmax_ref(axis, gamma), id=f"softargmax-{shape}-ax{axis}-g{gamma}"))
CASES.append(Case("softargmax", lambda x: F.softmax(x), _normal((2, 3)), _softargmax_ref(),
                  id="softmax-alias"))

# ---------------------------------------------------------------- argmax
# Random normal entries have no ties; the derivative is zero (checked by
# finite differences: wrt=(0,) perturbs x, and the output must not move).
CASES.append(Case("argmax", lambda x: F.argmax(x), _normal((3, 5)), _argmax_ref_last, wrt=(0,),
                  id="argmax-(3,5)-ax-1"))
CASES.append(Case("argmax", lambda x: F.argmax(x, 0), _normal((4, 2)),
                  lambda x: _argmax_ref_last(x.T).T, wrt=(0,), id="argmax-(4,2)-ax0"))
CASES.append(Case("argmax", lambda x: F.argmax(x, None), _normal((2, 3)),
                  lambda x: np.eye(x.size)[np.argmax(x)].reshape(x.shape), wrt=(0,),
                  id="argmax-(2,3)-axNone"))

# masked_softargmax: softargmax(scale·x + mask), attention's weights; a causal mask (constant, with
# −inf) and a finite mask that is differentiated too.
CASES.append(Case("masked_softargmax", lambda x: F.masked_softargmax(x, CAUSAL, -1, 0.5), _normal((2, 4, 4)),
                  _masked_softargmax_ref(0.5, CAUSAL), id="masked_softargmax-causal"))
CASES.append(Case("masked_softargmax", lambda x, m: F.masked_softargmax(x, m, -1, 2.0), _normal((3, 2, 5), (2, 5)),
                  _masked_softargmax_ref(2.0), id="masked_softargmax-finite-mask"))

# softargmax_jacobian: scale·y⊙(v − Σ v⊙y), softargmax's derivative rules; y any array (not only a
# softargmax output: the formula is a polynomial in v and y), over the last axis and another one.
CASES.append(Case("softargmax_jacobian", lambda v, y: F.softargmax_jacobian(v, y, -1, 0.5), _normal((3, 4), (3, 4)),
                  lambda v, y: 0.5 * y * (v - (v * y).sum(-1, keepdims=True)), id="softargmax_jacobian-last"))
CASES.append(Case("softargmax_jacobian", lambda v, y: F.softargmax_jacobian(v, y, 0), _normal((3, 4), (4,)),
                  lambda v, y: y * (v - (v * y).sum(0, keepdims=True)), id="softargmax_jacobian-axis0-broadcast"))
