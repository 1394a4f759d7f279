"""Import other frameworks' graphs as Programs: a JAX function's jaxpr, a PyTorch ``torch.export`` program.

Each equation (JAX) or ATen node (PyTorch) is replayed with the library's own
operations, as the ONNX importer replays ONNX nodes, so the result is an
ordinary :class:`~autograd_dag.Program`: it executes on numpy, renders in both
views with the scopes the source knows (JAX's name stacks and
``jax.named_scope``, PyTorch's ``nn_module_stack``) and differentiates
(``ad.grad_program``). That lets a JAX or PyTorch user draw a model's forward
and gradient programs, and check their own derivatives (a ``jax.custom_vjp``,
a ``torch.autograd.Function``) against ours and against finite differences.
A primitive or operator without a replay rule raises :class:`FrontendError`
listing every missing one, before anything is built.

``jax`` and ``torch`` are optional: this package imports neither until
:func:`from_jax` or :func:`from_torch` is called.

Example (needs jax; not run as a doctest)::

    import jax.numpy as jnp, numpy as np, autograd_dag as ad
    prog = ad.from_jax(lambda w, x: jnp.tanh(x @ w).sum(), np.ones((3, 2), np.float32),
                       np.ones((4, 3), np.float32))
    ad.grad_program(prog)(np.ones((3, 2), np.float32), np.ones((4, 3), np.float32))
    ad.render(prog, view="bipartite")
"""

from ._common import FrontendError
from ._jax import JAX_PRIMITIVES, from_jax
from ._torch import TORCH_OPERATORS, from_torch

__all__ = ["from_jax", "from_torch", "FrontendError", "JAX_PRIMITIVES", "TORCH_OPERATORS"]
