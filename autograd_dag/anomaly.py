"""Anomaly mode: :func:`detect_anomaly` raises at the first NaN or infinity, forward or backward.

``core.apply`` and the differentiation sweeps read the flag (``anomaly``, this
thread's modes: ``modes.py``) and call :func:`check_finite`; only this module
writes the flag.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .errors import AnomalyError, located
from .modes import _per_thread


def check_finite(t, what: str, node=None, consumer=None) -> None:
    """Raise :class:`AnomalyError` if ``t`` (a Tensor or an array) holds a NaN or an infinity.

    ``node`` is the recorded node the value belongs to (default: ``t``); its
    operation and source line are named in the message. ``consumer``: ``t``
    is an input of that node instead, which is then named.
    """
    v = np.asarray(getattr(t, "value", t))  # (a Tensor's value, or the array)
    node = t if node is None else node
    if v.dtype.kind in "fc" and not np.all(np.isfinite(v)):
        bad = "NaN" if np.any(np.isnan(v)) else "inf"
        if consumer is not None:
            raise AnomalyError(f"detect_anomaly: {what} of '{consumer.prim.name}' contains {bad} "
                               f"(shape {v.shape}): it came in from outside{located(consumer.source)}")
        op = node.prim.name if node.prim is not None else "leaf"
        raise AnomalyError(f"detect_anomaly: {what} of '{op}' contains {bad} "
                           f"(shape {v.shape}){located(node.source)}")


@contextlib.contextmanager
def detect_anomaly():
    """Context manager: raise at the first NaN or infinity, forward or backward.

    The error names the operation, its node and the user's source line. The
    mode is the calling thread's (modes.py), as ``no_grad`` is.

    numpy's own floating-point warnings are silenced inside: the error says
    more, and says it once.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> with ad.detect_anomaly():  # doctest: +ELLIPSIS
        ...     ad.log(ad.Tensor([-1.0]))
        Traceback (most recent call last):
        ...
        autograd_dag.errors.AnomalyError: detect_anomaly: forward value of 'log' contains NaN ...
    """
    m = _per_thread.modes
    previous = m.anomaly
    m.anomaly = True
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            yield
    finally:
        m.anomaly = previous


def anomaly_enabled() -> bool:
    """Whether ``detect_anomaly`` is in force."""
    return _per_thread.modes.anomaly
