"""What naming parameters by path costs a module call (issue 24, item 4).

The user's call of any method of a module (``model(x)``, ``model.logits(x)``)
walks the module tree once to name every parameter by its path and label every
sub-module's scope; every public method of a Module subclass is wrapped to
notice that call. Two figures per model:

* ``naming µs``: the walk at the user's call (``_enter`` + ``_leave``), best of 7;
* ``lookups/op``: dict lookups per recorded operation (cProfile's count), most
  of them ``site_of`` looking through the library's frames for the user's line:
  a method wrapper on the stack adds one (compare with the same script on the
  commit before, which had no wrappers).

Run:  python benchmarks/bench_module_naming.py
"""

from __future__ import annotations

import cProfile
import io
import pstats
import timeit

import numpy as np

from autograd_dag import nn
from autograd_dag.nn import module as _module


def lookups_per_op(fn, calls: int = 10) -> float:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO()).stats
    ops = sum(v[0] for k, v in stats.items() if k[2] == "site_of")
    gets = sum(v[0] for k, v in stats.items() if k[2] == "<method 'get' of 'dict' objects>")
    return gets / ops


def main() -> None:
    mlp, x = nn.MLP([3, 4, 4, 2], rng=0), np.zeros((1, 3))
    lm, tokens = nn.TransformerLM(11, d_model=8, heads=2, hidden=16, layers=2, rng=0), np.array([[1, 2, 3]])
    bert = nn.BERT(12, d_model=8, heads=2, hidden=16, layers=2, max_length=8, rng=0)
    rows = [("MLP 3-4-4-2", mlp, [("mlp(x)", lambda: mlp(x)), ("mlp.logits(x)", lambda: mlp.logits(x))]),
            ("TransformerLM 2 blocks", lm, [("lm(tokens)", lambda: lm(tokens)),
                                            ("lm.logits(tokens)", lambda: lm.logits(tokens))]),
            ("BERT 2 blocks", bert, [("bert.hidden_states(tokens)", lambda: bert.hidden_states(tokens))])]
    print(f"{'model':24s} {'modules':>7s} {'params':>6s} {'naming µs':>9s}   call: lookups/op")
    print("-" * 92)
    for name, model, calls in rows:
        t = min(timeit.repeat(lambda: _module._leave(_module._enter(model)), number=1000, repeat=7)) / 1000
        frames = ", ".join(f"{label} {lookups_per_op(fn):.2f}" for label, fn in calls)
        print(f"{name:24s} {len(list(model.modules())):7d} {len(model.parameters()):6d} {t * 1e6:9.1f}   {frames}")


if __name__ == "__main__":
    main()
