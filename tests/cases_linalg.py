"""Table of cases for matmul and einsum.

References are written with broadcasting and explicit sums (no np.matmul, no
np.einsum), so they do not share code with the primitives under test.
"""

import numpy as np

from tests.cases import Case
from autograd_dag.primitives import fused as F
from autograd_dag.primitives import linalg as L


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _matmul_ref(a, b):
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    out = np.sum(a2[..., :, :, None] * b2[..., None, :, :], axis=-2)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


CASES = []

for sa, sb in [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
               ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
               ((1, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
               ((3, 1), (1, 2)), ((0, 3), (3, 2)), ((3, 0), (0, 2)),
               # stacks against one matrix run as one product over the rows (incl. size 0)
               ((2, 2, 3, 4), (4, 5)), ((2, 0, 4), (4, 3)), ((0, 3, 4), (4, 3)), ((2, 3, 0), (0, 4))]:
    CASES.append(Case("matmul", L.matmul, _normal(sa, sb), _matmul_ref, id=f"matmul-{sa}@{sb}"))
CASES.append(Case("matmul", lambda a, b: L.matmul(a, b), _normal((3, 4), (4, 2)), _matmul_ref,
                  wrt=(1,), id="matmul-wrt-b-only"))


def _e(spec, shapes, ref, **kw):
    CASES.append(Case("einsum", lambda *ops, s=spec: L.einsum(s, *ops), _normal(*shapes), ref,
                      id=f"einsum-{spec}-{'x'.join(str(s) for s in shapes)}", **kw))


_e("ij,jk->ik", [(3, 4), (4, 2)], _matmul_ref)
_e("ij,jk", [(3, 4), (4, 2)], _matmul_ref)                       # implicit mode
_e("ij,kj", [(3, 4), (2, 4)], lambda a, b: _matmul_ref(a, b.T))
_e("cb,ab", [(3, 4), (2, 4)], lambda a, b: _matmul_ref(b, a.T))    # implicit: alphabetical 'ac'
_e("i,i->", [(5,)] * 2, lambda a, b: np.sum(a * b))
_e("i,j->ij", [(3,), (4,)], lambda a, b: a[:, None] * b[None, :])
_e("ijk->kji", [(2, 3, 4)], lambda x: np.transpose(x, (2, 1, 0)))
_e("ij->", [(3, 4)], lambda x: np.sum(x))
_e("ij->j", [(3, 4)], lambda x: np.sum(x, 0))
_e("ij->ij", [(3, 4)], lambda x: x.copy())
_e("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], _matmul_ref)
_e("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], lambda a, b, c: _matmul_ref(_matmul_ref(a, b), c))
_e("ij,k->k", [(3, 4), (5,)], lambda a, b: np.sum(a) * b)        # i, j summed away from operand 0
_e("ij,jk->k", [(3, 4), (4, 2)], lambda a, b: np.sum(_matmul_ref(a, b), 0))
_e("ij,ij->ij", [(1, 3), (2, 3)], lambda a, b: a * b)              # size-1 axis broadcast
_e("ij,ij->i", [(2, 3), (2, 1)], lambda a, b: np.sum(a * b, 1))
_e("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)], _matmul_ref)
_e("...ij,...jk", [(2, 3, 4), (4, 2)], _matmul_ref)
_e("...i->i...", [(3, 2, 4)], lambda x: np.moveaxis(x, -1, 0))
_e("ij,jk->ik", [(0, 4), (4, 2)], _matmul_ref)
_e("ij,jk->ik", [(3, 0), (0, 2)], _matmul_ref)

# linear: x Wᵀ + b, one primitive (the affine layers' product and bias).
for sx in [(3, 4), (4,), (2, 3, 4), (2, 0, 4)]:
    CASES.append(Case("linear", lambda x, w, b: L.linear(x, w, b), _normal(sx, (5, 4), (5,)),
                      lambda x, w, b: _matmul_ref(x, w.T) + b, id=f"linear-{sx}"))

# linear_relu: relu(x Wᵀ + b), one primitive (a feed-forward layer's product, bias and relu).
for sx in [(3, 4), (4,), (2, 3, 4), (2, 0, 4)]:
    CASES.append(Case("linear_relu", lambda x, w, b: F.linear_relu(x, w, b), _normal(sx, (5, 4), (5,)),
                      lambda x, w, b: np.maximum(_matmul_ref(x, w.T) + b, 0.0), id=f"linear_relu-{sx}"))
