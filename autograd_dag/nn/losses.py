"""Losses as modules, with PyTorch's names and options: ``nn.CrossEntropyLoss()(logits, target)``.

Each holds its options (class weights as a buffer, saved in the state dict as
PyTorch's) and calls the function of :mod:`autograd_dag.nn.functional`; the
class axis is the LAST axis, as there.
"""

from __future__ import annotations

import numpy as np

from . import functional as F
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]


def _weights(module: Module, name: str, value) -> None:
    if value is None:
        object.__setattr__(module, name, None)
    else:
        module.register_buffer(name, np.array(value.value if hasattr(value, "value") else value, copy=True))


def _integer(target) -> bool:
    value = getattr(target, "value", target)
    return np.asarray(value).dtype.kind in "iu"


class CrossEntropyLoss(Module):
    """:func:`~autograd_dag.nn.functional.cross_entropy` as a module, with PyTorch's options and defaults:
    ``weight`` (C,), ``ignore_index`` (−100: such targets add nothing), ``reduction``, ``label_smoothing``.

    ``ignore_index`` applies to class indices only (a probability target has none), as in PyTorch.
    Shapes: logits (..., C) (the class axis last); target (...) ints or (..., C) floats -> ().
    Example: ``nn.CrossEntropyLoss(label_smoothing=0.1)(model(x), y).backward()``.
    """

    def __init__(self, weight=None, *, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__()
        _weights(self, "weight", weight)
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing

    def forward(self, logits, target):
        return F.cross_entropy(logits, target, self.reduction, self.ignore_index if _integer(target) else None,
                               weight=self.weight, label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, ignore_index={self.ignore_index}, " \
               f"label_smoothing={self.label_smoothing}, weighted={self.weight is not None}"


class NLLLoss(Module):
    """:func:`~autograd_dag.nn.functional.nll_loss` as a module (``weight``, ``ignore_index`` −100, ``reduction``).

    Shapes: log-probabilities (..., C); target (...) ints -> (). Example: ``nn.NLLLoss()(log_p, y)``.
    """

    def __init__(self, weight=None, *, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__()
        _weights(self, "weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, log_probs, target):
        return F.nll_loss(log_probs, target, self.reduction, self.ignore_index if _integer(target) else None,
                          weight=self.weight)


class BCEWithLogitsLoss(Module):
    """:func:`~autograd_dag.nn.functional.binary_cross_entropy_with_logits` as a module (``weight``,
    ``reduction``, ``pos_weight``, PyTorch's order). Shapes: logits and labels of one shape -> ().
    Example: ``nn.BCEWithLogitsLoss(pos_weight=np.full(3, 2.0))(logits, labels)``.
    """

    def __init__(self, weight=None, *, reduction: str = "mean", pos_weight=None):
        super().__init__()
        _weights(self, "weight", weight)
        _weights(self, "pos_weight", pos_weight)
        self.reduction = reduction

    def forward(self, logits, target):
        return F.binary_cross_entropy_with_logits(logits, target, self.reduction, weight=self.weight,
                                                  pos_weight=self.pos_weight)
