"""Programs of a model worth exporting: its forward pass and one training step."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..autodiff import grad_program
from ..nn.module import Module, functional_call
from ..jitting import trace
from ..program import Program
from ._dynamic import remember_retrace


def forward_program(model: Module, *example_inputs, method: str | None = None) -> Program:
    """The model's forward pass (or ``model.<method>``) as a program; parameters become named constants.

    Shapes: the model's (inputs as the examples) -> its outputs.

    Example::

        prog = ad.onnx.forward_program(nn.Linear(3, 2, rng=0), np.ones((4, 3)))
    """
    fn = getattr(model, method) if method else model
    list(model.named_parameters())  # names every parameter by its dotted path: the initializers' names
    was_training = model.training
    model.eval()
    try:
        def forward(*xs):
            return fn(*xs)
        forward.__name__ = type(model).__name__ if method is None else f"{type(model).__name__}_{method}"
        prog = trace(forward, *example_inputs)
    finally:
        model.train(was_training)
    for pos, k in enumerate(prog.inputs):
        prog.nodes[k].name = "input" if len(prog.inputs) == 1 else f"input_{pos}"
    # export(prog, dynamic_axes=...) traces the model again at another size.
    return remember_retrace(prog, lambda *xs: forward_program(model, *xs, method=method), example_inputs)


def training_step_program(model: Module, loss: Callable, *example_batch) -> Program:
    """One training step: the loss and its gradient w.r.t. every parameter, as a gradient program.

    ``loss(model_output, *rest)`` gets the model applied to the batch's first
    array and the remaining arrays (the targets). The program's inputs are the
    batch, then the parameters (named as in ``model.named_parameters()``); its
    outputs are the loss, then one gradient per parameter (``value_and_grad``).
    Shapes: batch arrays, parameters -> (), then each parameter's shape.

    Example::

        step = ad.onnx.training_step_program(model, nn.cross_entropy, x, y)
        loss, *grads = step(x, y, *[p.value for p in model.parameters()])
    """
    named = list(model.named_parameters())
    n_batch = len(example_batch)

    def step(*args):
        data, params = args[:n_batch], args[n_batch:]
        out = functional_call(model, {n: p for (n, _), p in zip(named, params)}, data[0])
        return loss(out, *data[1:])
    step.__name__ = f"{type(model).__name__}_loss"
    prog = trace(step, *example_batch, *[np.asarray(p.value) for _, p in named])
    names = ["x", "y"] + [f"batch_{i}" for i in range(2, n_batch)] if n_batch > 1 else ["x"]
    for k, name in zip(prog.inputs, names[:n_batch] + [n for n, _ in named]):
        prog.nodes[k].name = name
    result = grad_program(prog, wrt=tuple(range(n_batch, n_batch + len(named))), with_value=True)
    loss_node = result.nodes[result.outputs[0]]
    if loss_node.name is None:
        loss_node.name = "loss"
    return remember_retrace(result, lambda *args: training_step_program(model, loss, *args[:n_batch]),
                            tuple(example_batch) + tuple(np.asarray(p.value) for _, p in named))
