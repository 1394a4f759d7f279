"""Multi-head attention, forward + backward: the library against hand-written numpy (and PyTorch if installed).

Rows:
  nn.MultiHeadAttention   the library's layer: projections as one matrix product over the
                          flattened (batch·length) rows, attention batched over (batch, heads);
  einsum projections      the same layer written with ``ad.einsum('btd,hdk->bhtk', ...)``
                          per projection (why the layer flattens and uses matmul);
  numpy by hand           forward and reverse sweep written directly in numpy: the practical limit;
  torch (CPU)             ``torch.nn.functional.scaled_dot_product_attention`` with the same
                          projections, when torch is installed.
Then a whole ``nn.TransformerLM`` training step (forward, cross-entropy, backward) in float32
and float64, with its number of recorded operations.

Run:  python benchmarks/bench_attention.py [--batch 16] [--length 64] [--d-model 128] [--heads 4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.nn import functional as F


def median_ms(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--length", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args(argv)
    B, T, d, h = args.batch, args.length, args.d_model, args.heads
    k = d // h
    mha = nn.MultiHeadAttention(d, h, rng=0)
    x = np.random.default_rng(0).normal(size=(B, T, d))
    M = nn.causal_mask(T)

    def library():
        y = mha(ad.Tensor(x), mask=M)
        y.sum().backward()

    def einsum_projections():
        xt = ad.Tensor(x)
        q = ad.einsum("btd,hdk->bhtk", xt, mha.W_Q)
        kk = ad.einsum("btd,hdk->bhtk", xt, mha.W_K)
        v = ad.einsum("btd,hdk->bhtk", xt, mha.W_V)
        y = ad.einsum("bhtv,hvd->btd", nn.attention(q, kk, v, mask=M), mha.W_O)
        y.sum().backward()

    WQ, WK, WV = (W.value.transpose(1, 0, 2).reshape(d, d) for W in (mha.W_Q, mha.W_K, mha.W_V))
    WO = mha.W_O.value.reshape(d, d)

    def numpy_by_hand():
        X = x.reshape(-1, d)

        def split(Z):
            return Z.reshape(B, T, h, k).transpose(0, 2, 1, 3)

        def merge(Z):
            return Z.transpose(0, 2, 1, 3).reshape(-1, d)
        Q, K, V = split(X @ WQ), split(X @ WK), split(X @ WV)
        S = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(k) + M
        A = np.exp(S - S.max(-1, keepdims=True))
        A /= A.sum(-1, keepdims=True)
        H = merge(A @ V)
        G = np.ones((B * T, d))
        _ = H.T @ G
        gH = split(G @ WO.T)
        gA = gH @ V.transpose(0, 1, 3, 2)
        gV = A.transpose(0, 1, 3, 2) @ gH
        gS = A * (gA - (gA * A).sum(-1, keepdims=True)) / np.sqrt(k)
        gQ, gK = gS @ K, gS.transpose(0, 1, 3, 2) @ Q
        _ = X.T @ merge(gQ), X.T @ merge(gK), X.T @ merge(gV)
        _ = merge(gQ) @ WQ.T + merge(gK) @ WK.T + merge(gV) @ WV.T

    rows = [("nn.MultiHeadAttention", library), ("einsum projections", einsum_projections),
            ("numpy by hand", numpy_by_hand)]
    try:
        import torch
        tx = torch.tensor(x, requires_grad=True)
        tW = [torch.tensor(W, requires_grad=True) for W in (WQ, WK, WV, WO)]
        tM = torch.tensor(M)

        def torch_cpu():
            def split(Z):
                return Z.reshape(B, T, h, k).transpose(1, 2)
            X = tx.reshape(-1, d)
            Q, K, V = split(X @ tW[0]), split(X @ tW[1]), split(X @ tW[2])
            H = torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=tM)
            (H.transpose(1, 2).reshape(-1, d) @ tW[3]).sum().backward()
        rows.append(("torch (CPU)", torch_cpu))
    except ImportError:
        pass
    print(f"multi-head attention fwd+bwd, B={B} T={T} d={d} heads={h} (median of {args.repeat})")
    print(f"{'implementation':24s} {'ms':>8s} {'× numpy':>8s}")
    times = {name: median_ms(fn, args.repeat) for name, fn in rows}
    for name, ms in times.items():
        print(f"{name:24s} {ms:8.2f} {ms / times['numpy by hand']:8.2f}")

    print()
    print(f"nn.TransformerLM training step (vocab 96, d={d}, heads={h}, hidden={4 * d}, 2 blocks, B={B}, T={T})")
    tokens = np.random.default_rng(1).integers(0, 96, (B, T + 1))
    for dtype in (np.float32, np.float64):
        lm = nn.TransformerLM(96, d_model=d, heads=h, hidden=4 * d, layers=2, rng=0, dtype=dtype)

        def train_step():
            loss = F.cross_entropy(lm.logits(tokens[:, :-1]), tokens[:, 1:])
            loss.backward()
        ops = len(ad.trace(lambda: F.cross_entropy(lm.logits(tokens[:, :-1]), tokens[:, 1:])).nodes)
        print(f"{np.dtype(dtype).name:24s} {median_ms(train_step, args.repeat):8.2f} ms  ({ops} forward nodes)")


if __name__ == "__main__":
    try:  # small products: one BLAS thread is faster and steadier on a shared machine
        from threadpoolctl import threadpool_limits
    except ImportError:
        main()
    else:
        with threadpool_limits(limits=1, user_api="blas"):
            main()
