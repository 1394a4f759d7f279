"""Named tensors: a :class:`Tensor` plus one name per axis (the named-tensor notation of seed 000).

A :class:`NamedTensor` holds a recorded Tensor and a tuple of distinct axis
names, one per axis. The order in which the axes are stored is an
implementation detail: every operation here finds an axis by its name, so
the result of a computation never depends on it (``X.align(...)`` chooses an
order when a positional Tensor is needed). Names sit on top; underneath,
every operation is an ordinary primitive (``einsum``, ``transpose``,
``reshape``, ``softargmax``, ``conv2d``...), so programs, reverse and forward
mode and rendering work unchanged.

Indexing by name: Python forbids keyword arguments inside ``[]``, so
``X[seq=3]`` is written ``X.index(seq=3)`` or ``X[{"seq": 3}]`` (the dict form
also takes names that are not Python identifiers, such as ``"seq'"``).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..core import Tensor
from ..errors import ShapeError
from ..primitives import elementwise as _ew
from ..primitives import mathfuncs as _mf
from ..primitives.conv import conv2d as _conv2d
from ..primitives.conv import max_pool2d as _max_pool2d
from ..primitives.indexing import getitem, take
from ..primitives.linalg import einsum
from ..primitives.fused import argmax as _argmax
from ..primitives.fused import logsumexp as _logsumexp
from ..primitives.fused import softargmax as _softargmax
from ..primitives.reductions import max as _max
from ..primitives.reductions import mean as _mean
from ..primitives.reductions import min as _min
from ..primitives.structure import IDENTITY, reshape, sum as _sum, transpose
from ..program import Program
from ..render import as_program
from ..render.axes import register_axis_names

__all__ = ["NamedTensor", "AxisNameError", "ndot", "nsum", "nmean", "nmax", "nmin", "softmax", "softargmax",
           "logsumexp", "argmax", "standardize", "flatten", "split", "unroll", "conv2d", "max_pool2d",
           "where", "maximum", "minimum", "add", "subtract", "multiply", "divide", "power", "exp", "log",
           "sqrt", "tanh", "relu", "logistic", "sigmoid", "sin", "cos", "abs", "negative", "softplus",
           "names_of"]


class AxisNameError(ShapeError):
    """A named operation got axes it cannot use: a missing or repeated name, or sizes that disagree.

    The message names the operation and the axes involved (never positions).
    """


# id(Tensor) -> (weak reference, names): which recorded Tensors carry axis
# names. The renderer's mapping from program nodes to names is read from it.
_NAMES: dict[int, tuple] = {}


def _forget(key):
    return lambda _: _NAMES.pop(key, None)


def names_of(t: Tensor) -> tuple[str, ...] | None:
    """The axis names a NamedTensor gave the recorded Tensor ``t`` (None if it has none).

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, names_of
        >>> x = NamedTensor(np.ones((2, 3)), "seq layer")
        >>> names_of(x.tensor)
        ('seq', 'layer')
    """
    entry = _NAMES.get(id(t))
    if entry is None or entry[0]() is not t:
        return None
    return entry[1]


def _show(names) -> str:
    return "(" + ", ".join(names) + ")"


def _as_names(names) -> tuple[str, ...]:
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    names = tuple(names)
    for n in names:
        if not isinstance(n, str) or not n or any(c.isspace() for c in n):
            raise AxisNameError(f"NamedTensor: Expect: axis names that are non-empty strings without spaces. "
                                f"Actual: {n!r} in {names!r}")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise AxisNameError(f"NamedTensor: Expect: distinct axis names. Actual: {_show(names)} repeats "
                            f"{', '.join(repr(d) for d in dup)}")
    return names


def _note(t, names: tuple[str, ...]):
    """Record that the axes of the intermediate Tensor ``t`` have ``names`` (for the picture); returns t."""
    if isinstance(t, Tensor):
        key = id(t)
        _NAMES[key] = (weakref.ref(t, _forget(key)), names)
    return t


def _wrap(t: Tensor, names: tuple[str, ...]) -> "NamedTensor":
    """A NamedTensor around ``t`` without checks (the operations here build correct ones)."""
    x = object.__new__(NamedTensor)
    x.tensor = t
    x.names = names
    _note(t, names)
    return x


class NamedTensor:
    """A Tensor plus one name per axis; the axes' storage order is an implementation detail.

    ``NamedTensor(value, names)``: ``value`` an array, number or Tensor (a
    Tensor is shared, not copied: gradients reach it); ``names`` a sequence of
    distinct strings or one string of names separated by spaces or commas.
    Attributes: ``tensor`` (the recorded Tensor), ``names`` (storage order),
    ``sizes`` (dict name -> size), ``value`` (ndarray in storage order), ``grad``.
    Elementwise operators (``+ - * / **``, comparisons) broadcast by the union
    of names; see :func:`ndot` for ⊙ and the module for the rest.
    Shapes: value of shape (d_1, ..., d_n) with n names -> axes name_i:d_i.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor
        >>> x = NamedTensor(np.arange(6.0).reshape(2, 3), "seq layer")
        >>> x
        NamedTensor(seq:2 × layer:3, float64)
        >>> b = NamedTensor(np.array([10.0, 20.0, 30.0]), "layer")
        >>> (b + x).align("seq", "layer").value
        array([[10., 21., 32.],
               [13., 24., 35.]])
        >>> x.index(seq=1).value, x[{"layer": slice(0, 2)}].sizes
        (array([3., 4., 5.]), {'seq': 2, 'layer': 2})
    """

    __slots__ = ("tensor", "names", "__weakref__")
    # ndarray (op) NamedTensor and Tensor (op) NamedTensor defer to the reflected method here.
    __array_priority__ = 2000.0

    def __init__(self, value, names, requires_grad: bool = False, name: str | None = None):
        names = _as_names(names)
        if isinstance(value, NamedTensor):
            raise AxisNameError(f"NamedTensor: Expect: an array or Tensor. Actual: a NamedTensor with axes "
                                f"{_show(value.names)}; use .rename() to change its names")
        if isinstance(value, Tensor):
            t = value
            if requires_grad and not t.requires_grad:
                t.requires_grad_(True)
            if name is not None:
                t.name = name
        else:
            t = Tensor(value, requires_grad=requires_grad, name=name)
        if t.ndim != len(names):
            raise AxisNameError(f"NamedTensor: Expect: one name per axis. Actual: {len(names)} names "
                                f"{_show(names)} for a value of {t.ndim} axes (shape {t.shape})")
        self.tensor = t
        self.names = names
        key = id(t)
        _NAMES[key] = (weakref.ref(t, _forget(key)), names)

    # -------------------------------------------------------------- attributes

    @property
    def sizes(self) -> dict[str, int]:
        """``{name: size}`` in storage order."""
        return dict(zip(self.names, self.tensor.shape))

    def size(self, name: str) -> int:
        """The size |name| of one axis."""
        return self.tensor.shape[_axis(self, name, "size")]

    @property
    def value(self) -> np.ndarray:
        """The numbers, in storage order (``align`` first to choose an order)."""
        return self.tensor.value

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def ndim(self) -> int:
        return len(self.names)

    @property
    def name(self):
        return self.tensor.name

    @name.setter
    def name(self, value):
        self.tensor.name = value

    @property
    def requires_grad(self) -> bool:
        return self.tensor.requires_grad

    @property
    def grad(self) -> "NamedTensor | None":
        """The gradient ``backward()`` filled in, with this tensor's names (None before)."""
        g = self.tensor.grad
        return None if g is None else _wrap(g if isinstance(g, Tensor) else Tensor(g), self.names)

    def backward(self, grad=None, **options) -> None:
        """Fill ``.grad`` of every leaf behind this (scalar) named tensor; options as ``Tensor.backward``.

        ``grad`` (the cotangent of a tensor with axes) must be a NamedTensor:
        its axes are found by name. A positional array would be read in the
        storage order, an implementation detail (``b + X`` may store
        (layer, seq)): with two axes of one size that is a silent transposition.
        """
        if isinstance(grad, NamedTensor):
            grad = grad.align(*self.names)
        elif grad is not None and np.ndim(grad.value if isinstance(grad, Tensor) else grad) > 0:
            raise AxisNameError(f"backward: Expect: grad as a NamedTensor with axes {_show(self.names)} (found by "
                                f"name) or a scalar. Actual: a positional {type(grad).__name__} of shape "
                                f"{np.shape(grad.value if isinstance(grad, Tensor) else grad)}; name its axes "
                                f"with NamedTensor(grad, names)")
        self.tensor.backward(grad, **options)

    def detach(self) -> "NamedTensor":
        """The same names around ``tensor.detach()``: no history."""
        return _wrap(self.tensor.detach(), self.names)

    def item(self):
        return self.tensor.item()

    def __float__(self) -> float:
        return float(self.tensor)

    def __bool__(self) -> bool:
        return bool(self.tensor)  # raises unless there is one element, as Tensor does

    def to_program(self) -> Program:
        """The program computing this tensor, with axis names attached (``ad.render(X)`` draws them).

        Shapes: the program's output has this tensor's shape (its storage order).

        Example:
            >>> import numpy as np
            >>> X = NamedTensor(np.ones((2, 3)), "seq layer")
            >>> len(X.softmax("layer").to_program().outputs)
            1
        """
        return program_of(self)

    def __repr__(self) -> str:
        return f"NamedTensor({axes_str(self.names, self.tensor.shape)}, {self.dtype})"

    def __array__(self, dtype=None, copy=None):
        raise AxisNameError(f"NamedTensor with axes {_show(self.names)}: numpy and positional ad functions have "
                            f"no names; use the ad.named functions (named.exp, named.ndot, ...), or "
                            f".align(*names) for a positional Tensor (.value for the storage order)")

    # ------------------------------------------------------------ rearranging

    def rename(self, mapping: dict | None = None, **renames) -> "NamedTensor":
        """X_{old→new}: the same numbers with axes renamed (a dict also takes names like ``"seq'"``).

        Example: ``X.rename(seq="seq2")`` or ``X.rename({"seq": "seq'"})``.
        """
        renames = {**(mapping or {}), **renames}
        for old in renames:
            if old not in self.names:
                raise AxisNameError(f"rename {old!r}: Expect: an axis of the tensor. Actual: the tensor has "
                                    f"axes {_show(self.names)}")
        new = _as_names([renames.get(n, n) for n in self.names])
        return _wrap(self.tensor, new)

    def align(self, *names) -> Tensor:
        """The positional Tensor with axes in the order ``names`` (names not in X become size-1 axes).

        Every axis of X must be listed. Shapes: -> (|names[0]|, |names[1]|, ...).
        Example: ``NamedTensor(np.ones((2, 3)), "a b").align("b", "a").shape == (3, 2)``.
        """
        if len(names) == 1 and not isinstance(names[0], str):
            names = tuple(names[0])
        names = _as_names(names)
        missing = [n for n in self.names if n not in names]
        if missing:
            raise AxisNameError(f"align {_show(names)}: Expect: every axis of the tensor listed. Actual: the "
                                f"tensor has axes {_show(self.names)}; {', '.join(map(repr, missing))} missing")
        return _aligned(self, names)

    def index(self, **index) -> "NamedTensor":
        """X[name=i]: select (an int removes the axis) or slice (the axis stays) by name.

        Example: ``X.index(seq=3)``, ``X.index(seq=slice(0, 4))``; for names
        that are not identifiers use ``X[{"seq'": 3}]``.
        """
        return self[index]

    def __getitem__(self, index) -> "NamedTensor":
        if not isinstance(index, dict):
            raise AxisNameError(f"NamedTensor with axes {_show(self.names)}: Expect: index by name, "
                                f"X[{{'name': i}}] or X.index(name=i). Actual: a positional index {index!r}")
        positional: list = [slice(None)] * self.ndim
        kept = []
        for name, i in index.items():
            ax = _axis(self, name, "index")
            n = self.tensor.shape[ax]
            if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
                if not -n <= int(i) < n:
                    raise AxisNameError(f"index {name}={int(i)}: Expect: an index into axis {name!r} of size {n}. "
                                        f"Actual: out of range")
                positional[ax] = int(i)
            elif isinstance(i, slice):
                positional[ax] = i
            else:
                raise AxisNameError(f"index {name}={i!r}: Expect: an int or a slice. Actual: "
                                    f"{type(i).__name__}")
        kept = tuple(n for n, p in zip(self.names, positional) if not isinstance(p, int))
        return _wrap(getitem(self.tensor, tuple(positional)), kept)

    # ------------------------------------------------------------ operators

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return subtract(self, other)

    def __rsub__(self, other):
        return subtract(other, self)

    def __mul__(self, other):
        return multiply(self, other)

    def __rmul__(self, other):
        return multiply(other, self)

    def __truediv__(self, other):
        return divide(self, other)

    def __rtruediv__(self, other):
        return divide(other, self)

    def __pow__(self, other):
        return power(self, other)

    def __rpow__(self, other):
        return power(other, self)

    def __neg__(self):
        return negative(self)

    def __lt__(self, other):
        return _elementwise(_ew.less, "less", self, other)

    def __le__(self, other):
        return _elementwise(_ew.less_equal, "less_equal", self, other)

    def __gt__(self, other):
        return _elementwise(_ew.greater, "greater", self, other)

    def __ge__(self, other):
        return _elementwise(_ew.greater_equal, "greater_equal", self, other)

    # Elementwise as Tensor's; without them X == 0 compared identities and returned False.
    def __eq__(self, other):  # type: ignore[override]
        return _elementwise(_ew.equal, "equal", self, other)

    def __ne__(self, other):  # type: ignore[override]
        return _elementwise(_ew.not_equal, "not_equal", self, other)

    __hash__ = object.__hash__


def axes_str(names, shape) -> str:
    """``seq:64 × layer:128`` (``scalar`` for no axes).

    Example:
        >>> axes_str(("seq", "layer"), (64, 128))
        'seq:64 × layer:128'
    """
    return " \u00d7 ".join(f"{n}:{d}" for n, d in zip(names, shape)) or "scalar"


def _axis(x: NamedTensor, name: str, op: str) -> int:
    if not isinstance(x, NamedTensor):
        raise AxisNameError(f"{op}: Expect: a NamedTensor. Actual: {type(x).__name__}")
    try:
        return x.names.index(name)
    except ValueError:
        raise AxisNameError(f"{op} over {name!r}: Expect: an axis of the tensor. Actual: the tensor has axes "
                            f"{_show(x.names)}") from None


def _over(over, op: str) -> tuple[str, ...]:
    if isinstance(over, str):
        return (over,)
    over = tuple(over)
    if not all(isinstance(n, str) for n in over) or len(set(over)) != len(over):
        raise AxisNameError(f"{op}: Expect: an axis name or distinct axis names. Actual: {over!r}")
    return over


def _count(value, op: str, label: str) -> int:
    """An axis size, window or stride given by the user: an integer, never a float rounded down silently."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise AxisNameError(f"{op}: Expect: {label} an integer. Actual: {value!r}")
    return int(value)


def _aligned(x: NamedTensor, order: tuple[str, ...]) -> Tensor:
    """x's Tensor with its axes in ``order`` (names x lacks inserted as size-1 axes)."""
    t = x.tensor
    own = tuple(n for n in order if n in x.names)
    if own != x.names:
        t = _note(transpose(t, tuple(x.names.index(n) for n in own)), own)
    if len(own) != len(order):
        sizes = dict(zip(x.names, x.tensor.shape))
        t = _note(reshape(t, tuple(sizes.get(n, 1) for n in order)), tuple(order))
    return t


def _as_operand(x, op: str):
    """A NamedTensor, or a scalar (number, 0-d array or Tensor) that broadcasts without names."""
    if isinstance(x, NamedTensor):
        return x
    if isinstance(x, Tensor):
        if x.ndim == 0:
            return x
        raise AxisNameError(f"{op}: Expect: NamedTensors or scalars. Actual: a positional Tensor of shape "
                            f"{x.shape}; name its axes with NamedTensor(t, names)")
    if isinstance(x, (bool, int, float, np.number)) or (isinstance(x, np.ndarray) and x.ndim == 0):
        return x
    raise AxisNameError(f"{op}: Expect: NamedTensors or scalars. Actual: a positional {type(x).__name__} of shape "
                        f"{np.shape(x)}; name its axes with NamedTensor(value, names)")


def _union(op: str, operands) -> tuple[tuple[str, ...], dict[str, int]]:
    """The union of the operands' names (first seen first) and their sizes, checked to agree."""
    order: list[str] = []
    sizes: dict[str, int] = {}
    where_: dict[str, int] = {}
    for i, x in enumerate(operands):
        if not isinstance(x, NamedTensor):
            continue
        for n, d in zip(x.names, x.tensor.shape):
            if n not in sizes:
                order.append(n)
                sizes[n], where_[n] = d, i
            elif sizes[n] != d:
                first = operands[where_[n]]
                raise AxisNameError(f"{op}: Expect: axis {n!r} of the same size in every operand. Actual: "
                                    f"{n}:{sizes[n]} in operand {where_[n]} "
                                    f"({axes_str(first.names, first.tensor.shape)}) "
                                    f"and {n}:{d} in operand {i} ({axes_str(x.names, x.tensor.shape)})")
    return tuple(order), sizes


def _elementwise(fn, op: str, *operands) -> NamedTensor:
    """fn on the operands aligned to the union of their names: broadcasting by name, never by position."""
    operands = tuple(_as_operand(x, op) for x in operands)
    order, _ = _union(op, operands)
    args = [_aligned(x, order) if isinstance(x, NamedTensor) else x for x in operands]
    return _wrap(fn(*args), order)


def _binary(fn, op: str, doc_symbol: str):
    def f(a, b) -> NamedTensor:
        return _elementwise(fn, op, a, b)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = (f"a {doc_symbol} b elementwise, broadcasting by the union of names (axes only in one operand "
                 f"are repeated along the other).\n\nShapes: a (A), b (B) -> A ∪ B, the shared axes of equal size.\n"
                 f"Example: ``{op}(NamedTensor(np.ones(2), 'a'), NamedTensor(np.ones(3), 'b')).sizes`` is "
                 f"``{{'a': 2, 'b': 3}}``.\n")
    return f


def _unary(fn, op: str):
    def f(x) -> NamedTensor:
        x = _as_operand(x, op)
        if not isinstance(x, NamedTensor):
            raise AxisNameError(f"{op}: Expect: a NamedTensor. Actual: {type(x).__name__}")
        return _wrap(fn(x.tensor), x.names)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = (f"{op} elementwise; the names are kept.\n\nShapes: X -> X.\n"
                 f"Example: ``{op}(NamedTensor(np.ones(2), 'a')).sizes`` is ``{{'a': 2}}``.\n")
    return f


add = _binary(_ew.add, "add", "+")
subtract = _binary(_ew.subtract, "subtract", "−")
multiply = _binary(_ew.multiply, "multiply", "⊙")
divide = _binary(_ew.divide, "divide", "/")
power = _binary(_ew.power, "power", "**")
maximum = _binary(_ew.maximum, "maximum", "max")
minimum = _binary(_ew.minimum, "minimum", "min")
exp = _unary(_ew.exp, "exp")
log = _unary(_ew.log, "log")
sqrt = _unary(_ew.sqrt, "sqrt")
tanh = _unary(_ew.tanh, "tanh")
relu = _unary(_ew.relu, "relu")
logistic = _unary(_ew.logistic, "logistic")
sigmoid = logistic
sin = _unary(_mf.sin, "sin")
cos = _unary(_mf.cos, "cos")
abs = _unary(_ew.abs, "abs")  # noqa: A001 - numpy's name
negative = _unary(_ew.negative, "negative")
softplus = _unary(_ew.softplus, "softplus")


def where(cond, a, b) -> NamedTensor:
    """cond ? a : b elementwise, the three operands broadcast by the union of their names.

    ``cond`` is a boolean NamedTensor (or a scalar). Shapes: cond (C), a (A), b (B) -> C ∪ A ∪ B.
    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, where
        >>> m = NamedTensor(np.array([True, False]), "seq")
        >>> where(m, NamedTensor(np.ones(3), "layer"), 0.0).align("seq", "layer").value
        array([[1., 1., 1.],
               [0., 0., 0.]])
    """
    cond = _as_operand(cond, "where")
    if isinstance(cond, NamedTensor):
        return _elementwise(_ew.where, "where", cond, a, b)
    return _elementwise(lambda x, y: _ew.where(cond, x, y), "where", a, b)


# --------------------------------------------------------------- contraction

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ndot(A, B, over) -> NamedTensor:
    """A ⊙_over B: multiply elementwise (by the union of names) and sum over the axes ``over``.

    ``over`` is one name or several (the seed's ⊙_{heads, val}); each must be
    an axis of both operands, with the same size. Axes in both operands but
    not in ``over`` are kept, elementwise (they are not summed). Computed by
    one ``einsum``. Shapes: A (A), B (B) -> (A ∪ B) − over.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, ndot
        >>> W = NamedTensor(np.arange(6.0).reshape(2, 3), "hidden layer")
        >>> x = NamedTensor(np.ones((4, 3)), "seq layer")
        >>> y = ndot(W, x, "layer")
        >>> y, y.align("seq", "hidden").value[0]
        (NamedTensor(hidden:2 × seq:4, float64), array([ 3., 12.]))
    """
    over = _over(over, "ndot")
    label = f"ndot over {', '.join(map(repr, over))}"
    for side, x in (("left", A), ("right", B)):
        if not isinstance(x, NamedTensor):
            raise AxisNameError(f"{label}: Expect: two NamedTensors. Actual: the {side} operand is a "
                                f"{type(x).__name__}")
        missing = [n for n in over if n not in x.names]
        if missing:
            raise AxisNameError(f"{label}: Expect: {_show(over)} in both operands. Actual: the {side} operand "
                                f"has axes {_show(x.names)}")
    order, _ = _union(label, (A, B))
    if len(order) > len(_LETTERS):
        raise AxisNameError(f"{label}: Expect: at most {len(_LETTERS)} distinct axes. Actual: {len(order)}")
    letter = {n: _LETTERS[i] for i, n in enumerate(order)}
    out = tuple(n for n in order if n not in over)
    spec = ("".join(letter[n] for n in A.names) + "," + "".join(letter[n] for n in B.names) + "->"
            + "".join(letter[n] for n in out))
    return _wrap(einsum(spec, A.tensor, B.tensor), out)


# ------------------------------------------------------- functions over axes


def _reduction(fn, op: str, summary: str):
    def f(X, over) -> NamedTensor:
        names = _over(over, op)
        axes = tuple(_axis(X, n, op) for n in names)
        return _wrap(fn(X.tensor, axis=axes), tuple(n for n in X.names if n not in names))
    f.__name__ = f.__qualname__ = op
    f.__doc__ = (f"{summary} over one named axis or several; those axes disappear.\n\n"
                 f"Shapes: X -> X without ``over``. Written ``{op}(X, 'layer')`` or ``X.{op}('layer')``.\n"
                 f"Example: ``{op}(NamedTensor(np.ones((2, 3)), 'seq layer'), 'layer').sizes`` is "
                 f"``{{'seq': 2}}``.\n")
    return f


nsum = _reduction(_sum, "nsum", "The sum")
nmean = _reduction(_mean, "nmean", "The mean")
nmax = _reduction(_max, "nmax", "The maximum")
nmin = _reduction(_min, "nmin", "The minimum")


def _one_axis(X, name, op: str) -> int:
    if not isinstance(X, NamedTensor):
        raise AxisNameError(f"{op}: Expect: a NamedTensor. Actual: {type(X).__name__}")
    if not isinstance(name, str):
        raise AxisNameError(f"{op}: Expect: one axis name. Actual: {name!r}")
    return _axis(X, name, op)


def softmax(X, name: str) -> NamedTensor:
    """softmax_name(X) (softargmax): exp(X) / Σ_name exp(X) along one named axis; the names are kept.

    Shapes: X -> X. Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, softmax
        >>> softmax(NamedTensor(np.zeros((2, 4)), "seq vocab"), "vocab").align("seq", "vocab").value[0]
        array([0.25, 0.25, 0.25, 0.25])
    """
    ax = _one_axis(X, name, "softmax")
    return _wrap(_softargmax(X.tensor, ax), X.names)


softargmax = softmax


def logsumexp(X, name: str) -> NamedTensor:
    """log Σ_name exp(X) along one named axis, which disappears.

    Shapes: X -> X without ``name``. Example: ``logsumexp(NamedTensor(np.zeros(4), 'v'), 'v').value`` is log 4.
    """
    ax = _one_axis(X, name, "logsumexp")
    return _wrap(_logsumexp(X.tensor, ax), tuple(n for n in X.names if n != name))


def argmax(X, name: str) -> NamedTensor:
    """argmax_name(X): the one-hot position of the maximum along one named axis (ties: the first).

    As ``ad.argmax`` (§4.4.4), whose relaxation is :func:`softmax`: the result
    has X's names, 0s and 1s, and no derivative. ``X.align(...)`` and numpy's
    ``argmax`` give indices. Shapes: X -> X.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, argmax
        >>> argmax(NamedTensor(np.array([[0., 5., 1.], [7., 0., 0.]]), "seq vocab"), "vocab").value
        array([[0., 1., 0.],
               [1., 0., 0.]])
    """
    ax = _one_axis(X, name, "argmax")
    return _wrap(_argmax(X.tensor, ax), X.names)


def standardize(X, name: str, eps: float = 1e-5) -> NamedTensor:
    """standardize_name(X) = (X − mean_name X) / √(var_name X + ε); the names are kept.

    ε goes under the square root, as in :class:`nn.LayerNorm` (so the
    derivative stays finite for a constant row). Shapes: X -> X.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, standardize
        >>> standardize(NamedTensor(np.array([1.0, 3.0]), "layer"), "layer", eps=0.0).value
        array([-1.,  1.])
    """
    ax = _one_axis(X, name, "standardize")
    t = X.tensor
    names = X.names
    mu = _note(_mean(t, (ax,), keepdims=True), names)
    centred = _note(_ew.subtract(t, mu), names)
    var = _note(_mean(_note(_ew.multiply(centred, centred), names), (ax,), keepdims=True), names)
    sd = _note(_ew.sqrt(_note(_ew.add(var, float(eps)), names)), names)
    return _wrap(_ew.divide(centred, sd), names)


# ------------------------------------------------------- reshaping by name


def flatten(X, names, new: str) -> NamedTensor:
    """X_{(names)→new}: merge the axes ``names`` into one axis ``new``, the first name varying slowest.

    The new axis has size Π|names|; entry (i_1, ..., i_k) of the merged axes
    goes to position i_1·|n_2|···|n_k| + ... + i_k (row-major in the order given).
    Shapes: X -> X without ``names``, with ``new``.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, flatten
        >>> X = NamedTensor(np.arange(6.0).reshape(2, 3), "chans height")
        >>> flatten(X, ("height", "chans"), "layer").value
        array([0., 3., 1., 4., 2., 5.])
    """
    names = _over(names, "flatten")
    for n in names:
        _axis(X, n, "flatten")
    if new in X.names and new not in names:
        raise AxisNameError(f"flatten {_show(names)} -> {new!r}: Expect: a new name not already an axis. "
                            f"Actual: the tensor has axes {_show(X.names)}")
    first = min(X.names.index(n) for n in names)
    rest = [n for n in X.names if n not in names]
    before = [n for n in X.names[:first] if n not in names]
    order = tuple(before) + names + tuple(n for n in rest if n not in before)
    t = _aligned(X, order)
    sizes = X.sizes
    shape = tuple(sizes[n] for n in before) + (int(np.prod([sizes[n] for n in names], dtype=np.int64)),) \
        + tuple(sizes[n] for n in rest if n not in before)
    return _wrap(reshape(t, shape), tuple(before) + (new,) + tuple(n for n in rest if n not in before))


def split(X, name: str, sizes: dict | None = None, **more) -> NamedTensor:
    """X_{name→(names)}: split one axis into several (the inverse of :func:`flatten`, row-major).

    ``sizes`` (a dict, which keeps its order; keywords work too) gives each
    new axis and its size; their product must be |name|.
    Shapes: X -> X without ``name``, with the new axes in its place.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, split
        >>> split(NamedTensor(np.arange(6.0), "layer"), "layer", height=3, chans=2).sizes
        {'height': 3, 'chans': 2}
    """
    sizes = {**(sizes or {}), **more}
    ax = _axis(X, name, "split")
    new = _as_names(list(sizes))
    clash = [n for n in new if n in X.names and n != name]
    if clash:
        raise AxisNameError(f"split {name!r} -> {_show(new)}: Expect: new names. Actual: the tensor already has "
                            f"axes {_show(X.names)}")
    sizes = {n: _count(d, f"split {name!r}", f"the size of {n!r}") for n, d in sizes.items()}
    total = int(np.prod(list(sizes.values()), dtype=np.int64))
    if total != X.tensor.shape[ax]:
        raise AxisNameError(f"split {name!r} -> {axes_str(new, tuple(sizes.values()))}: Expect: sizes whose "
                            f"product is |{name}| = {X.tensor.shape[ax]}. Actual: product {total}")
    shape = X.tensor.shape[:ax] + tuple(sizes.values()) + X.tensor.shape[ax + 1:]
    return _wrap(reshape(X.tensor, shape), X.names[:ax] + new + X.names[ax + 1:])


# ------------------------------------------------- convolution and pooling


def unroll(X, name: str, window: str, size: int, stride: int = 1) -> NamedTensor:
    """unroll_{name→(name, window)}: every window of ``size`` consecutive entries along ``name``.

    U_{name(i), window(j)} = X_{name(i·stride + j)} (0-indexed), with
    |name| in U equal to (|name| − size)//stride + 1 and |window| = ``size``:
    the named-tensor paper's unroll, on which Conv1d and Conv2d are defined
    (``conv = W ⊙_{chans, kh, kw} unroll(unroll(X, height, kh), width, kw)``).
    A ``take`` (gather) along the axis; its derivative adds back.
    Shapes: X (..., name:n, ...) -> (..., name:(n−size)//stride+1, window:size, ...).

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, unroll
        >>> unroll(NamedTensor(np.arange(4.0), "seq"), "seq", "kernel", 2).value
        array([[0., 1.],
               [1., 2.],
               [2., 3.]])
    """
    ax = _axis(X, name, "unroll")
    if window in X.names:
        raise AxisNameError(f"unroll {name!r} -> ({name}, {window}): Expect: a new window name. Actual: the "
                            f"tensor has axes {_show(X.names)}")
    n = X.tensor.shape[ax]
    size, stride = _count(size, "unroll", "the window size"), _count(stride, "unroll", "the stride")
    if size < 1 or stride < 1 or size > n:
        raise AxisNameError(f"unroll {name!r} -> ({name}, {window}): Expect: 1 <= window size <= |{name}| = {n} "
                            f"and stride >= 1. Actual: size {size}, stride {stride}")
    count = (n - size) // stride + 1
    index = np.arange(count)[:, None] * stride + np.arange(size)[None, :]
    return _wrap(take(X.tensor, index, axis=ax), X.names[:ax] + (name, window) + X.names[ax + 1:])


def _pair(v) -> tuple[int, int]:
    return (int(v), int(v)) if np.ndim(v) == 0 else (int(v[0]), int(v[1]))


def conv2d(X, W, b=None, *, over: str = "chans", height: str = "height", width: str = "width", kh: str = "kh",
           kw: str = "kw", stride=1, padding=0) -> NamedTensor:
    """Conv2d(X; W, b) = W ⊙_{over, kh, kw} unroll_{height→(height,kh)} unroll_{width→(width,kw)} X + b.

    The named-tensor paper's Conv2d (no padding there; ``padding`` zero-pads
    height and width, ``stride`` steps the windows). W has the axes ``over``,
    ``kh``, ``kw`` and output axes of its own (seed 000: ``chans'``), which
    the result takes; every other axis of X (``batch``...) is kept. Computed
    with the ``conv2d`` primitive; equal to the unroll form (tested).
    Shapes: X (batch, chans:c, height:h, width:w), W (chans':o, chans:c, kh:p, kw:q), b (chans':o)
    -> (batch, chans':o, height:(h+2·ph−p)//sh+1, width:(w+2·pw−q)//sw+1), axes found by name.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, conv2d
        >>> X = NamedTensor(np.ones((2, 1, 5, 5)), "batch chans height width")
        >>> W = NamedTensor(np.ones((3, 1, 2, 2)), "chans' chans kh kw")
        >>> conv2d(X, W)
        NamedTensor(batch:2 × chans':3 × height:4 × width:4, float64)
    """
    op = "conv2d"
    for role, x, need in (("input", X, (over, height, width)), ("kernel", W, (over, kh, kw))):
        if not isinstance(x, NamedTensor):
            raise AxisNameError(f"{op}: Expect: a named {role}. Actual: {type(x).__name__}")
        missing = [n for n in need if n not in x.names]
        if missing:
            raise AxisNameError(f"{op}: Expect: the {role} to have axes {_show(need)}. Actual: the {role} has "
                                f"axes {_show(x.names)}")
    if X.size(over) != W.size(over):
        raise AxisNameError(f"{op} over {over!r}: Expect: the same |{over}| in input and kernel. Actual: "
                            f"{over}:{X.size(over)} in the input, {over}:{W.size(over)} in the kernel")
    lead = tuple(n for n in X.names if n not in (over, height, width))
    outs = tuple(n for n in W.names if n not in (over, kh, kw))
    clash = [n for n in outs if n in X.names]
    if clash:
        raise AxisNameError(f"{op}: Expect: the kernel's output axes {_show(outs)} to be new names. Actual: the "
                            f"input has axes {_show(X.names)}; rename {', '.join(map(repr, clash))}")
    xs, ws = X.sizes, W.sizes
    x = reshape(_aligned(X, lead + (over, height, width)), (-1, xs[over], xs[height], xs[width]))
    w = reshape(_aligned(W, outs + (over, kh, kw)), (-1, ws[over], ws[kh], ws[kw]))
    y = _conv2d(x, w, stride, padding)
    y = reshape(y, tuple(xs[n] for n in lead) + tuple(ws[n] for n in outs) + tuple(y.shape[2:]))
    out = _wrap(y, lead + outs + (height, width))
    return out if b is None else add(out, b)


def max_pool2d(X, kh, kw=None, *, height: str = "height", width: str = "width", stride=None) -> NamedTensor:
    """MaxPool2d_{kh,kw}(X): the maximum over each kh × kw window of the named height and width axes.

    The paper's definition: split height → (height, kh) and width → (width,
    kw) and take max over (kh, kw) (windows that do not fit are dropped);
    ``stride`` (default: the window) as the ``max_pool2d`` primitive, which computes it.
    Shapes: X (..., height:h, width:w, ...) -> (..., height:(h−kh)//sh+1, width:(w−kw)//sw+1, ...).

    Example:
        >>> import numpy as np
        >>> from autograd_dag.named import NamedTensor, max_pool2d
        >>> X = NamedTensor(np.arange(16.0).reshape(4, 4), "height width")
        >>> max_pool2d(X, 2).value
        array([[ 5.,  7.],
               [13., 15.]])
    """
    op = "max_pool2d"
    for n in (height, width):
        _axis(X, n, op)
    kw = kh if kw is None else kw
    window = (_count(kh, op, "kh"), _count(kw, op, "kw"))
    sizes = X.sizes
    if window[0] > sizes[height] or window[1] > sizes[width] or min(window) < 1:
        raise AxisNameError(f"{op} {window[0]}×{window[1]}: Expect: a window within {height}:{sizes[height]} × "
                            f"{width}:{sizes[width]}. Actual: window {window}")
    lead = tuple(n for n in X.names if n not in (height, width))
    y = _max_pool2d(_aligned(X, lead + (height, width)), window, stride)
    return _wrap(y, lead + (height, width))


# Methods: X.softmax("vocab"), X.nsum("layer"), X.flatten(...), ...
for _f in (nsum, nmean, nmax, nmin, softmax, logsumexp, argmax, standardize, flatten, split, unroll,
           exp, log, sqrt, tanh, relu, logistic, sin, cos, abs, softplus):
    setattr(NamedTensor, _f.__name__, _f)
NamedTensor.sum = nsum
NamedTensor.mean = nmean
NamedTensor.max = nmax
NamedTensor.min = nmin
NamedTensor.ndot = ndot
NamedTensor.softargmax = softmax
del _f


# ------------------------------------------------- programs of named tensors

# {program: {node index: axis names}}: the names live here, with the layer that knows them; the
# renderer, below, reads them through the hook registered at the end of this module.
_ATTACHED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def attach_axes(program, axes: dict) -> None:
    """Record ``{node index: axis names}`` for ``program`` (kept as long as the program lives).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(ad.exp, np.ones((2, 3)))
        >>> attach_axes(prog, {0: ("seq", "layer"), 1: ("seq", "layer")})
        >>> program_axes(prog)[1]
        ('seq', 'layer')
    """
    _ATTACHED[program] = {int(k): tuple(v) for k, v in axes.items()}


def program_axes(program) -> dict:
    """The ``{node index: axis names}`` attached to ``program`` (empty if none)."""
    try:
        return _ATTACHED.get(program, {})
    except TypeError:
        return {}


def node_axes(program: Program, outputs) -> dict[int, tuple[str, ...]]:
    """``{node index: axis names}`` for the nodes of ``program`` computed by the Tensors behind ``outputs``.

    ``outputs`` are the Tensors (or NamedTensors) the program's outputs were
    made from. The program is matched to the recorded Tensors structurally
    (node k's parents are Tensor t's parents, in order), so it does not depend
    on how the program numbered its nodes.
    """
    axes: dict[int, tuple[str, ...]] = {}
    stack = [(k, o.tensor if isinstance(o, NamedTensor) else o) for k, o in zip(program.outputs, outputs)]
    seen: set[int] = set()
    while stack:
        k, t = stack.pop()
        while t.prim is IDENTITY and t.parents:
            t = t.parents[0]
        names = names_of(t)
        if names is not None and k not in axes and len(names) == len(program.nodes[k].shape):
            axes[k] = names
        if k in seen:
            continue
        seen.add(k)
        node = program.nodes[k]
        if node.prim is None or not t.parents or len(t.parents) != len(node.parents):
            continue
        stack.extend(zip(node.parents, t.parents))
    return axes


def program_of(*outputs, parameters_as_inputs: bool = False) -> Program:
    """The program computing ``outputs`` (NamedTensors), with their axis names attached for the renderer.

    Leaves are found as :func:`autograd_dag.render.as_program` finds them.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import named
        >>> x = named.NamedTensor(np.ones((2, 3)), "seq layer", name="x")
        >>> prog = named.program_of(named.softmax(x, "layer"))
        >>> "seq:2 × layer:3" in named.render(prog).source.replace("&#215;", "×")
        True
    """
    tensors = tuple(o.tensor if isinstance(o, NamedTensor) else o for o in outputs)
    program = as_program(tensors[0] if len(tensors) == 1 else tensors, parameters_as_inputs=parameters_as_inputs)
    attach_axes(program, node_axes(program, tensors))
    return program


register_axis_names(program_axes)
