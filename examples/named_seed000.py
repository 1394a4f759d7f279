"""Seed 000 in named-tensor notation: check the named models against the positional ones, then train one.

    python -m examples.named_seed000 [--fast] [--out out/named_seed000]

1. ``ad.named.seed000.TransformerLM`` and ``LeNet`` (each line one equation of
   the seed) against ``nn.TransformerLM`` and ``nn.LeNet`` with the same
   parameters: the largest difference in the output distributions, and
   LeNet's alternative W³ ∈ hidden × height × width × chans without flattening.
2. Training the named Transformer to continue a repeating sequence, with
   Adam on the positional model's Parameters (the two models share them).
3. The named program drawn with axis names (``seq:6 × layer:16``), if Graphviz is installed.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

import autograd_dag as ad
from autograd_dag import named, nn
from autograd_dag.named import NamedTensor, seed000


def compare_transformer(rng) -> float:
    lm = nn.TransformerLM(vocab_size=13, d_model=16, heads=4, hidden=32, layers=2, rng=rng)
    tokens = rng.integers(0, 13, (3, 7))
    O = seed000.TransformerLM.from_positional(lm)(seed000.one_hot(tokens, 13))
    return float(np.max(np.abs(O.align("batch", "seq", "vocab").value - lm(tokens).value)))


def compare_lenet(rng) -> tuple[float, float]:
    net = nn.LeNet(image_size=16, channels=(4, 6), kernel_sizes=(3, 3), hidden=20, rng=rng)
    x = NamedTensor(rng.normal(size=(4, 1, 16, 16)), "batch chans height width")
    O = seed000.LeNet.from_positional(net)(x).align("batch", "classes").value
    O_alt = seed000.LeNet.from_positional(net, flatten=False)(x).align("batch", "classes").value
    want = net.predict_proba(x.align("batch", "chans", "height", "width").value).value
    return float(np.max(np.abs(O - want))), float(np.max(np.abs(O_alt - O)))


def train(steps: int, rng) -> list[float]:
    """Next-token cross-entropy of the named model on the sequence 0 1 2 3 4 5 0 1 2 ... (vocab 6)."""
    lm = nn.TransformerLM(vocab_size=6, d_model=16, heads=2, hidden=32, layers=1, rng=rng)
    model = seed000.TransformerLM.from_positional(lm)
    optimizer = ad.optim.Adam(lm.parameters(), lr=0.02)
    losses = []
    for _ in range(steps):
        starts = rng.integers(0, 6, 8)
        tokens = (starts[:, None] + np.arange(7)[None, :]) % 6
        L = model.logits(seed000.one_hot(tokens[:, :-1], 6))
        Y = seed000.one_hot(tokens[:, 1:], 6)
        loss = named.nmean(named.logsumexp(L, "vocab") - named.ndot(L, Y, "vocab"), ("batch", "seq"))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def run(fast: bool = False, out: str = "out/named_seed000", verbose: bool = True) -> dict:
    rng = np.random.default_rng(0)
    result = {"transformer_difference": compare_transformer(rng)}
    result["lenet_difference"], result["lenet_alternative_difference"] = compare_lenet(rng)
    result["losses"] = train(15 if fast else 120, rng)
    if verbose:
        print(f"TransformerLM, named vs positional: max |ΔO| = {result['transformer_difference']:.1e}")
        print(f"LeNet, named vs positional:         max |ΔO| = {result['lenet_difference']:.1e}")
        print(f"LeNet, W³ ⊙_(height,width,chans) vs flattened: {result['lenet_alternative_difference']:.1e}")
        print(f"training the named Transformer: loss {result['losses'][0]:.3f} -> {result['losses'][-1]:.3f}")
    if shutil.which("dot"):
        os.makedirs(out, exist_ok=True)
        lm = nn.TransformerLM(vocab_size=6, d_model=16, heads=2, hidden=32, layers=1, rng=0)
        O = seed000.TransformerLM.from_positional(lm)(seed000.one_hot(np.arange(6)[None, :], 6))
        result["picture"] = ad.render_to(named.program_of(O), os.path.join(out, "named_transformer.svg"),
                                         edge_labels="shape")
        if verbose:
            print(f"wrote {result['picture']}")
    return result


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="a few training steps (used by the tests)")
    parser.add_argument("--out", default="out/named_seed000", help="folder for the picture (default out/named_seed000)")
    args = parser.parse_args()
    run(fast=args.fast, out=args.out)
