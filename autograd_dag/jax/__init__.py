"""Lowering programs to JAX: any :class:`~autograd_dag.Program` as a pure function on JAX arrays.

``ad.jax.lower(program)`` walks the program's nodes in topological order and
writes each with one rule of :data:`RULES` (``jax.numpy`` / ``jax.lax``): the
result runs under ``jax.jit`` on CPU, GPU and TPU, batches with ``jax.vmap``
and differentiates with ``jax.grad``. JAX is an optional extra
(``pip install 'autograd-dag[jax]'``): this package imports without it and
imports JAX only when a program is lowered.

Example (needs the ``jax`` package; not run as a doctest)::

    import jax, numpy as np, autograd_dag as ad
    prog = ad.trace(lambda x: ad.sum(ad.exp(x)), np.zeros(3, np.float32))
    jax.jit(ad.jax.lower(prog))(np.ones(3, np.float32))   # Array(8.154845, dtype=float32)
"""

from ._lower import (JaxLoweringError, MissingLoweringError, lower, lower_program, require_jax,
                     supported_primitives, unsupported_primitives)
from ._table import RULES, UNCHECKED, UNSUPPORTED

__all__ = ["lower", "lower_program", "supported_primitives", "unsupported_primitives", "JaxLoweringError",
           "MissingLoweringError", "RULES", "UNSUPPORTED", "UNCHECKED", "require_jax"]
