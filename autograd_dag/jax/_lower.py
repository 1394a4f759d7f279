"""Program -> a pure function on JAX arrays, through the lowering table of :mod:`._table`."""

from __future__ import annotations

import types

import numpy as np

from ..errors import AutogradDagError
from ..jitting import jit
from ..primitives.registry import PRIMITIVES
from ..program import NodeKind, Program
from ..tree import flatten, leaves_like, unflatten
from ._table import RULES, UNSUPPORTED

_X64_HINT = ("turn JAX's 64-bit mode on before creating arrays: jax.config.update('jax_enable_x64', True) "
             "(or the environment variable JAX_ENABLE_X64=1)")


class JaxLoweringError(AutogradDagError):
    """A program cannot be lowered to JAX (JAX missing, float64 without x64, a wrong argument)."""


class MissingLoweringError(JaxLoweringError):
    """The program uses primitives without a JAX lowering rule; ``missing`` lists every one."""

    def __init__(self, message: str, missing: list[str]):
        super().__init__(message)
        self.missing = list(missing)


def require_jax() -> types.SimpleNamespace:
    """The JAX modules the rules use (``jax``, ``jnp``, ``lax``), or a library error saying how to install JAX."""
    try:
        import jax  # the optional dependency is looked up only when a program is lowered
        import jax.numpy as jnp
        from jax import lax
    except ImportError:
        raise JaxLoweringError("autograd_dag.jax needs the 'jax' package: pip install 'autograd-dag[jax]' "
                               "(or pip install jax)") from None
    return types.SimpleNamespace(jax=jax, jnp=jnp, lax=lax)


def supported_primitives() -> list[str]:
    """Names of the primitives with a JAX lowering rule, sorted.

    Shapes: none (a list of names). Example:
        >>> import autograd_dag as ad
        >>> "layer_norm" in ad.jax.supported_primitives(), "dropout_mask" in ad.jax.supported_primitives()
        (True, False)
    """
    return sorted(n for n in PRIMITIVES if n in RULES)


def unsupported_primitives() -> dict[str, str]:
    """Registered primitives without a JAX lowering rule, each with the reason.

    Shapes: none (a dict of names). Example:
        >>> import autograd_dag as ad
        >>> ad.jax.unsupported_primitives()["dropout_mask"][:44]
        "its mask comes from numpy's random Generator"
    """
    return {n: UNSUPPORTED.get(n, "no JAX lowering rule has been written for it")
            for n in sorted(PRIMITIVES) if n not in RULES}


def _check_supported(program: Program) -> None:
    missing = sorted({n.op for n in program.nodes if n.prim is not None and n.op not in RULES})
    if missing:
        reasons = "; ".join(f"{m} ({UNSUPPORTED.get(m, 'no JAX lowering rule')})" for m in missing)
        raise MissingLoweringError(
            f"jax.lower: program '{program.name}' uses {len(missing)} primitive(s) without a JAX lowering: "
            f"{reasons}. Lowered: {len(RULES)} primitives (ad.jax.supported_primitives())", missing)
    vertices = [n.index for n in program.nodes if n.op is NodeKind.VERTEX]
    if vertices:
        raise JaxLoweringError(f"jax.lower: program '{program.name}' has vertices naming no primitive "
                               f"(%{', %'.join(map(str, vertices))}): a drawn graph, not a program to run")


def _wide_nodes(program: Program) -> list:
    """The nodes holding 64-bit floats, which JAX computes in float32 while its 64-bit mode is off."""
    return [n for n in program.nodes if n.dtype in (np.float64, np.complex128)]


def _check_x64(J, program: Program, wide: list) -> None:
    if wide and not J.jax.config.jax_enable_x64:
        first = wide[0]
        wide = sorted({str(n.dtype) for n in wide})
        raise JaxLoweringError(
            f"jax.lower: program '{program.name}' computes in {', '.join(wide)} (node %{first.index}, "
            f"{first.op}) but JAX's 64-bit mode is off, so JAX would compute in float32 instead: {_X64_HINT}; "
            f"or trace the program on float32 arrays")


def lower(program_or_fn, *example_args):
    """A :class:`Program`, or a function traced on example arguments, as a pure function on JAX arrays.

    ``lower(program)``: see :func:`lower_program` (the arguments are the
    program's inputs, in order). ``lower(f, *example_args)``: ``f`` (a function
    on Tensors, or an ``ad.jit``-ed one such as a training step
    ``ad.jit(ad.value_and_grad(loss))``) is traced as ``ad.jit`` traces it, once,
    on numpy arrays shaped like ``example_args`` (it runs once there), and the
    lowered function takes and returns the same nested tuples, lists and dicts
    as ``f`` (a parameter dict in, a ``(loss, grads dict)`` out).
    Shapes: as ``f``'s (or the program's) for arguments shaped like ``example_args``.

    Example (needs the ``jax`` package; not run as a doctest)::

        import jax, numpy as np, autograd_dag as ad
        def loss(p, x):
            return ad.mean(ad.tanh(x @ p["w"]) ** 2)
        params, x = {"w": np.ones((3, 2), np.float32)}, np.ones((4, 3), np.float32)
        step = jax.jit(ad.jax.lower(ad.value_and_grad(loss), params, x))
        value, grads = step(params, x)        # grads == {"w": Array(..., shape (3, 2))}
    """
    if isinstance(program_or_fn, Program):
        if example_args:
            raise JaxLoweringError("jax.lower: example arguments are for a function; a Program already has "
                                   "its input shapes")
        return lower_program(program_or_fn)
    if not callable(program_or_fn):
        raise JaxLoweringError(f"jax.lower: expected a Program, or a function and example arguments; got "
                               f"{type(program_or_fn).__name__}")
    if not example_args:
        raise JaxLoweringError("jax.lower: a function needs example arguments to be traced on")
    jitted = program_or_fn if isinstance(getattr(program_or_fn, "programs", None), dict) else jit(program_or_fn)
    leaves, in_tree = flatten(example_args)
    leaves = [np.asarray(a) for a in leaves]
    jitted(*unflatten(in_tree, leaves))
    signature = [(a.shape, a.dtype) for a in leaves]
    program, out_tree = next(
        (p, t) for p, t in jitted.programs.values()
        if [(p.nodes[k].shape, p.nodes[k].dtype) for k in p.inputs] == signature)
    lowered = lower_program(program)

    def lowered_tree(*args):
        # By dict key, not by leaf order: jax.jit hands dicts back with their keys sorted.
        out = lowered(*leaves_like(args, in_tree, f"jax.lower: the arguments of '{program.name}'",
                                   "the example arguments"))
        return unflatten(out_tree, [out] if program.single_output else list(out))

    lowered_tree.__name__ = lowered.__name__
    lowered_tree.__doc__ = lowered.__doc__
    return lowered_tree


def lower_program(program: Program):
    """``program`` as a pure function on JAX arrays: one ``jax.numpy``/``jax.lax`` rule per node.

    The function takes the program's inputs in order (arrays, or JAX tracers:
    it can be ``jax.jit``-ed, ``jax.vmap``-ed and differentiated with
    ``jax.grad``/``jax.vjp``) and returns its output, or a tuple of them, as
    the program does. Any program lowers: a forward program, a gradient program
    (:func:`~autograd_dag.grad_program`), a ``jit``-traced training step or a
    ``vmap``-ed one. Constants and parameters are baked in as JAX constants.
    Each value has the dtype the program gives it. A float64 program needs
    JAX's 64-bit mode (``jax.config.update('jax_enable_x64', True)``): without
    it lowering refuses rather than computing in float32. A primitive without a
    rule raises :class:`MissingLoweringError` naming every missing one.
    Shapes: the function's arguments and results have the program's input and
    output shapes.

    Example (needs the ``jax`` package; not run as a doctest)::

        import jax, numpy as np, autograd_dag as ad
        prog = ad.trace(lambda x, w: ad.sum(ad.tanh(x @ w)), np.ones((2, 3), np.float32),
                        np.ones((3, 4), np.float32))
        f = jax.jit(ad.jax.lower(prog))
        f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))   # Array(7.616..., dtype=float32)
        jax.grad(f, argnums=1)(...)   # equals ad.grad_program(prog, 1)'s output
    """
    if not isinstance(program, Program):
        raise JaxLoweringError(f"jax.lower: expected a Program (ad.trace(f, *example_args) makes one), "
                               f"got {type(program).__name__}")
    J = require_jax()
    _check_supported(program)
    wide = _wide_nodes(program)
    _check_x64(J, program, wide)
    nodes = program.nodes
    # Last reader of each node: a value is dropped after it, so a long program holds few tracers at once.
    last_use = {}
    for node in nodes:
        for p in node.parents:
            last_use[p] = node.index
    keep = set(program.outputs)
    frees = {}
    for k, reader in last_use.items():
        if k not in keep:
            frees.setdefault(reader, []).append(k)

    def lowered(*args):
        _check_x64(J, program, wide)  # (the mode may have been switched off since)
        if len(args) != len(program.inputs):
            raise JaxLoweringError(f"jax.lower: program '{program.name}' takes {len(program.inputs)} "
                                   f"argument(s), got {len(args)}")
        values: dict = {}
        for pos, (k, a) in enumerate(zip(program.inputs, args)):
            node = nodes[k]
            a = J.jnp.asarray(a)
            if tuple(a.shape) != node.shape:
                raise JaxLoweringError(f"jax.lower: argument {pos} ('{node.name}') of program "
                                       f"'{program.name}' has shape {tuple(a.shape)}; expected {node.shape}")
            values[k] = a if a.dtype == _canonical(J, node.dtype) else a.astype(node.dtype)
        for node in nodes:  # the topological order: no recursion
            k = node.index
            if k in values:
                continue
            if node.prim is None:
                values[k] = J.jnp.asarray(np.asarray(node.value), dtype=_canonical(J, node.dtype))
                continue
            out = RULES[node.op](J, node, *[values[p] for p in node.parents])
            want = _canonical(J, node.dtype)
            if out.dtype != want:
                out = out.astype(want)
            if tuple(out.shape) != node.shape:
                raise JaxLoweringError(f"jax.lower: the rule of '{node.op}' gave shape {tuple(out.shape)} at node "
                                       f"%{k} of program '{program.name}', which has shape {node.shape}")
            values[k] = out
            for p in frees.get(k, ()):
                del values[p]
        outs = tuple(values[k] for k in program.outputs)
        return outs[0] if program.single_output else outs

    lowered.__name__ = f"{program.name}_lowered"
    lowered.__doc__ = f"Program '{program.name}' lowered to JAX ({len(nodes)} nodes)."
    return lowered


def _canonical(J, dtype) -> np.dtype:
    """``dtype`` as JAX holds it: int64 is int32 while 64-bit mode is off (float64 is refused before)."""
    return np.dtype(J.jax.dtypes.canonicalize_dtype(dtype))
