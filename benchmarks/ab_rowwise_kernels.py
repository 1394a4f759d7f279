"""The row-wise kernels at the seed-000 Transformer's shapes, interleaved A/B against another checkout's.

The other checkout's fused/{softmax,losses,layer_norm}.py are executed as sibling modules of this
package (their primitives not registered), so both run in one process on the same input arrays
(separate arrays differed by up to ~10 % from alignment and cache placement alone), the order
alternating every round. Prints each kernel's median µs per call and the median and quartiles of
new/base: the kernels left unchanged are the control for the noise.

Run (under the CPU lock):  python benchmarks/ab_rowwise_kernels.py [/work/wt/base] [rounds]
"""

from __future__ import annotations

import importlib
import sys
import time
import types

import numpy as np

import autograd_dag  # noqa: F401  (the package the other checkout's modules are placed in)

PKG = "autograd_dag.primitives.fused"
MODULES = ("softmax", "losses", "layer_norm")
SCALE = 1 / np.sqrt(32)  # attention's 1/√(d / heads)


def load_other(root: str, name: str) -> types.ModuleType:
    """``root``'s fused/<name>.py as module base_<name> of this package, defprim a no-op (names are taken)."""
    src = open(f"{root}/autograd_dag/primitives/fused/{name}.py").read()
    src = src.replace("from ..registry import defprim", "defprim = lambda *a, **k: None")
    src = src.replace("from .softmax import", "from .base_softmax import")
    module = types.ModuleType(f"{PKG}.base_{name}")
    module.__package__, module.__file__ = PKG, f"{root}/.../base_{name}.py"
    sys.modules[module.__name__] = module
    exec(compile(src, module.__file__, "exec"), module.__dict__)
    return module


def inputs(dtype, new) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4, 64, 64)).astype(dtype)
    mask = np.triu(np.full((64, 64), -np.inf, dtype), 1)
    z = rng.standard_normal((16, 64, 256)).astype(dtype)
    idx = rng.integers(0, 256, (16, 64))
    xl = (rng.standard_normal((16, 64, 128)) * 3 + 1).astype(dtype)
    return dict(x=x, mask=mask, y=new["softmax"]._masked_softargmax_impl(x, mask, axis=(3,), scale=SCALE),
                v=rng.standard_normal(x.shape).astype(dtype), z=z, idx=idx, loss=new["losses"]._ce_impl(z, idx),
                ct=np.full((16, 64), 1 / 1024, dtype), xl=xl, g=rng.standard_normal(128).astype(dtype),
                b=rng.standard_normal(128).astype(dtype), vl=rng.standard_normal(xl.shape).astype(dtype))


def kernels(m, a) -> dict:
    s, loss, ln = m["softmax"], m["losses"], m["layer_norm"]
    return {
        "masked_softargmax": lambda: s._masked_softargmax_impl(a["x"], a["mask"], axis=(3,), scale=SCALE),
        "softargmax_jacobian": lambda: s._jacobian_impl(a["v"], a["y"], axis=(3,), scale=SCALE),
        "softmax_cross_entropy": lambda: loss._ce_impl(a["z"], a["idx"]),
        "softmax_cross_entropy_grad": lambda: loss._ce_grad_impl(a["ct"], a["z"], a["loss"], a["idx"]),
        "layer_norm": lambda: ln._layer_norm_impl(a["xl"], a["g"], a["b"], axes=(-1,), eps=1e-5),
        "standardize_jacobian": lambda: ln._standardize_jacobian_impl(a["vl"], a["xl"], axes=(-1,), eps=1e-5),
        "standardized_sum": lambda: ln._standardized_sum_impl(a["vl"], a["xl"], axes=(-1,), eps=1e-5),
    }


def per_call(f, n: int = 20) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/wt/base"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    other = {n: load_other(root, n) for n in MODULES}
    new = {n: importlib.import_module(f"{PKG}.{n}") for n in MODULES}
    for dtype in (np.float32, np.float64):
        a = inputs(dtype, new)
        theirs, ours = kernels(other, a), kernels(new, a)
        for k in theirs:
            for f in (theirs[k], ours[k]):
                per_call(f, 5)
            tb, tn = [], []
            for r in range(rounds):
                pairs = ((theirs[k], tb), (ours[k], tn))
                for f, times in (pairs if r % 2 else pairs[::-1]):
                    times.append(per_call(f))
            ratio = np.array(tn) / np.array(tb)
            print(f"{np.dtype(dtype).name:8s} {k:28s} base {np.median(tb):7.1f}  new {np.median(tn):7.1f} µs  "
                  f"new/base {np.median(ratio):.3f} [q25 {np.quantile(ratio, .25):.3f}, q75 {np.quantile(ratio, .75):.3f}]")


if __name__ == "__main__":
    main()
