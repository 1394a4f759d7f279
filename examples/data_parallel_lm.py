"""Data-parallel training of the seed-000 TransformerLM under XLA, over every device of a JAX mesh.

Run: ``python -m examples.data_parallel_lm`` (full), ``--fast`` (a few steps of a tiny model),
``--compare`` (also train with our single-process numpy engine and compare the loss curves),
``--shard-params`` (shard the parameters and Adam's moments too), ``--float32``.

The whole training step — the loss of the character TransformerLM of
``examples.char_transformer`` (same text, Python's help topics, no download),
its gradients, and the update of our :class:`autograd_dag.optim.Adam` (its
formula and constants, written on Tensors: :func:`adam_update`) — is traced
once with ``ad.jit``, lowered with ``ad.jax.lower`` and compiled with
``jax.jit`` over a ``jax.sharding.Mesh`` of all devices with one axis
``'data'``: each batch is a ``NamedSharding(mesh, P('data'))`` array (each
device holds batch/devices windows), the parameters and moments are replicated
(``P()``), and XLA inserts the all-reduce of the gradients. ``--shard-params``
shards every parameter whose first axis divides by the device count along
``'data'`` too (XLA then gathers them where they are used: the same numbers).

Devices: on a CPU-only machine JAX sees one device; unless ``XLA_FLAGS``
already sets ``--xla_force_host_platform_device_count``, this module appends
``--xla_force_host_platform_device_count=8`` to ``XLA_FLAGS`` before JAX is
imported, so the run spans 8 simulated host devices. That flag only concerns
the host platform: the same command runs unchanged on a GPU or TPU host, where
the mesh is that host's accelerators.

Several hosts: start the same command on every host with ``--distributed``,
which calls ``jax.distributed.initialize()`` first (the coordinator address,
process count and rank found in the cluster's environment: SLURM, Cloud TPU,
Kubernetes, MPI), or elsewhere with ``--coordinator host0:1234
--num-processes N --process-id i`` on host i. The mesh then spans every process's devices; each
process draws the same global batch (same seed) and feeds only its own rows,
through ``jax.make_array_from_process_local_data``.

Numbers: float64 by default (JAX's 64-bit mode is turned on), so ``--compare``
checks the lowered, sharded step against ``loss.backward()`` and
``optim.Adam.step()`` on numpy: same initialisation, same batches, same
learning-rate schedule; the largest difference of the two loss curves must be
below 1e-8 in float64 (two summation orders compounding over the run's Adam
steps; measured 1.3e-15 over the full run's 300 steps, 1.8e-15 in --fast mode)
and below 2e-3 in float32 (measured 4.8e-7 in --fast mode).

Measured (full run, 2 blocks, 4 heads, d_model 64, 300 steps of 32 windows of
64 characters, float64, 8 simulated devices on the shared 2-core machine):
loss 4.77 -> 2.15; XLA compile 2.5 s; 17,000 tokens/s.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np

DEVICES = 8  # simulated host devices when the user did not choose a count


def simulate_host_devices(count: int = DEVICES) -> None:
    """Append ``--xla_force_host_platform_device_count=count`` to XLA_FLAGS, unless set (before JAX is imported)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags and "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


import autograd_dag as ad  # noqa: E402  (autograd_dag does not import JAX)
from autograd_dag import nn, optim  # noqa: E402
from autograd_dag.nn import functional as F  # noqa: E402

from . import _common as C  # noqa: E402
from .char_transformer import Vocabulary, load_text  # noqa: E402

# float64: two summation orders (XLA's sharded reductions, numpy's) compounding through the run's Adam
# steps (measured 1.3e-15 over the full run's 300 steps); float32: the same at float32's epsilon (1.2e-7)
# times the loss's size and the steps (measured 4.8e-7 over --fast's) -- each bound leaves three orders of
# margin or more for longer runs, where the differences grow with the steps.
TOLERANCE = {np.dtype(np.float64): 1e-8, np.dtype(np.float32): 2e-3}

FAST = dict(d_model=16, heads=2, hidden=32, layers=1, length=16, batch=16, steps=6, lr=1e-2)
FULL = dict(d_model=64, heads=4, hidden=256, layers=2, length=64, batch=32, steps=300, lr=3e-3)


def adam_update(opt: optim.Adam, params: dict, grads: dict, m: dict, v: dict, lr, bias1, bias2):
    """One step of ``opt``'s rule (:class:`optim.Adam`, no weight decay) on Tensors, so that it can be traced.

    ``bias1 = 1 - β₁ᵗ`` and ``bias2 = 1 - β₂ᵗ`` and ``lr`` come in as 0-d
    arrays (one program serves every step). The operations are ``Adam._update``'s,
    in its order. Shapes: dicts of parameter-shaped arrays in and out.
    Example: ``p, m, v = adam_update(opt, p, g, m, v, np.array(1e-3), np.array(0.1), np.array(1e-3))``.
    """
    if opt.weight_decay:
        raise ValueError("adam_update: weight decay is not written here")
    b1, b2 = opt.betas
    new_p, new_m, new_v = {}, {}, {}
    for k in params:
        g = grads[k]
        new_m[k] = m[k] * b1 + (1 - b1) * g
        new_v[k] = v[k] * b2 + (1 - b2) * (g * g)
        new_p[k] = params[k] - lr * (new_m[k] / bias1) / (ad.sqrt(new_v[k] / bias2) + opt.eps)
    return new_p, new_m, new_v


def make_train_step(model, opt: optim.Adam):
    """``step(params, m, v, x, y, lr, bias1, bias2) -> (loss, params, m, v)``, traced by ``ad.jit``.

    Shapes: x, y (B, T) token ids; params, m, v dicts as ``model.named_parameters()``.
    """
    wrapper = nn.Logits(model)

    def loss(params, x, y):
        return F.cross_entropy(nn.functional_call(wrapper, {"inner." + k: p for k, p in params.items()}, x), y)

    value_and_grad = ad.value_and_grad(loss)

    def step(params, m, v, x, y, lr, bias1, bias2):
        value, grads = value_and_grad(params, x, y)
        return (value, *adam_update(opt, params, grads, m, v, lr, bias1, bias2))
    return ad.jit(step)


def batches(train: np.ndarray, steps: int, batch: int, length: int, seed: int):
    """The same (x, y) windows for both trainings: ``steps`` pairs of (batch, length) int64 arrays."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(train) - length - 1, batch)
        yield (np.stack([train[s:s + length] for s in starts]), np.stack([train[s + 1:s + length + 1] for s in starts]))


def learning_rates(config: dict, steps: int) -> list[float]:
    """Cosine decay to lr/20 after a warm-up of a tenth of the run (at most 100 steps), as char_transformer."""
    lr = config["lr"]
    return [optim.cosine_schedule(s, steps, lr, lr / 20, min(100, steps // 10)) for s in range(steps)]


def numpy_losses(config: dict, vocab: int, data: list, lrs: list, seed: int, dtype, show_progress: bool) -> list:
    """Our single-process training: recorded forward, ``loss.backward()``, ``optim.Adam.step()``."""
    model = nn.TransformerLM(vocab, d_model=config["d_model"], heads=config["heads"], hidden=config["hidden"],
                             layers=config["layers"], rng=seed, dtype=dtype)
    opt = optim.Adam(model.parameters(), lr=config["lr"])
    losses = []
    with C.single_threaded_blas():
        for (x, y), lr in zip(C.progress(data, "numpy", show_progress), lrs):
            loss = F.cross_entropy(model.logits(x), y)
            opt.zero_grad()
            loss.backward()
            opt.lr = lr
            opt.step()
            losses.append(float(loss.value))
    return losses


def run(fast: bool = False, out: str = "out/data_parallel_lm", seed: int = 0, steps: int | None = None,
        compare: bool = False, shard_params: bool = False, float32: bool = False, distributed: bool = False,
        coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
        show_progress: bool = True, verbose: bool = True) -> dict:
    """Train data-parallel under JAX; with ``compare`` also on numpy. Returns the curves and the mesh facts."""
    simulate_host_devices()
    folder = C.out_dir(out)
    try:
        import jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    except ImportError:
        raise SystemExit("examples.data_parallel_lm needs JAX: pip install 'autograd-dag[jax]'") from None
    dtype = np.dtype(np.float32 if float32 else np.float64)
    jax.config.update("jax_enable_x64", dtype == np.float64)
    if distributed or coordinator:
        # (None: found from the cluster's environment -- SLURM, Cloud TPU, Kubernetes, MPI)
        jax.distributed.initialize(coordinator, num_processes, process_id)
    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("data",))
    n = len(devices)

    text = load_text()
    split = int(0.9 * len(text))
    vocab = Vocabulary(text[:split])
    train = vocab.encode(text[:split])
    if fast:
        train = train[:60_000]
    config = dict(FAST if fast else FULL)
    steps = steps or config["steps"]
    batch = -(-config["batch"] // n) * n  # a multiple of the device count: equal shards
    length = config["length"]
    data = list(batches(train, steps, batch, length, seed))
    lrs = learning_rates(config, steps)

    model = nn.TransformerLM(len(vocab), d_model=config["d_model"], heads=config["heads"], hidden=config["hidden"],
                             layers=config["layers"], rng=seed, dtype=dtype)
    opt = optim.Adam(model.parameters(), lr=config["lr"])
    params = {k: p.value for k, p in model.named_parameters()}
    zeros = {k: np.zeros_like(a) for k, a in params.items()}
    scalar = np.ones((), dtype)  # (the trace runs the step once: a bias correction of 0 would divide by 0)
    example = (params, zeros, zeros, *data[0], scalar, scalar, scalar)
    t0 = time.perf_counter()
    ours = make_train_step(model, opt)
    lowered = ad.jax.lower(ours, *example)
    trace_seconds = time.perf_counter() - t0

    replicated, by_rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))

    def param_sharding(a):
        return by_rows if shard_params and a.ndim and a.shape[0] % n == 0 else replicated
    p_sh = {k: param_sharding(a) for k, a in params.items()}
    step = jax.jit(lowered, in_shardings=(p_sh, p_sh, p_sh, by_rows, by_rows, replicated, replicated, replicated),
                   out_shardings=(replicated, p_sh, p_sh, p_sh))

    rows = batch // jax.process_count()
    mine = slice(jax.process_index() * rows, (jax.process_index() + 1) * rows)

    def global_batch(a):
        # Each process hands over only its rows; on one host that is the whole batch.
        return jax.make_array_from_process_local_data(by_rows, a[mine], a.shape)

    state = [jax.device_put(params, p_sh), jax.device_put(zeros, p_sh), jax.device_put(zeros, p_sh)]
    b1, b2 = opt.betas
    x0 = global_batch(data[0][0])
    t0 = time.perf_counter()
    compiled = step.lower(*state, x0, global_batch(data[0][1]), scalar, scalar, scalar).compile()
    compile_seconds = time.perf_counter() - t0
    losses = []
    if verbose:
        print(f"{model.num_parameters()} parameters, {dtype}; mesh {dict(mesh.shape)} over {n} {devices[0].platform} "
              f"device(s), {jax.process_count()} process(es); batch {batch}×{length} ({batch // n} per device); "
              f"{steps} steps; parameters {'sharded' if shard_params else 'replicated'}")
        print(f"traced and lowered in {trace_seconds:.2f} s, compiled by XLA in {compile_seconds:.2f} s")
    bar = C.progress(range(steps), "data-parallel", show_progress)
    start = time.perf_counter()
    for s in bar:
        x, y = (global_batch(a) for a in data[s])
        t = s + 1
        loss, *state = compiled(*state, x, y, np.asarray(lrs[s], dtype), np.asarray(1 - b1 ** t, dtype),
                                np.asarray(1 - b2 ** t, dtype))
        losses.append(float(loss.addressable_data(0)))  # (replicated: every process holds it)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    seconds = time.perf_counter() - start
    shard_shapes = sorted({tuple(sh.data.shape) for sh in x.addressable_shards})
    result = {"losses": losses, "devices": n, "platform": devices[0].platform, "jax": jax.__version__,
              "batch_devices": len(x.sharding.device_set), "batch_spec": str(x.sharding.spec),
              "batch_shard_shapes": shard_shapes, "batch": batch, "length": length, "steps": steps,
              "dtype": str(dtype), "shard_params": shard_params,
              "param_devices": {k: len(a.sharding.device_set) for k, a in state[0].items()},
              "sharded_params": sorted(k for k, a in state[0].items() if not a.sharding.is_fully_replicated),
              "compile_seconds": compile_seconds, "seconds": seconds,
              "tokens_per_second": steps * batch * length / seconds, "tolerance": TOLERANCE[dtype]}
    if verbose:
        every = max(1, steps // 10)
        print("loss curve: " + ", ".join(f"{s}: {losses[s]:.4f}" for s in range(0, steps, every)))
        print(f"batch sharded as {result['batch_spec']} over {result['batch_devices']} devices, shards "
              f"{shard_shapes}; {steps} steps in {seconds:.2f} s ({result['tokens_per_second']:.0f} tokens/s)")
    if compare:
        reference = numpy_losses(config, len(vocab), data, lrs, seed, dtype, show_progress)
        diff = max(abs(a - b) for a, b in zip(losses, reference))
        result.update(numpy_losses=reference, max_difference=diff, agree=bool(diff <= TOLERANCE[dtype]))
        if verbose:
            print(f"largest difference from our numpy training's loss curve: {diff:.3g} (tolerance "
                  f"{TOLERANCE[dtype]:g}, {dtype}): {'agree' if result['agree'] else 'DIFFER'}")
    path = os.path.join(folder, "data_parallel_lm.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    result["json"] = path
    if verbose:
        print(f"data-parallel loss curve over {n} devices: final loss {losses[-1]:.4f}; written to {path}")
    return result


def main(argv=None) -> int:
    p = C.parser(__doc__.splitlines()[0], "out/data_parallel_lm")
    p.add_argument("--steps", type=int, default=None, help="override the number of training steps")
    p.add_argument("--compare", action="store_true", help="also train on numpy and compare the loss curves")
    p.add_argument("--shard-params", action="store_true", help="shard parameters and moments along 'data' too")
    p.add_argument("--float32", action="store_true", help="train in float32 (JAX's 64-bit mode off)")
    p.add_argument("--distributed", action="store_true", help="call jax.distributed.initialize() (several hosts)")
    p.add_argument("--coordinator", default=None, help="host:port of process 0 (implies --distributed)")
    p.add_argument("--num-processes", type=int, default=None, help="with --coordinator: how many processes")
    p.add_argument("--process-id", type=int, default=None, help="with --coordinator: this process's rank")
    args = p.parse_args(argv)
    result = run(fast=args.fast, out=args.out, seed=args.seed, steps=args.steps, compare=args.compare,
                 shard_params=args.shard_params, float32=args.float32, distributed=args.distributed,
                 coordinator=args.coordinator, num_processes=args.num_processes, process_id=args.process_id,
                 show_progress=not args.no_progress)
    if args.compare and not result["agree"]:
        print("error: the sharded run's loss curve differs from our numpy training's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
