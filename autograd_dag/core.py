"""The bottom layer: the primitive record, the recorded Tensor, and ``apply``.

A :class:`Tensor` is a numpy value plus the node that made it: the primitive,
the parent Tensors, the static parameters, the user's source line and the name
scope. :func:`apply` is the one function that runs a primitive: it computes the
value with numpy and, unless recording is off (``no_grad``), records the node.
Everything else — programs, reverse and forward mode, rendering — reads these
records; nothing here knows about them.

The record is kept small on purpose: every numpy-style operation a user writes
pays for it.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import sys
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from . import trace_state
from .anomaly import anomaly_enabled, check_finite, detect_anomaly  # noqa: F401  (for core's importers)
from .modes import _per_thread
from .errors import (AutogradDagError, NotDifferentiableError, TracingError, UndefinedDerivativeError, site_of,
                     user_source, located)
from .operation_errors import check_operand_count, failure, operation_error
from .promotion import PY_NUMBERS, weak
from .public_functions import through_public_function
from .scopes import attribute, attributed_to, attribution, current_scope, name_scope  # noqa: F401  (as above)

# What an operation asks before it records (recording? bare values? which
# scope, which attribution, anomaly mode, a program being recorded?) is this
# thread's: modes.py. Read as ``m = _per_thread.modes`` once, then its slots,
# on every operation. Written here: ``recording`` (no_grad), ``bare`` (the
# sweeps that record nothing: derivative rules then run on plain ndarrays,
# every primitive call a direct numpy call) and ``stand_in`` (while grad_program
# records on placeholders: make(prim, tensors, params) -> the array apply gives
# for an operation whose implementation raised on them, or None to raise;
# autodiff._standing_in).


# How many primitives were made without a VJP rule (only users' can be): while
# there are none, the eager backward() needs no check of the graph before it
# starts (see autodiff.reverse_sweep).
_without_vjp = 0


class Primitive:
    """One primitive function: its numpy implementation and its derivative rules.

    ``impl(*arrays, **params) -> ndarray`` computes the value.
    ``vjp(ct, out, *inputs, **params) -> tuple`` returns one cotangent per input
    (``None`` for a zero or undefined cotangent), written with Tensor operations
    so that the gradient is itself recorded as a program; or ``vjp`` is a tuple
    of per-input rules ``rule(ct, out, *inputs, **params) -> cotangent``.
    ``jvp(tangents, out, *inputs, **params) -> Tensor`` pushes the input tangents
    (a tuple, ``None`` for zero) forward, also with Tensor operations.
    ``batch(prim, args, batched, **params)`` is the batching rule of ``vmap``
    (see :mod:`autograd_dag.primitives.batch`).
    ``shape(*avals, **params) -> (shape, dtype)`` is the abstract rule; it is
    consulted to explain a failed operation and to check a program without
    running it. ``nondiff`` lists the positions of inputs that carry no
    derivative (integer indices, boolean masks). ``transpose``, ``bilinear``: what a linear
    primitive's rules were derived from (``primitives.registry.linear_rules``), else None, False;
    ``partials``: what an elementwise one's were (``elementwise.defelementwise``).

    Calling a primitive applies it: ``exp_prim(x)`` records a node like ``ad.exp(x)``; a built-in one
    takes its parameters as its public function does (``PRIMITIVES["flip"](x, axis=-1)``).
    """

    __slots__ = ("name", "impl", "vjp", "vjp_parts", "jvp", "shape", "nondiff", "batch", "vjp_into", "reads",
                 "transpose", "bilinear", "partials",
                 "vjp_piece")

    def __init__(self, name: str, impl: Callable, *, vjp: Callable | tuple | None = None,
                 jvp: Callable | None = None, shape: Callable | None = None,
                 nondiff: tuple[int, ...] = (), batch: Callable | None = None,
                 vjp_into: Callable | None = None, reads: tuple | None = None,
                 transpose: Callable | tuple | None = None, bilinear: bool = False,
                 partials: tuple | None = None):
        self.name = name
        self.transpose, self.bilinear, self.partials = transpose, bilinear, partials
        # The inputs whose numbers the derivative rules read, and "out" if they read the
        # output (None: all); an ndarray operand elsewhere (b in x + b) is not copied on record.
        self.reads = reads
        self.impl = impl
        # ``vjp`` may also be a tuple with one rule per input (each returning
        # that input's cotangent, or None): the reverse sweep then calls only
        # the rules of inputs that need a cotangent (x in ``x @ W.T`` costs
        # nothing), as HIPS autograd does. ``vjp`` is then their combination.
        # (One calling convention for both, a ``needed`` mask passed to every
        # rule, measured 0.45 µs per node slower on the per-op chain.)
        if vjp is None:
            global _without_vjp
            _without_vjp += 1
        if isinstance(vjp, (tuple, list)):
            parts = tuple(vjp)
            self.vjp_parts = parts
            self.vjp = lambda ct, out, *inputs, **params: tuple(  # (power has one input or two)
                None if part is None else part(ct, out, *inputs, **params) for part, _ in zip(parts, inputs))
        else:
            self.vjp_parts = None
            self.vjp = vjp
        self.jvp = jvp
        self.shape = shape
        self.nondiff = tuple(nondiff)
        # ``batch(prim, args, batched, **params)``: the primitive on operands of which
        # those flagged in ``batched`` carry a leading batch axis (vmap); the
        # result has the batch axis leading. None: vmap loops over the batch.
        self.batch = batch
        # ``vjp_into(buffer, ct, out, *inputs, **params)``: add input 0's cotangent
        # into ``buffer`` in place, for a primitive whose cotangent is a scatter
        # (getitem, take), whose VJP then returns a fresh array. The reverse
        # sweep sums the cotangents of many slices of one input in one buffer:
        # O(slice) per slice instead of O(input).
        self.vjp_into = vjp_into
        # ``vjp_piece(ct, out, x, **params) -> (join, piece) | None`` (getitem sets it): a recorded sweep
        # keeps x's cotangent aside until x's sum is complete; ``join(pieces)`` then makes few Tensors of them.
        self.vjp_piece = None

    def __call__(self, *args, **params):
        # A built-in primitive goes through its public function, which puts the parameters as a
        # user writes them (axis=-1) in the form its derivative and vmap rules read (axis=(1,)).
        out = through_public_function(self, args, params)
        if out is not None:
            return out
        check_operand_count(self, args, params)
        return apply(self, *args, **params)

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


class Tensor:
    """A numpy value plus the node that made it.

    Attributes: ``value`` (the ndarray), ``prim`` (the :class:`Primitive`, or
    ``None`` for a leaf), ``parents`` (the input Tensors), ``params`` (static
    parameters such as ``axis``), ``requires_grad``, ``grad`` (filled by
    ``backward()``), ``name``, ``source`` (``(filename, lineno)`` of the user's
    line), ``scope`` (the ``name_scope`` names in force) and ``serial`` (0 for
    a leaf, then decreasing with every node made: a node's is below its parents';
    a leaf changed in place takes a new one, see ``changed_in_place``).

    The number itself is ``t.value`` (an ndarray, never copied); ``t.detach()``
    (or ``t.data``) is a new leaf with that value and no history. numpy's own
    conversion (``np.asarray(t)``) and ``Tensor(t)`` are refused while ``t``
    requires a gradient and operations record, because the derivative through
    them would be lost.

    Shapes: any. Python scalars and lists become float64 arrays.

    Example:
        >>> import autograd_dag as ad
        >>> x = ad.Tensor([1.0, 2.0], requires_grad=True, name="x")
        >>> y = (x * x).sum()
        >>> float(y.value)
        5.0
    """

    __slots__ = ("value", "prim", "parents", "params", "requires_grad", "grad",
                 "name", "source", "scope", "serial", "__weakref__")
    # Make ``ndarray + Tensor`` defer to ``Tensor.__radd__``.
    __array_priority__ = 1000.0

    def __init__(self, value: Any, requires_grad: bool = False, name: str | None = None):
        if isinstance(value, Tensor):
            numbers = concrete(value, "ad.Tensor(t) (a new leaf of t's numbers)")   # (jit: frozen data)
            if value.requires_grad and _per_thread.modes.recording:
                # A new leaf of its numbers would be a silent detach: the derivative through
                # it (say ad.Tensor(x) of grad's own argument) would be zero.
                raise NotDifferentiableError(
                    f"ad.Tensor(t) of a Tensor that requires a gradient (shape {value.shape}) makes a new "
                    f"leaf without t's history: the derivative through it would be lost. Use t itself, "
                    f"or t.detach() to cut it on purpose{located(user_source())}")
            value = numbers
        self.value = as_array(value)
        self.prim = None
        self.parents = ()
        self.params = None
        self.requires_grad = bool(requires_grad)
        if self.requires_grad and self.value.dtype.kind != "f":
            if self.value.dtype.kind in "biu":
                # One rule for Tensor([1, 2]) and Tensor(np.arange(2)): asking for a
                # gradient makes the numbers real (Python lists become float64 anyway).
                self.value = self.value.astype(np.float64)
            else:
                raise AutogradDagError(
                    f"Tensor(requires_grad=True): only real floating-point tensors can require "
                    f"gradients; got dtype {self.value.dtype}"
                    + (" (pass the real and imaginary parts as two real Tensors)"
                       if self.value.dtype.kind == "c" else "")
                    + located(user_source()))
        self.grad = None
        self.name = name
        self.source = user_source()
        self.scope = _per_thread.modes.scope
        self.serial = 0

    def __deepcopy__(self, memo: dict) -> "Tensor":
        # A leaf (an input, a parameter) is copied with its numbers and its .grad, as the
        # default protocol would. A computed Tensor is refused, as PyTorch refuses it: the
        # default would copy its whole recorded history through Python's recursive copy
        # (RecursionError on a long chain), and a detached copy would lose the derivative.
        if self.prim is not None:
            raise AutogradDagError(
                f"copy.deepcopy of a Tensor computed by '{self.prim.name}' (shape {self.shape}): only "
                f"leaves (inputs, parameters) are copied; copy t.detach() for its numbers"
                f"{located(user_source())}")
        new = object.__new__(type(self))
        memo[id(self)] = new
        for slot in _TENSOR_STATE:
            setattr(new, slot, copy.deepcopy(getattr(self, slot), memo))
        extra = getattr(self, "__dict__", None)  # (a subclass's own attributes)
        if extra:
            new.__dict__.update(copy.deepcopy(extra, memo))
        return new

    # The properties a numpy user reaches for first.
    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def ndim(self) -> int:
        return self.value.ndim

    @property
    def size(self) -> int:
        return self.value.size

    @property
    def is_leaf(self) -> bool:
        """No operation made it (PyTorch's leaf, a program's root; ``Graph.leaves()`` are the book's: no children).

        Example: ``Tensor(1.0).is_leaf`` is True, ``(Tensor(1.0) * 2).is_leaf`` False."""
        return self.prim is None

    def __len__(self) -> int:
        return len(self.value)

    def __array__(self, dtype=None, copy=None):
        # numpy's conversion would silently cut the graph here: the array it
        # returns has no derivative, so any gradient through it would be zero.
        m = _per_thread.modes
        if self.requires_grad and m.recording:
            raise NotDifferentiableError(
                f"converting a Tensor that requires a gradient (shape {self.shape}) to a numpy array "
                f"would lose its derivative: np.asarray/np.array, or a numpy function without a rule "
                f"for Tensors, did it. Use ad operations (ad.sum, ad.matmul, ...) or define one with "
                f"ad.primitive; take the number out explicitly with t.value or t.detach()"
                f"{located(user_source())}")
        value = concrete(self, "a numpy conversion (np.asarray, or a numpy function without a rule "
                               "for Tensors)") if m.recording_programs else self.value
        return value if dtype is None else value.astype(dtype)

    def numpy(self) -> np.ndarray:
        """The value as an ndarray (no copy); refused, like ``np.asarray``, if it requires a gradient.

        ``t.value`` (or ``t.detach()``) takes the number out explicitly.
        """
        return self.__array__()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        return concrete(self, "Tensor.item()").item()

    # Python numbers and truth values are read on purpose, but inside jit, trace or
    # vmap they would become constants of the program: concrete() refuses them there.
    def __float__(self) -> float:
        return float(concrete(self._one_element("float(t)"), "float(t)").reshape(()))

    def __int__(self) -> int:
        return int(concrete(self._one_element("int(t)"), "int(t)").reshape(()))

    def __index__(self) -> int:
        # range(t), a list index, a count: Python asks for an integer. Under jit or trace the
        # value is the program's input, so concrete() refuses it, saying why (without this,
        # Python's bare "'Tensor' object cannot be interpreted as an integer").
        # As numpy's: only a 0-d integer array is an integer. Of shape (1,) it is an index array,
        # and the TypeError lets numpy read it as one (a[t] keeps the axis a[np.array([2])] keeps).
        value = concrete(self, "an integer (range(n), an index)")
        if value.dtype.kind not in "iu" or value.ndim != 0:
            raise TypeError(f"a Tensor of dtype {value.dtype} and shape {self.shape} cannot be used as an "
                            f"integer (range(n), an index): only a 0-d integer Tensor can, as numpy's "
                            f"only 0-d integer arrays{located(user_source())}")
        return int(value)

    def _one_element(self, what: str) -> "Tensor":
        # numpy's own refusal ("only 0-dimensional arrays can be converted") names
        # neither the shape nor the line that asked; one element of any shape converts,
        # as bool(t) and PyTorch's float(t) do.
        if self.value.size != 1:
            raise AutogradDagError(
                f"{what}: a Tensor of shape {self.shape} has {self.value.size} elements; only a one-element "
                f"Tensor becomes a Python number (reduce it first, t.sum(), or take one element, t[i])"
                f"{located(user_source())}")
        return self

    def __bool__(self) -> bool:
        if self.value.size != 1:
            raise AutogradDagError(
                f"the truth value of a Tensor of shape {self.shape} is ambiguous (it has {self.value.size} "
                f"elements); reduce it first (t.max(), t.min(), t.sum()) or compare one element"
                f"{located(user_source())}")
        return bool(concrete(self, "the truth value of a Tensor (if t, and, or, min/max of Tensors)"))

    # Tensors are compared elementwise by ``==``, so hashing is by identity.
    __hash__ = object.__hash__

    def detach(self) -> "Tensor":
        """A new leaf with the same value (shared, not copied) and no history.

        Nothing computed from it records a path back to this Tensor: its
        derivative is cut there, on purpose. ``t.value`` is the bare ndarray.
        """
        return Tensor(self.value, name=self.name)

    @property
    def data(self) -> "Tensor":
        """``t.detach()``, PyTorch's name for it: the value as a new leaf without history."""
        return self.detach()

    def retain_grad(self) -> "Tensor":
        """Ask ``backward()`` to fill ``.grad`` of this non-leaf Tensor too; returns self.

        Leaves that require a gradient get ``.grad`` anyway; an intermediate
        result's cotangent is otherwise dropped as soon as it has been used.

        Example:
            >>> import autograd_dag as ad
            >>> x = ad.Tensor([1.0, 2.0], requires_grad=True)
            >>> y = (x * x).retain_grad()
            >>> (y * 3.0).sum().backward()
            >>> y.grad.value
            array([3., 3.])
        """
        if self.requires_grad:
            key = id(self)
            _retained[key] = weakref.ref(self, lambda _, key=key: _retained.pop(key, None))
        return self

    def zero_grad(self) -> None:
        """Reset ``.grad`` to None (gradients accumulate across ``backward()`` calls)."""
        self.grad = None

    def requires_grad_(self, flag: bool = True) -> "Tensor":
        """Mark a leaf as requiring a gradient (in place); returns self."""
        if self.prim is not None:
            raise AutogradDagError(
                f"requires_grad_: only leaves can be marked; '{self.prim.name}' output is not a leaf")
        self.requires_grad = bool(flag)
        return self

    if TYPE_CHECKING:
        # Wired from above (operators.py), declared here for type checkers.
        def backward(self, grad: Any = None, create_graph: bool = False, retain_graph: bool = False) -> None: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __eq__(self, other: Any) -> Tensor: ...  # type: ignore[override]  # elementwise, as numpy's
        def __ne__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __getitem__(self, index: Any) -> Tensor: ...
        def __iter__(self) -> Iterator[Tensor]: ...
        def __getattr__(self, name: str) -> Any: ...  # numpy-named methods: sum, mean, reshape, T, ...

    def __repr__(self) -> str:
        head = f"Tensor({np.array2string(self.value, precision=4, threshold=20)}"
        extra = []
        if self.name:
            extra.append(f"name={self.name!r}")
        if self.prim is not None:
            extra.append(f"op={self.prim.name}")
        if self.requires_grad:
            extra.append("requires_grad=True")
        return head + "".join(", " + e for e in extra) + ")"


# Non-leaf Tensors whose cotangent backward() keeps in .grad (retain_grad),
# by id; weak, so that retaining does not keep a graph alive. (Not a WeakSet:
# its lookups compare Tensors with ==, which is elementwise.)
_retained: dict[int, weakref.ref] = {}


def as_array(value: Any, listed_as_numpy: bool = False) -> np.ndarray:
    """numpy array of ``value``; Python scalars and lists become float64.

    ndarrays and numpy scalars keep their dtype; ``bool``/``int`` Python scalars inside lists are
    float64 (the user meant a number), unless ``listed_as_numpy`` (beside operands: i32 + [1, 2] is int64).
    """
    if isinstance(value, np.ndarray):
        return value   # (string and object arrays too: ONNX programs carry them as inputs)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        raise AutogradDagError(
            f"a list of Tensors cannot become an array silently (its derivative would be lost); "
            f"use ad.stack([...]) or ad.concatenate([...]){located(user_source())}")
    if isinstance(value, (bool, int, float, list, tuple)):
        try:
            listed = listed_as_numpy and isinstance(value, (list, tuple))
            return np.asarray(value, dtype=None if listed else np.float64)
        except (ValueError, TypeError) as exc:
            raise AutogradDagError(f"cannot make a float64 array of {value!r}: {exc}") from None
    array = np.asarray(value)   # (a dict, a set, any object: numpy wraps it in a 0-d array of objects)
    return array if array.dtype.kind not in "OUS" else _refused(value)


def _refused(value):
    # Strings and objects have no arithmetic: refused here, as torch.tensor("abc") is, not at a later operation.
    raise AutogradDagError(f"cannot make a numeric array of a {type(value).__name__} ({repr(value)[:60]}; "
                           f"dtype {np.asarray(value).dtype}){located(user_source())}")


def _contains_tensor(items) -> bool:
    stack = [items]
    while stack:
        for v in stack.pop():
            if isinstance(v, Tensor):
                return True
            if isinstance(v, (list, tuple)):
                stack.append(v)
    return False


_new_tensor = object.__new__
_getframe = sys._getframe
# What a Tensor holds (Tensor.__deepcopy__ copies it slot by slot).
_TENSOR_STATE = tuple(slot for slot in Tensor.__slots__ if slot != "__weakref__")

# The ``serial`` of every node made by ``apply``, counting down from -1 (a leaf's
# is 0, or the stamp of its last change in place: changed_in_place): a node's is
# below its parents' (they existed before it), so the eager reverse sweep visits
# the newest node first from a min-heap, with no walk over the graph before it
# (autodiff.reverse_sweep).
_serials = itertools.count(-1, -1)


def changed_in_place(t: Tensor) -> None:
    """Stamp leaf ``t``, whose array was just changed in place (an optimizer's step, a loaded state).

    It takes the serial of a node made now, below that of every node recorded
    so far: a node recorded before the change has a serial above its parent's,
    which no node can have otherwise, and the reverse sweep refuses it (it
    would differentiate with the new value where it computed with the old
    one, as PyTorch's version counters refuse it). Nodes recorded after are unaffected.
    Optimizers and ``load_state_dict`` call it; call it after changing ``t.value``
    (or the array ``t`` was made from) yourself. Shapes: any.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> w = ad.Tensor(np.ones(2), requires_grad=True, name="w")
        >>> loss = ad.sum(ad.sin(w))
        >>> w.value[...] = 5.0
        >>> ad.changed_in_place(w)
        >>> loss.backward()
        Traceback (most recent call last):
        ...
        autograd_dag.errors.ChangedInPlaceError: backward: 'w' (shape (2,)) was changed in place ...
    """
    if t.prim is not None:
        raise AutogradDagError(f"changed_in_place: only a leaf (an input, a parameter) is stamped; t was "
                               f"computed by '{t.prim.name}': record it again from the changed leaves"
                               f"{located(user_source())}")
    global _last_change
    t.serial = _last_change = next(_serials)


# The serial of the newest change in place (0: none yet). Only nodes recorded before
# it (a larger serial) can have a changed parent: the sweep checks the parents of those only.
_last_change = 0


def _leaf(value: np.ndarray) -> Tensor:
    """A constant leaf recorded for a non-Tensor argument."""
    t = _new_tensor(Tensor)
    t.value = value
    t.prim = None
    t.parents = ()
    t.params = None
    t.requires_grad = False
    t.grad = None
    t.name = None
    t.source = None
    t.scope = _per_thread.modes.scope
    t.serial = 0
    return t


def _kept(array: np.ndarray, prim: Primitive | None, position: int) -> np.ndarray:
    """``array``, an operand of a node that will be differentiated, as the node keeps it.

    A copy when ``prim``'s derivative rules read it: the user may change the
    array in place before ``backward()`` (``x[...] = 5``), and the gradient
    must be the one at the numbers the forward pass used. Not copied: inside
    ``no_grad``, while jit/trace/vmap record a program (its constants are read
    by identity on every call, its derivative computed in the same call), and
    read-only arrays (a broadcast view would be materialized to its full size).
    """
    m = _per_thread.modes
    if (not m.recording or m.recording_programs or (prim is not None and prim.reads is not None
                                               and position not in prim.reads)
            or not array.flags.writeable):
        return array
    return array.copy()


def _unshared(value: np.ndarray, operands: tuple) -> np.ndarray:
    """``value``, or a copy if it is a view of one of the ndarray ``operands`` (reshape, a slice).

    The view would be a constant operand of later nodes (``ad.reshape(x, s) @ w``),
    which _kept never sees: it is not an ndarray there.
    """
    m = _per_thread.modes
    if m.recording and not m.recording_programs:
        for a in operands:
            if isinstance(a, np.ndarray) and a.flags.writeable and np.may_share_memory(value, a):
                return value.copy()
    return value


def _lift(args: tuple, prim: Primitive | None = None) -> tuple[Tensor, ...]:
    """Turn the non-Tensor arguments of an operation into constant leaves.

    An ndarray beside a Tensor requiring a gradient is copied if ``prim``'s
    derivative rules read it (:func:`_kept`).

    A Python number is weak, as numpy 2 treats it: it takes the dtype numpy's
    promotion gives it beside the other operands, so that ``x32 * 2.0`` stays
    float32, ``i32 + 1`` stays int32 and ``mask + True`` stays bool (a float64
    constant would turn them into float64 numbers: ``mask + True`` would count
    to 2 instead of or-ing). Alone it becomes float64.
    """
    if len(args) == 2:
        # The common cases, a Tensor and an ndarray or a Python number (x * c,
        # 1 - x): no promotion search (only a Python number needs one).
        a, b = args
        if type(a) is Tensor:
            if type(b) is np.ndarray:
                return a, _leaf(_kept(b, prim, 1) if a.requires_grad else b)
            if type(b) in PY_NUMBERS:
                dtype = a.value.dtype
                return a, _leaf(np.array(b, dtype=dtype) if dtype.kind in "fc" else weak(b, (dtype,)))
        elif type(b) is Tensor:
            if type(a) is np.ndarray:
                return _leaf(_kept(a, prim, 0) if b.requires_grad else a), b
            if type(a) in PY_NUMBERS:
                dtype = b.value.dtype
                return _leaf(np.array(a, dtype=dtype) if dtype.kind in "fc" else weak(a, (dtype,))), b
    # Beside floating operands (and booleans, which never change a float), a number takes
    # their promoted float dtype; an integer operand leaves the choice to numpy's rule.
    float_dtype, integer, differentiated = None, False, False
    for a in args:
        if isinstance(a, Tensor) and a.requires_grad:
            differentiated = True
        if isinstance(a, (Tensor, np.ndarray)):
            kind = a.dtype.kind
            if kind in "fc":
                float_dtype = a.dtype if float_dtype is None else np.promote_types(float_dtype, a.dtype)
            elif kind != "b":
                integer = True
    out: list[Tensor] = []
    for position, a in enumerate(args):
        if isinstance(a, Tensor):
            out.append(a)
        elif differentiated and isinstance(a, np.ndarray):
            out.append(_leaf(_kept(a, prim, position)))
        elif isinstance(a, (bool, int, float)) and not isinstance(a, np.generic):
            out.append(_leaf(np.asarray(a, dtype=float_dtype) if float_dtype is not None and not integer else
                             weak(a, tuple(v.dtype for v in args if isinstance(v, (Tensor, np.ndarray))))))
        else:
            out.append(_leaf(as_array(a, listed_as_numpy=len(args) > 1)))
    return tuple(out)


def apply(prim: Primitive, *args, **params) -> Tensor:
    """Run ``prim`` on ``args`` and record the node (unless inside ``no_grad``).

    Non-Tensor arguments become constant leaves. A failure inside numpy is
    turned into a :class:`ShapeError` (or the primitive's own error) naming the
    operation, the operand shapes and the user's line; nothing is recorded then.
    """
    m = _per_thread.modes
    if m.bare:
        for a in args:
            if type(a) is Tensor:
                break
        else:
            try:
                return prim.impl(*args, **params)
            except (Warning, FloatingPointError, UndefinedDerivativeError):
                raise  # (the sweep names the line of the node being differentiated)
            except Exception as exc:
                raise operation_error(prim, [as_array(a) for a in args], params, exc) from None
    raw = None
    for a in args:
        if type(a) is not Tensor:
            raw, args = args, _lift(args, prim)
            break
    try:
        if len(args) == 1:
            value = prim.impl(args[0].value, **params)
        elif len(args) == 2:
            value = prim.impl(args[0].value, args[1].value, **params)
        else:
            value = prim.impl(*[a.value for a in args], **params)
    except Exception as exc:
        value = None if m.stand_in is None else m.stand_in(prim, args, params)
        if value is None:
            raise failure(prim, args, params, exc) from None
    if type(value) is not np.ndarray:
        value = np.asarray(value)  # numpy returns scalars for 0-d results; .value is always an ndarray
    elif raw is not None and value.base is not None:
        value = _unshared(value, raw)
    out = _new_tensor(Tensor)
    out.value = value
    out.prim = prim
    out.params = params or None
    out.grad = None
    out.name = None
    out.scope = m.scope
    out.serial = next(_serials)
    if m.recording:
        out.parents = args
        for a in args:
            if a.requires_grad:
                out.requires_grad = True
                break
        else:
            out.requires_grad = False
        override = m.source_override
        if override is None:
            out.source = site_of(_getframe(1))
        else:
            out.source = override
    else:
        out.parents = ()
        out.requires_grad = False
        out.source = None
    if m.anomaly:
        for a in args:
            if a.prim is None:
                # A NaN that came in from outside is the input's fault, not the operation's.
                check_finite(a, f"input {a.name!r}" if a.name else "a constant input", consumer=out)
        check_finite(out, "forward value")
    return out


def is_recording() -> bool:
    """Whether operations on this thread currently record nodes (False inside ``no_grad``).

    Example:
        >>> import autograd_dag as ad
        >>> with ad.no_grad():
        ...     ad.is_recording()
        False
    """
    return _per_thread.modes.recording


def _set_recording(recording: bool, bare: bool = False) -> tuple[bool, bool]:
    """Set whether operations record and whether they run on bare values; returns the previous pair.

    Passing the pair back restores it. For ``tracing.tracing``, entered on every
    transformation call, where one more context manager costs more than its function.
    """
    m = _per_thread.modes
    previous = m.recording, m.bare
    m.recording, m.bare = recording, bare
    return previous


@contextlib.contextmanager
def _recording_as(flag: bool):
    # Either way the operations inside make Tensors: bare-value mode is off.
    previous = _set_recording(flag)
    try:
        yield
    finally:
        _set_recording(*previous)


# The Tensor-typed questions about the tracer's state, which Tensor's own methods ask (float(t),
# t.item(), np.asarray(t)): the state itself is trace_state's, written by tracing only.
def concrete(x, what: str):
    """The numbers of ``x`` (a Tensor's value, or ``x`` itself) for code that needs them, not an operation.

    Shapes, checks and Python decisions may read a traced value; an array
    made from it and fed back into operations becomes a constant of the
    program. Inside ``jit``, ``trace`` or ``vmap`` that constant would hold
    this call's data for every later call (or the first example's for the
    whole batch), so reading a Tensor that depends on one of their inputs
    raises :class:`TracingError` naming ``what`` needed the numbers.

    Example: ``concrete(ad.Tensor([1, 2]), "a mask").tolist()`` is ``[1, 2]``.
    """
    if not isinstance(x, Tensor):
        return x
    if _per_thread.modes.recording_programs:
        transformation = trace_state.program_behind(x)
        if transformation is not None:
            raise TracingError(
                f"{transformation}: {what} needs the numbers of a Tensor computed from an input of the "
                f"function being traced (shape {x.shape}, {x.dtype}); the program would keep this call's "
                f"values and reuse them on every later call. Compute with it through ad operations, or "
                f"pass it from outside the traced function (a closure constant, fixed once traced)"
                f"{located(user_source())}")
    return x.value


def parameter(x, what: str):
    """The numbers of ``x`` given as a static parameter of an operation (a temperature, a fill value, ...).

    A parameter is a constant of the node: no derivative flows to it. A Tensor
    that requires a gradient there is refused, since its derivative would be
    silently zero; ``t.value`` (or ``t.detach()``) makes the constant on purpose.
    Inside ``jit``, ``trace`` or ``vmap``, as :func:`concrete` (first: its
    inputs require gradients too, and a frozen value is the nearer fault there).
    """
    value = concrete(x, what)
    if isinstance(x, Tensor) and x.requires_grad and _per_thread.modes.recording:
        raise NotDifferentiableError(
            f"{what} is a constant of the operation (no derivative flows to it), but it is a Tensor that "
            f"requires a gradient (shape {x.shape}): its derivative would be lost. Pass t.value or "
            f"t.detach() to make it a constant on purpose{located(user_source())}")
    return value


def traced(x) -> bool:
    """Whether ``x`` is a Tensor computed from an input of a ``jit``, ``trace`` or ``vmap`` being recorded.

    Its numbers are then this call's only: code that would choose something on
    them (an arrangement, a branch) must compute with operations instead (:func:`concrete`).
    """
    return tracer_of(x) is not None


def tracer_of(x) -> str | None:
    """The name ('jit', 'trace', 'vmap') of the innermost program-recording transformation ``x`` depends on, or None.

    Example: ``tracer_of(ad.Tensor(1.0))`` is None (not computed from a traced input).
    """
    if not isinstance(x, Tensor) or not _per_thread.modes.recording_programs:
        return None
    return trace_state.program_behind(x)


@contextlib.contextmanager
def bare_values():
    """Inside: primitives called on plain arrays return plain arrays, recording nothing.

    Used by the sweeps that need no derivative program (``create_graph=False``).
    """
    m = _per_thread.modes
    previous = m.bare, m.recording
    m.bare, m.recording = True, False
    try:
        yield
    finally:
        m.bare, m.recording = previous


def no_grad():
    """Context manager: operations inside compute values but record no nodes (on this thread: modes.py).

    Example:
        >>> import autograd_dag as ad
        >>> with ad.no_grad():
        ...     y = ad.Tensor([1.0]) * 2
        >>> y.prim is not None and y.parents == ()
        True
    """
    return _recording_as(False)


def enable_grad():
    """Context manager: record nodes again inside a ``no_grad`` block.

    Example:
        >>> import autograd_dag as ad
        >>> with ad.no_grad(), ad.enable_grad():
        ...     ad.is_recording()
        True
    """
    return _recording_as(True)


