"""Affine layers, multilayer perceptrons (§4.3), logistic regression (§4.3.2) and activation modules (§4.4)."""

from __future__ import annotations

import numpy as np

from ..core import no_grad
from ..errors import ShapeError
from ..primitives.elementwise import add, logistic, relu, softplus, step, tanh
from ..primitives.linalg import matmul
from ..primitives.structure import transpose
from . import functional as F
from . import init as _init
from .module import Module, Parameter

__all__ = ["Linear", "Dropout", "MLP", "LogisticRegression", "Activation", "Identity", "ReLU", "Softplus", "Step",
           "Logistic", "Sigmoid", "Tanh", "Softargmax", "Softmax", "Argmax", "Max", "LogSumExp"]


class Linear(Module):
    """Affine layer s ↦ W s + b, applied to the last axis (§4.3.1).

    ``weight`` W has shape (out_features, in_features) as in the book and
    PyTorch; ``bias`` b has shape (out_features,). ``init`` is 'glorot'
    (default), 'he', 'glorot_normal' or 'he_uniform'; ``rng`` a Generator or seed.
    Shapes: (..., in_features) -> (..., out_features).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.Linear(3, 2, rng=0)(np.ones((5, 3))).shape
        (5, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, init: str = "glorot",
                 rng=None, dtype=np.float64):
        super().__init__()
        self.in_features = _init.size("Linear", "in_features", in_features)
        self.out_features = _init.size("Linear", "out_features", out_features)
        self.weight = Parameter(_initialise(init, (self.out_features, self.in_features), rng, dtype))
        self.bias = Parameter(np.zeros(self.out_features, dtype=dtype)) if bias else None

    def forward(self, x):
        shape = np.shape(x)
        if not shape or shape[-1] != self.in_features:
            raise ShapeError(f"Linear({self.in_features}, {self.out_features}): Expect: input (..., "
                             f"{self.in_features}). Actual: shape {tuple(shape)}")
        out = matmul(x, transpose(self.weight))
        return out if self.bias is None else add(out, self.bias)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Dropout(Module):
    """Inverted dropout in training mode (:func:`functional.dropout`), the identity in eval mode.

    ``p``: the probability of zeroing an entry; ``rng``: a Generator or seed for
    the masks drawn outside an ``ad.random_seed`` block. ``forward(x, seed=None)``.
    Shapes: (*s) -> (*s).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> drop = nn.Dropout(0.25, rng=0)
        >>> sorted(set(np.round(drop(np.ones(100)).value, 4).tolist()))
        [0.0, 1.3333]
        >>> x = np.ones(3)
        >>> drop.eval()(x) is x
        True
    """

    def __init__(self, p: float = 0.5, *, rng=None):
        super().__init__()
        p = float(p)
        if not 0.0 <= p < 1.0:
            raise ShapeError(f"Dropout: Expect: a drop probability p in [0, 1). Actual: p = {p}")
        self.p = p
        self.rng = _init.as_generator(rng)

    def forward(self, x, seed=None):
        return F.dropout(x, self.p, self.training, seed=seed, rng=self.rng)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def _initialise(scheme, shape, rng, dtype):
    return _init.initialise(scheme, shape, rng=rng, dtype=dtype)


class Activation(Module):
    """A parameter-free nonlinearity as a module, wrapping a function of one Tensor.

    Shapes: (*s) -> whatever the function returns (usually (*s)).
    Example: ``nn.Activation(ad.tanh)(ad.Tensor([0.])).value`` is ``[0.]``.
    """

    def __init__(self, fn=None):
        super().__init__()
        self.fn = F.get_activation(fn)

    def forward(self, x):
        return self.fn(x)

    def extra_repr(self) -> str:
        return "" if type(self) is not Activation else getattr(self.fn, "__name__", repr(self.fn))


def _activation_class(name: str, fn, doc: str):
    def __init__(self):
        Activation.__init__(self, fn)
    return type(name, (Activation,), {"__init__": __init__, "__doc__": doc})


Identity = _activation_class("Identity", F.identity, "x ↦ x. Shapes: (*s) -> (*s).\n\n"
                            "Example: ``nn.Identity()(ad.Tensor([1., 2.])).value`` is ``[1., 2.]``.")
ReLU = _activation_class("ReLU", relu, "relu(u) = max(u, 0) elementwise (§4.4.1). Shapes: (*s) -> (*s).\n\n"
                                       "Example: ``nn.ReLU()(ad.Tensor([-1., 2.])).value`` is ``[0., 2.]``.")
Softplus = _activation_class("Softplus", softplus, "softplus(u) = log(1 + e^u) elementwise (§4.4.1). "
                                                    "Shapes: (*s) -> (*s).\n\n"
                                                    "Example: ``nn.Softplus()(ad.Tensor([0.])).value`` is "
                                                    "``[log 2]``.")
Step = _activation_class("Step", step, "Heaviside step (§4.4.3), zero derivative. Shapes: (*s) -> (*s).\n\n"
                                       "Example: ``nn.Step()(ad.Tensor([-1., 0.])).value`` is ``[0., 1.]``.")
Logistic = _activation_class("Logistic", logistic, "logistic(u) = 1 / (1 + e^-u) (§4.4.3; alias Sigmoid). "
                                                    "Shapes: (*s) -> (*s).\n\n"
                                                    "Example: ``nn.Logistic()(ad.Tensor([0.])).value`` is ``[.5]``.")
Sigmoid = Logistic
Tanh = _activation_class("Tanh", tanh, "tanh elementwise. Shapes: (*s) -> (*s).\n\n"
                                       "Example: ``nn.Tanh()(ad.Tensor([0.])).value`` is ``[0.]``.")


class Softargmax(Activation):
    """softargmax_γ over ``axis`` (§4.4.4; alias Softmax). Shapes: (*s) -> (*s).

    Example: ``nn.Softargmax()(ad.Tensor([0., 0.])).value`` is ``[.5, .5]``.
    """

    def __init__(self, axis: int = -1, gamma: float = 1.0):
        Module.__init__(self)
        self.axis, self.gamma = axis, gamma

    def forward(self, x):
        return F.softargmax(x, self.axis, self.gamma)

    def extra_repr(self) -> str:
        return f"axis={self.axis}, gamma={self.gamma}"


Softmax = Softargmax


class Argmax(Activation):
    """One-hot argmax over ``axis`` (§4.4.4); no gradient. Shapes: (*s) -> (*s).

    Example: ``nn.Argmax()(ad.Tensor([1., 3.])).value`` is ``[0., 1.]``.
    """

    def __init__(self, axis: int = -1):
        Module.__init__(self)
        self.axis = axis

    def forward(self, x):
        return F.argmax(x, self.axis)

    def extra_repr(self) -> str:
        return f"axis={self.axis}"


class Max(Activation):
    """Max over ``axis`` with temperature γ (γ = 0: hard max; γ > 0: lse_γ). Shapes: (*s) -> s without axis.

    Example: ``nn.Max()(ad.Tensor([1., 3.])).value`` is ``3.0``.
    """

    def __init__(self, axis: int = -1, gamma: float = 0.0, keepdims: bool = False):
        Module.__init__(self)
        self.axis, self.gamma, self.keepdims = axis, gamma, keepdims

    def forward(self, x):
        return F.max(x, self.axis, keepdims=self.keepdims, gamma=self.gamma)

    def extra_repr(self) -> str:
        return f"axis={self.axis}, gamma={self.gamma}"


class LogSumExp(Max):
    """lse_γ over ``axis`` (§4.4.2). Shapes: (*s) -> s without axis.

    Example: ``nn.LogSumExp()(ad.Tensor([0., 0.])).value`` is ``log 2``.
    """

    def __init__(self, axis: int = -1, gamma: float = 1.0, keepdims: bool = False):
        super().__init__(axis, gamma, keepdims)

    def forward(self, x):
        return F.logsumexp(x, self.axis, self.keepdims, self.gamma)


def _configured_activation(name: str, fn, **defaults):
    """A module class applying ``fn(x, **settings)``: PyTorch's constructor arguments, in order or by name.

    ``inplace`` (PyTorch's) is accepted and changes nothing: a Tensor is never changed in place.
    """
    names = tuple(defaults)

    def __init__(self, *args, inplace: bool = False, **kwargs):
        Module.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{name} takes at most {len(names)} settings ({', '.join(names)}); got {len(args)}")
        settings = dict(defaults, **dict(zip(names, args)))
        for key, value in kwargs.items():
            if key not in defaults:
                raise TypeError(f"{name} got an unexpected keyword argument {key!r} (it takes {names or 'none'})")
            settings[key] = value
        with no_grad():   # a bad setting is refused here, not at the first call
            fn(np.zeros(2), **settings)
        for key, value in settings.items():
            setattr(self, key, value)

    def forward(self, x):
        return fn(x, **{key: getattr(self, key) for key in names})

    def extra_repr(self) -> str:
        return ", ".join(f"{key}={getattr(self, key)!r}" for key in names)

    summary = (fn.__doc__ or "").strip().splitlines()[0]
    doc = (f"``F.{fn.__name__}`` as a module: {summary}\n\nShapes: as ``F.{fn.__name__}``. Example: "
           f"``nn.{name}({', '.join(f'{k}={v!r}' for k, v in defaults.items())})(x)`` is ``F.{fn.__name__}(x)``.")
    return type(name, (Activation,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                      "__doc__": doc})


# PyTorch's other activation modules (functions in nn/activations.py), with its argument names.
LeakyReLU = _configured_activation("LeakyReLU", F.leaky_relu, negative_slope=0.01)
ELU = _configured_activation("ELU", F.elu, alpha=1.0)
SELU = _configured_activation("SELU", F.selu)
CELU = _configured_activation("CELU", F.celu, alpha=1.0)
SiLU = _configured_activation("SiLU", F.silu)
Mish = _configured_activation("Mish", F.mish)
GELU = _configured_activation("GELU", F.gelu, approximate="none")
Hardtanh = _configured_activation("Hardtanh", F.hardtanh, min_val=-1.0, max_val=1.0)
ReLU6 = _configured_activation("ReLU6", F.relu6)
Hardsigmoid = _configured_activation("Hardsigmoid", F.hardsigmoid)
Hardswish = _configured_activation("Hardswish", F.hardswish)
Softsign = _configured_activation("Softsign", F.softsign)
LogSigmoid = _configured_activation("LogSigmoid", F.logsigmoid)
Tanhshrink = _configured_activation("Tanhshrink", F.tanhshrink)
Softshrink = _configured_activation("Softshrink", F.softshrink, lambd=0.5)
Hardshrink = _configured_activation("Hardshrink", F.hardshrink, lambd=0.5)
GLU = _configured_activation("GLU", F.glu, axis=-1)
MORE_ACTIVATIONS = ["LeakyReLU", "ELU", "SELU", "CELU", "SiLU", "Mish", "GELU", "Hardtanh", "ReLU6", "Hardsigmoid",
                    "Hardswish", "Softsign", "LogSigmoid", "Tanhshrink", "Softshrink", "Hardshrink", "GLU"]
__all__ += MORE_ACTIVATIONS


def _activation_module(activation) -> Module:
    if isinstance(activation, Module):
        return activation
    names = {"relu": ReLU, "softplus": Softplus, "step": Step, "logistic": Logistic, "sigmoid": Logistic,
             "tanh": Tanh, "softargmax": Softargmax, "softmax": Softargmax, "argmax": Argmax,
             "identity": Identity, "linear": Identity, "none": Identity}
    if activation is None:
        return Identity()
    if isinstance(activation, str) and activation.lower() in names:
        return names[activation.lower()]()
    return Activation(activation)


class Classifier(Module):
    """A model whose call returns class scores (logits); :meth:`predict_proba` gives probabilities.

    The convention of every model in ``nn``: ``model(x)`` (``forward``)
    returns logits, the input of :func:`~autograd_dag.nn.functional.cross_entropy`
    (which is stabler than the log of probabilities); ``predict_proba(x)`` is
    their softargmax over the last axis, ``predict(x)`` the most probable class.
    ``logits(x)`` is kept as another name for ``model(x)``.
    """

    def logits(self, x):
        """The class scores, as ``self(x)``. Shapes: (..., features) -> (..., num_classes)."""
        return self(x)

    def predict_proba(self, x):
        """Class probabilities softargmax(logits). Shapes: (..., features) -> (..., num_classes)."""
        return F.softargmax(self(x), -1)

    def predict(self, x):
        """The most probable class of each example, an int64 array (evaluated without recording, in eval mode).

        As scikit-learn's and Keras's ``predict``: without dropout and with batch
        norm's running statistics whatever the model's mode, which is restored after.
        """
        with self.evaluating(), no_grad():
            return np.argmax(self(x).value, axis=-1)


class MLP(Classifier):
    """Multilayer perceptron s_k = a_k(W_k s_{k-1} + b_k) (§4.3.1).

    ``widths`` = (input, hidden..., output): one :class:`Linear` per
    consecutive pair. ``activation`` (name, callable or Module) follows every
    hidden layer, ``output_activation`` (default: none, i.e. logits, the
    convention of every model: see :class:`Classifier`) the last.
    ReLU networks are initialised with He, others with Glorot, unless ``init`` is given.
    Shapes: (..., widths[0]) -> (..., widths[-1]).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> mlp = nn.MLP([2, 16, 3], activation="relu", rng=0)
        >>> mlp(np.zeros((4, 2))).shape  # logits
        (4, 3)
        >>> mlp.predict_proba(np.zeros((4, 2))).value.sum(axis=-1)
        array([1., 1., 1., 1.])
    """

    def __init__(self, widths, activation="relu", output_activation=None, *, init: str | None = None,
                 rng=None, dtype=np.float64):
        super().__init__()
        widths = [int(w) for w in widths]
        if len(widths) < 2:
            raise ShapeError(f"MLP: Expect: widths (input, ..., output) with at least 2 entries. Actual: {widths}")
        # One generator shared by all layers: different weights per layer, one seed for the model.
        init_rng = _init.as_generator(rng)
        scheme = init or ("he" if activation == "relu" else "glorot")
        self.widths = widths
        self.layers = [Linear(a, b, init=scheme, rng=init_rng, dtype=dtype) for a, b in zip(widths, widths[1:])]
        self.activation = _activation_module(activation)
        self.output_activation = _activation_module(output_activation)

    def logits(self, x):
        """The last layer's pre-activation W_K s_{K-1} + b_K (``self(x)`` without ``output_activation``)."""
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)

    def forward(self, x):
        return self.output_activation(self.logits(x))

    def predict_proba(self, x):
        """Class probabilities softargmax(logits). Shapes: (..., widths[0]) -> (..., widths[-1])."""
        return F.softargmax(self.logits(x), -1)

    def extra_repr(self) -> str:
        return f"widths={self.widths}"


class LogisticRegression(Classifier):
    """Multiclass logistic regression softargmax(W x + b): a one-layer MLP, i.e. a GLM (§4.3.2).

    ``model(x)`` returns the scores W x + b (logits, for :func:`cross_entropy`);
    :meth:`predict_proba` the class probabilities softargmax(W x + b).
    Shapes: (..., in_features) -> (..., num_classes).

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> nn.LogisticRegression(2, 3, rng=0).predict_proba(np.zeros((1, 2))).value
        array([[0.33333333, 0.33333333, 0.33333333]])
    """

    def __init__(self, in_features: int, num_classes: int, *, rng=None, dtype=np.float64):
        super().__init__()
        self.linear = Linear(in_features, num_classes, rng=rng, dtype=dtype)

    def forward(self, x):
        return self.linear(x)
