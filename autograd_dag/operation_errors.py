"""The errors of a failed operation: what ``apply`` raises when numpy refuses to compute a primitive.

numpy's own message names neither the operation nor the user's line; the
primitive's shape rule usually knows precisely what is wrong. Kept apart from
``core`` (which calls :func:`failure` only once an implementation has raised).
"""

from __future__ import annotations

import inspect

import numpy as np

from .modes import modes
from .errors import AutogradDagError, ShapeError, UndefinedDerivativeError, located, user_source


def failure(prim, args, params: dict, exc: Exception) -> Exception:
    """The exception :func:`apply` raises for ``prim``'s implementation having raised ``exc`` on ``args``."""
    if isinstance(exc, AutogradDagError):
        if " (at " in str(exc):
            return exc
        # A derivative rule's check names the forward node's line (the sweep's attribution).
        override = modes().source_override
        source = override if isinstance(exc, UndefinedDerivativeError) and override else None
        return type(exc)(f"{exc}{located(source or user_source())}")
    if isinstance(exc, (Warning, FloatingPointError)):
        return exc  # the user asked for warnings as errors (np.seterr / -W error): keep them
    return operation_error(prim, args, params, exc)  # numpy's own error: translate, never leak it raw


def check_operand_count(prim, args, params: dict) -> None:
    """Refuse operands a ufunc implementation would read as its output array (``np.exp(x, y)`` writes into y).

    Python implementations raise on a wrong count themselves (the error names the
    primitive); a ufunc does not. Called where operands are not fixed by a
    public function's signature: calling a :class:`Primitive`, ``Program.from_graph``.
    """
    impl = prim.impl
    if type(impl) is np.ufunc and (len(args) != impl.nin or params):
        got = f"{len(args)}" + (f" and parameters {sorted(params)}" if params else "")
        raise operation_error(prim, [np.asarray(getattr(a, "value", a)) for a in args], {},
                              TypeError(f"{prim.name} takes {impl.nin} operand{'s' * (impl.nin != 1)} and no "
                                        f"parameters; got {got}{_OVERWRITE * (len(args) > impl.nin)}"
                                        f"{located(user_source())}"))
    taken = _operands_as_params(prim, params)
    if taken:
        raise operation_error(prim, [np.asarray(getattr(a, "value", a)) for a in args], {},
                              TypeError(f"{prim.name} takes {', '.join(taken)} as operand(s), not as "
                                        f"parameter(s): its operands are {_operand_slots(prim)}, in this order"
                                        f"{located(user_source())}"))


_SLOTS: dict = {}  # Primitive -> its operand names (a signature costs ~10 µs; primitives live forever)


def _operand_slots(prim) -> list:
    """The names of ``prim``'s operands: its implementation's positional parameters, one per derivative rule."""
    slots = _SLOTS.get(prim)
    if slots is None:
        slots = []
        if prim.vjp_parts is not None:
            try:
                found = list(inspect.signature(prim.impl).parameters.values())[:len(prim.vjp_parts)]
            except (TypeError, ValueError):
                found = []
            slots = [q.name for q in found if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
        _SLOTS[prim] = slots
    return slots


def _operands_as_params(prim, params: dict) -> list:
    """The params naming one of ``prim``'s operands (``clip``'s ``a_min``).

    ``np.clip(x, a_min=0)`` computes, so the value came out right, but the recorded
    ``clip`` had one operand where its derivative rules read three: its gradient raised
    "<lambda>() got an unexpected keyword argument 'a_min'".
    """
    if not params:
        return []
    slots = _operand_slots(prim)
    return [k for k in params if k in slots]


_OVERWRITE = " (numpy would write the result into the extra operand, overwriting it)"


def operation_error(prim, args, params: dict, exc: Exception) -> AutogradDagError:
    """The library error for a primitive that numpy refused to compute.

    The primitive's shape rule, when it has one, usually knows precisely what is
    wrong (Expect / Actual); numpy's message is kept as the last resort.
    """
    shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in args)
    # The implementation's own check says what is wrong, without numpy's vocabulary.
    detail = exc.detail if isinstance(exc, ShapeError) else f"{type(exc).__name__}: {exc}"
    kind = ShapeError
    if prim.shape is not None:
        try:
            prim.shape(*args, **params)
        except ShapeError as rule_exc:
            detail, kind = rule_exc.detail, type(rule_exc)   # (a DTypeError stays a TypeError, as numpy's)
        except AutogradDagError as rule_exc:
            detail = str(rule_exc)
        except Exception:
            pass
    shown = ", ".join(f"{k}={v!r}" for k, v in params.items() if not isinstance(v, np.ndarray))
    return kind(f"{prim.name}({shapes}{', ' + shown if shown else ''}): {detail}")
