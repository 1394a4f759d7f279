"""Modules: parameters found by attribute, train/eval, state dicts and .npz files.

A :class:`Module` is a callable object whose :class:`Parameter` attributes
(and the parameters of its sub-module attributes, also inside lists, tuples and
dicts) are its learnable parameters, as in PyTorch. A sub-module's call runs its
``forward`` inside ``ad.name_scope(<attribute name>)``, so a traced model renders
with one cluster per layer.

Naming: the first method of a module the user calls (``model(x)``,
``model.logits(x)``, any public method of a subclass) names every parameter
by its path from that module (``layers.0.weight``) and labels every
sub-module's scope, whichever method and however deep the sub-modules are
then reached. The names go with the scope of every node recorded in the call
(:mod:`autograd_dag.leaf_names`), so a graph is drawn with the names it was
recorded under, even after the module is wrapped in another.
"""

from __future__ import annotations

import functools
import inspect
import os
import zipfile
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..core import Tensor, attribute, attribution, changed_in_place
from ..errors import AutogradDagError, SerializationError, located, user_source
from ..leaf_names import NamedScope
from ..modes import modes
from ..jitting import retrace_jit

__all__ = ["Parameter", "Module", "ModuleList", "Sequential", "functional_call"]

# Metadata stored next to the arrays in a saved file; the double underscores
# cannot clash with a dotted parameter name.
_CLASS_KEY = "__module_class__"


class Parameter(Tensor):
    """A learnable leaf: a Tensor with ``requires_grad=True`` that modules collect.

    Shapes: any floating-point array.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> w = nn.Parameter(np.zeros((2, 3)))
        >>> w.requires_grad, w.shape
        (True, (2, 3))
    """

    __slots__ = ()

    def __init__(self, value, name: str | None = None):
        value = value.value if isinstance(value, Tensor) else value
        arr = np.array(value, copy=True)
        if arr.dtype.kind not in "fc":
            arr = arr.astype(np.float64)
        super().__init__(arr, requires_grad=True, name=name)

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"Parameter({label}shape={self.shape}, dtype={self.dtype})"


def _name_parameter(p: "Parameter", path: str) -> None:
    """Name ``p`` by its dotted ``path`` unless the user named it (a shorter path is the module's own)."""
    if p.name is None or (path != p.name and path.endswith("." + p.name)):
        p.name = path


def _items(value) -> list:
    """(key, item) of a list, tuple or dict attribute (where sub-modules and parameters are looked for); else []."""
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    if isinstance(value, dict):
        return list(value.items())
    return []


def _parameters_under(name: str, value) -> list[tuple[str, "Parameter"]]:
    """(dotted path, parameter) for the parameters held in attribute ``name`` (a module, list, tuple or dict)."""
    if isinstance(value, Parameter):
        return [(name, value)]
    if isinstance(value, Module):
        return [(f"{name}.{pname}", p) for pname, p in value.named_parameters()]
    return [found for key, item in _items(value) if isinstance(item, (Module, Parameter))
            for found in _parameters_under(f"{name}.{key}", item)]


def _holds_learned(value) -> bool:
    """Whether a list, tuple or dict holds a Module or Parameter at any depth."""
    return any(isinstance(item, (Module, Parameter)) or (isinstance(item, (list, tuple, dict)) and _holds_learned(item))
               for _, item in _items(value))


class _Naming:
    """The naming of one outermost module call: each module's scope label, each parameter's path."""

    __slots__ = ("labels", "names")

    def __init__(self, labels: dict, names: dict):
        self.labels = labels  # id(module) -> its scope label (None: the module called)
        self.names = names    # id(parameter) -> (parameter, dotted path), as NamedScope wants it


# Attribute types that hold neither a sub-module nor a parameter (exact types: a subclass is looked into).
_PLAIN = frozenset({bool, int, float, str, bytes, type(None), np.ndarray})

# The naming in force while a module method runs (None outside any) is this thread's
# (``modes().naming``): a module called on two threads at once names each call from its own.


def _enter(module: "Module") -> tuple:
    """Start the user's call of a method of ``module``: names from ``module`` in force until :func:`_leave`.

    A module outside the tree of the call already running (one passed as an
    argument, say) is named from itself; a parameter both reach keeps the outer path.
    Returns what ``_leave`` restores. (Not a context manager, nor a function
    running the method: every operation recorded inside looks up its user's
    line through the frames in between.)
    """
    mine = modes()
    module._check_initialised()
    outer = mine.naming
    labels: dict[int, str | None] = {}
    names: dict[int, tuple] = {}
    for mname, own, m, slots in module._tree():
        labels[id(m)] = _scope_label(own, m) if own else None
        for pname, _, _, p in slots:
            if id(p) not in names:
                names[id(p)] = (p, f"{mname}.{pname}" if mname else pname)
    for pid, (p, path) in names.items():
        if outer is None or pid not in outer.names:
            p.name = path  # the current name (repr, messages); pictures read the scope's
    if outer is not None:
        names.update(outer.names)
    source, scope = attribution()
    previous = attribute(source, NamedScope(scope, names))
    mine.naming = _Naming(labels, names)
    return outer, previous


def _leave(entered: tuple) -> None:
    """End the call :func:`_enter` started (also when it raised)."""
    modes().naming, previous = entered
    attribute(*previous)


def _names_parameters(fn):
    """``fn``, a public method of a Module subclass, entered as the user's call when no call of its tree runs."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        naming = modes().naming
        if naming is not None and id(self) in naming.labels:
            return fn(self, *args, **kwargs)
        entered = _enter(self)
        try:
            return fn(self, *args, **kwargs)
        finally:
            _leave(entered)

    method._plain = fn   # for Module.__call__, which names already: one frame less under every operation
    return method


class Module:
    """Base class of layers and models, as a PyTorch user expects it.

    Subclasses set parameters and sub-modules as attributes in ``__init__``
    (lists, tuples and dicts of them are found too, one level deep: a list of lists
    of layers is refused, use :class:`ModuleList`) and define ``forward``. Non-learned
    state that must be saved (batch norm's running statistics) is registered with
    :meth:`register_buffer`.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag import nn
        >>> class Affine(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = nn.Parameter(np.ones(3))
        ...         self.b = nn.Parameter(np.zeros(()))
        ...     def forward(self, x):
        ...         return (x * self.w).sum(axis=-1) + self.b
        >>> m = Affine()
        >>> m.num_parameters(), [n for n, _ in m.named_parameters()]
        (4, ['w', 'b'])
    """

    _buffers: list[str]  # names of registered buffers (set in __init__)

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_buffers", [])

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Every public method a subclass defines (logits, encode, loss, a user's own) may
        # be the user's entry, so each names parameters as a call does. Generators
        # record after the method returns: left as they are.
        for name, value in list(vars(cls).items()):
            if (name == "forward" or not (name.startswith("_") or name in _MODULE_API)) \
                    and inspect.isfunction(value) and not inspect.isgeneratorfunction(value) \
                    and not hasattr(value, "_plain"):
                setattr(cls, name, _names_parameters(value))

    # -------------------------------------------------------------- calling

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        forward = type(self).forward
        # Every operation recorded looks up its user's line through the frames
        # in between: forward's naming wrapper (see __init_subclass__) is skipped.
        forward = getattr(forward, "_plain", forward)
        naming = modes().naming
        if naming is None or id(self) not in naming.labels:
            # The user's call: the parameters are named by their path from here (fc3.weight),
            # whatever was called before (a sub-module alone, or this module inside another).
            entered = _enter(self)
            try:
                return forward(self, *args, **kwargs)
            finally:
                _leave(entered)
        label = naming.labels[id(self)]
        if label is None:
            return forward(self, *args, **kwargs)
        source, scope = attribution()   # (as ad.name_scope, without a generator per call)
        previous = attribute(source, scope + (label,))
        try:
            return forward(self, *args, **kwargs)
        finally:
            attribute(*previous)

    def _check_initialised(self) -> None:
        if "training" not in self.__dict__:
            raise AutogradDagError(f"{type(self).__name__}: call super().__init__() at the start of "
                                   f"__init__ before setting attributes")

    def __setattr__(self, name: str, value) -> None:
        if "training" not in self.__dict__ and isinstance(value, (Tensor, Module)):
            self._check_initialised()
        if isinstance(self.__dict__.get(name), Parameter) and value is not None \
                and not isinstance(value, Parameter):
            # As PyTorch: a Tensor or array put where a parameter was would silently
            # drop out of parameters(), the optimizer and the state dict.
            raise AutogradDagError(f"{type(self).__name__}.{name} is a parameter: assign an nn.Parameter "
                                   f"(or None), not a {type(value).__name__}; to change its numbers in place "
                                   f"write {name}.value[...] = ...")
        # Parameters are named by their attribute path as soon as they are
        # registered (``conv1.weight``), so that one read outside any method of a
        # module is drawn by name too. A name the user gave is kept.
        if isinstance(value, Parameter) and value.name is None:
            value.name = name
        elif isinstance(value, (Module, list, tuple, dict)):
            for pname, p in _parameters_under(name, value):
                _name_parameter(p, pname)
        old = self.__dict__.get(name)
        object.__setattr__(self, name, value)
        if old is not None and old is not value and (
                name in self.__dict__.get("_buffers", ()) or isinstance(old, (Tensor, Module)) or _parameters_under(name, old)):
            # A parameter, buffer or layer replaced: a program ad.jit recorded
            # reads the old one's arrays by identity (as after load_state_dict).
            retrace_jit()

    # ------------------------------------------------------------ discovery

    def _members(self) -> tuple[list[tuple[str, "Module"]], list[tuple[str, str, Any, Parameter]]]:
        """The direct sub-modules [(name, module)] and the parameters held by this module itself
        [(name, attribute, list index or dict key or None, parameter)], in attribute order (one pass)."""
        children, slots = [], []
        for attr, value in self.__dict__.items():
            if type(value) in _PLAIN:  # (most attributes: every user call of a module walks them all)
                continue
            if isinstance(value, Parameter):
                slots.append((attr, attr, None, value))
            elif isinstance(value, Module):
                children.append((attr, value))
            elif isinstance(value, (list, tuple, dict)) and value:  # (not an empty one: every _buffers)
                for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
                    if type(item) in _PLAIN:  # (a kernel size's ints)
                        continue
                    if isinstance(item, Module):
                        children.append((f"{attr}.{key}", item))
                    elif isinstance(item, Parameter):
                        slots.append((f"{attr}.{key}", attr, key, item))
                    elif isinstance(item, (list, tuple, dict)) and _holds_learned(item):
                        # Searched one level deep only: they were silently left out of parameters(),
                        # the optimizer, the state dict and train()/eval().
                        raise AutogradDagError(
                            f"{type(self).__name__}.{attr}[{key!r}] is a {type(item).__name__} holding modules "
                            f"or parameters inside the {type(value).__name__} '{attr}': only one level of list, "
                            f"tuple or dict is searched, so they would be left out of parameters(), the state "
                            f"dict and train()/eval(); hold them in an nn.ModuleList (or a Module) instead")
        return children, slots

    def _named_children(self) -> Iterator[tuple[str, "Module"]]:
        return iter(self._members()[0])

    def _parameter_slots(self) -> Iterator[tuple[str, str, Any, Parameter]]:
        """(name, attribute, list index or dict key or None, parameter) for each parameter held by this module itself."""
        return iter(self._members()[1])

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """(name, module) for each direct sub-module, in attribute order."""
        return self._named_children()

    def children(self) -> Iterator["Module"]:
        """The direct sub-modules."""
        for _, m in self._named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        """(dotted name, module) for this module ('' for itself) and every descendant, once each."""
        for name, _, m, _ in self._walk(prefix):
            yield name, m

    def _walk(self, prefix: str = "") -> Iterator[tuple[str, str, "Module", list]]:
        """(dotted name, name in its parent ('' for self), module, its parameter slots), depth first,
        each module once (at its first path)."""
        yield from self._tree(prefix)

    def _tree(self, prefix: str = "") -> list[tuple[str, str, "Module", list]]:
        """What :meth:`_walk` yields, as a list made in one go (every user call of a module makes it:
        no generator frame resumed per module)."""
        seen: set[int] = set()
        tree = []
        stack = [(prefix, "", self)]
        while stack:
            name, own, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            children, slots = m._members()
            tree.append((name, own, m, slots))
            if children:
                stack.extend(reversed([(f"{name}.{n}" if name else n, n, c) for n, c in children]))
        return tree

    def modules(self) -> Iterator["Module"]:
        """This module and every descendant."""
        for _, m in self.named_modules():
            yield m

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) for every parameter, each shared one once.

        Example: ``dict(nn.Linear(2, 3).named_parameters()).keys()`` is ``{'weight', 'bias'}``.
        """
        for _, _, named in self._parameters_by_module():
            for name, p in named:
                _name_parameter(p, name)  # e.g. appended to a list after assignment
                yield name, p

    def _parameters_by_module(self) -> Iterator[tuple[str, "Module", list[tuple[str, Parameter]]]]:
        """(dotted module name, module, [(dotted name, parameter)]) per module; a shared parameter only at its first."""
        seen: set[int] = set()
        for mname, _, m, slots in self._walk():
            named = []
            for pname, _, _, p in slots:
                if id(p) not in seen:
                    seen.add(id(p))
                    named.append((f"{mname}.{pname}" if mname else pname, p))
            yield mname, m, named

    def parameters(self) -> list[Parameter]:
        """All parameters, in the order of :meth:`named_parameters`."""
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        """Total number of scalar parameters."""
        return int(sum(p.size for p in self.parameters()))

    def register_buffer(self, name: str, value: np.ndarray) -> None:
        """Store a non-learned array (saved in the state dict) as attribute ``name``."""
        self._check_initialised()
        if name not in self._buffers:
            self._buffers.append(name)
        object.__setattr__(self, name, np.asarray(value))

    def named_buffers(self) -> Iterator[tuple[str, np.ndarray]]:
        """(dotted name, array) for every registered buffer."""
        for mname, m in self.named_modules():
            for b in m._buffers:
                yield (f"{mname}.{b}" if mname else b), getattr(m, b)

    # --------------------------------------------------------------- modes

    def train(self, mode: bool = True) -> "Module":
        """Set training mode (batch statistics in batch norm) on this module and all below; returns self."""
        changed = False
        for m in self.modules():
            changed = changed or m.training != bool(mode)
            object.__setattr__(m, "training", bool(mode))
        if changed:
            retrace_jit()  # a jitted function may have recorded this model in the other mode
        return self

    def eval(self) -> "Module":
        """Set evaluation mode (running statistics in batch norm); returns self."""
        return self.train(False)

    @contextmanager
    def evaluating(self) -> Iterator["Module"]:
        """This module and all below in evaluation mode inside the block; each one's own mode restored after.

        For what reads a model without training it (``predict``, a held-out
        loss): in training mode it would drop random units and normalise by the
        batch's statistics. A submodule the user froze in eval mode stays so.

        Example:
            >>> from autograd_dag import nn
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
            >>> with net.evaluating():
            ...     net[1].training
            False
            >>> net[1].training
            True
        """
        modes = [(m, m.training) for m in self.modules()]
        self.eval()
        try:
            yield self
        finally:
            changed = False
            for m, mode in modes:
                changed = changed or m.training != mode
                object.__setattr__(m, "training", mode)
            if changed:
                retrace_jit()  # as train(): a jitted function may have recorded the eval mode

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset ``.grad`` of every parameter to None (or to zeros with ``set_to_none=False``, as PyTorch)."""
        _zero_grads(self.parameters(), set_to_none)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Freeze (False) or unfreeze every parameter, as PyTorch's; returns self.

        A frozen parameter gets no ``.grad`` from ``backward()``, so an optimizer given
        ``model.parameters()`` leaves it. Example: ``model.layers[0].requires_grad_(False)``.
        """
        for p in self.parameters():
            p.requires_grad = bool(requires_grad)
        return self

    def apply(self, fn) -> "Module":
        """Call ``fn(module)`` on every sub-module, then on this one (PyTorch's order, e.g. to initialise
        weights); returns self. Example: ``model.apply(lambda m: print(type(m).__name__))``."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # --------------------------------------------------------- state dicts

    def state_dict(self) -> "OrderedDict[str, np.ndarray]":
        """Copies of every parameter and buffer by dotted name.

        Example: ``nn.Linear(2, 3).state_dict()['weight'].shape == (3, 2)``.
        """
        state: OrderedDict[str, np.ndarray] = OrderedDict()
        for name, p in self.named_parameters():
            state[name] = np.array(p.value, copy=True)
        for name, b in self.named_buffers():
            state[name] = np.array(b, copy=True)
        return state

    def _state_targets(self) -> dict[str, tuple[str, object, str]]:
        """dotted name -> (kind, owner, attribute) for every parameter and buffer."""
        targets: dict[str, tuple[str, object, str]] = {}
        for mname, m, named in self._parameters_by_module():
            for name, p in named:
                targets[name] = ("parameter", p, "value")
            for b in m._buffers:
                targets[f"{mname}.{b}" if mname else b] = ("buffer", m, b)
        return targets

    def load_state_dict(self, state, strict: bool = True) -> "Module":
        """Copy arrays from ``state`` (name -> array) into the parameters and buffers.

        Every array is checked before anything is changed, so a failed load leaves
        the module as it was. With ``strict`` (the default), missing and unexpected
        keys are errors. Values are cast to each parameter's dtype.
        Raises :class:`ad.SerializationError` naming the offending key and shapes.

        Example: ``m2.load_state_dict(m1.state_dict())`` makes m2 compute what m1 does.
        """
        targets = self._state_targets()
        keys = [k for k in state.keys() if k != _CLASS_KEY]
        cls = type(self).__name__
        if strict:
            missing = [k for k in targets if k not in state]
            unexpected = [k for k in keys if k not in targets]
            if missing or unexpected:
                parts = []
                if missing:
                    parts.append(f"missing key(s) {missing}")
                if unexpected:
                    parts.append(f"unexpected key(s) {unexpected}")
                saved = state.get(_CLASS_KEY) if hasattr(state, "get") else None
                origin = f" (saved from a {saved})" if saved is not None else ""
                raise SerializationError(f"load_state_dict into {cls}: {'; '.join(parts)}{origin}; "
                                         f"expected keys {list(targets)}")
        staged = []
        for key in keys:
            if key not in targets:
                continue
            kind, owner, attr = targets[key]
            current = getattr(owner, attr)
            arr = np.asarray(state[key])
            if arr.dtype == object:
                raise SerializationError(f"load_state_dict into {cls}: key '{key}' holds a Python object "
                                         f"array, not numbers; refusing it")
            if arr.shape != current.shape:
                raise SerializationError(f"load_state_dict into {cls}: key '{key}' ({kind}) has shape "
                                         f"{arr.shape} in the state dict but {current.shape} in the model")
            if arr.dtype.kind not in "biufc":
                raise SerializationError(f"load_state_dict into {cls}: key '{key}' has non-numeric dtype "
                                         f"{arr.dtype}")
            if arr.dtype.kind == "c" and np.asarray(current).dtype.kind != "c":
                # The cast would drop the imaginary parts (numpy only warns): a different model.
                raise SerializationError(f"load_state_dict into {cls}: key '{key}' ({kind}) holds complex "
                                         f"values ({arr.dtype}) but the model's is {np.asarray(current).dtype}")
            staged.append((owner, attr, arr))
        rebound = False
        for owner, attr, arr in staged:
            current = getattr(owner, attr)
            if isinstance(current, np.ndarray) and current.flags.writeable:
                # Into the array itself, as an optimizer's step: a program that ad.jit
                # recorded reads the parameters' arrays by identity, and sees the new values.
                np.copyto(current, arr, casting="unsafe")
                if isinstance(owner, Tensor):
                    changed_in_place(owner)
            else:
                object.__setattr__(owner, attr, np.array(arr, dtype=current.dtype, copy=True))
                rebound = True
        if rebound:
            retrace_jit()
        return self

    def save(self, path: str | os.PathLike) -> str:
        """Write the state dict to an uncompressed ``.npz`` file; returns the path written.

        ``.npz`` is appended when missing (as numpy does). The file holds only
        numeric arrays (and the class name), so it is read without pickle.
        A directory (an existing one, or a path ending in a separator) is
        refused: name the file, e.g. ``runs/model.npz``.
        Example: ``model.save("out/lenet.npz")``.
        """
        path = os.fspath(path)
        if os.path.isdir(path) or path.endswith((os.sep, "/")):
            # numpy would write runs.npz beside the directory runs/ (or runs/.npz for "runs/")
            raise SerializationError(f"save: '{path}' is a directory; give a file name in it, e.g. "
                                     f"'{os.path.join(path, 'model.npz')}'{located(user_source())}")
        if not path.endswith(".npz"):
            path += ".npz"
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        state = self.state_dict()
        arrays: dict[str, Any] = {**state, _CLASS_KEY: np.array(type(self).__name__)}
        np.savez(path, **arrays)
        return path

    def load(self, path: str | os.PathLike) -> "Module":
        """Load a file written by :meth:`save` into this module (in place); returns self.

        Read with ``allow_pickle=False``: a file holding pickled objects, a file
        that is not an ``.npz``, and keys or shapes that do not match this model
        are refused with :class:`ad.SerializationError`.
        Example: ``nn.Linear(2, 3).load("linear.npz")``.
        """
        path = os.fspath(path)
        if not os.path.exists(path) and os.path.exists(path + ".npz"):
            path += ".npz"
        if not os.path.exists(path):
            raise SerializationError(f"load: no such file '{path}'")
        if not os.path.isfile(path):
            raise SerializationError(f"load: '{path}' is not a file (a directory?); expected a file written by "
                                     f"Module.save")
        with open(path, "rb") as fh:
            head = fh.read(6)
        if head.startswith(b"\x93NUMPY"):
            raise SerializationError(f"load: '{path}' holds a single array (.npy), not an .npz archive of "
                                     f"named arrays written by Module.save")
        if not head.startswith(b"PK"):  # every zip archive, hence every .npz, starts so
            kind = "pickled data" if head[:1] == b"\x80" else ("empty" if not head else "not a zip archive")
            raise SerializationError(f"load: '{path}' is not an .npz archive ({kind}); expected a file "
                                     f"written by Module.save")
        try:
            archive = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise SerializationError(f"load: '{path}' is not an .npz archive that can be read without "
                                     f"pickle ({exc}); expected a file written by Module.save") from None
        except (OSError, zipfile.BadZipFile, EOFError) as exc:
            raise SerializationError(f"load: '{path}' is not a readable .npz file ({exc})") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise SerializationError(f"load: '{path}' holds a single array, not an .npz archive of named "
                                     f"arrays written by Module.save")
        state: dict[str, Any] = {}
        with archive:
            for key in archive.files:
                try:
                    state[key] = archive[key]
                except ValueError as exc:
                    if "pickle" not in str(exc):  # numpy's ValueError for a short or malformed array too
                        raise SerializationError(f"load: '{path}' key '{key}' is truncated or corrupt ({exc}); "
                                                 f"expected a file written by Module.save") from None
                    raise SerializationError(f"load: '{path}' key '{key}' is a pickled object array "
                                             f"({exc}); refusing to unpickle it") from None
                except (OSError, zipfile.BadZipFile, EOFError) as exc:
                    raise SerializationError(f"load: '{path}' key '{key}' cannot be read ({exc})") from None
        if _CLASS_KEY in state:
            state[_CLASS_KEY] = str(state[_CLASS_KEY])
        try:
            return self.load_state_dict(state)
        except SerializationError as exc:
            raise SerializationError(f"load '{path}': {exc}") from None

    # ----------------------------------------------------------------- repr

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr (its sizes)."""
        return ""

    def __repr__(self) -> str:
        kids = list(self._named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not kids:
            return head + ")"
        lines = [head]
        for name, child in kids:
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {text}")
        return "\n".join(lines) + "\n)"


def _zero_grads(params, set_to_none: bool) -> None:
    """``.grad`` of each parameter to None, or (``set_to_none=False``) to a fresh array of zeros."""
    for p in params:
        if set_to_none or p.grad is None:
            p.grad = None
        else:   # a new array: a gradient may share its array with another's, or with the user's cotangent
            p.grad = Tensor(np.zeros_like(p.grad.value if isinstance(p.grad, Tensor) else p.grad))


# Module's own methods (parameters, state_dict, train, ...) record nothing: a subclass's
# override of one is not an entry that names parameters (and the naming calls some of them).
_MODULE_API = frozenset(name for name in vars(Module) if name != "forward") | {"append"}


def _scope_label(name: str, module: Module) -> str:
    # A bare index ("0" inside Sequential) says nothing in a rendering: name the class too.
    return f"{type(module).__name__}{name}" if name.isdigit() else name


class ModuleList(Module):
    """A list of modules whose parameters are found; indexable and iterable.

    Plain Python lists of modules as attributes work too; this class also
    behaves as a module on its own (``parameters()``, ``repr``).
    Example: ``nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])[1]`` is the second layer.
    """

    def __init__(self, modules=()):
        super().__init__()
        self._items: list[Module] = []
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        if not isinstance(module, Module):
            raise AutogradDagError(f"{type(self).__name__}: expected a Module, got {type(module).__name__}")
        self._items.append(module)
        return self

    def _members(self):
        _, slots = super()._members()   # (parameters set as attributes of the list itself)
        return [(str(i), m) for i, m in enumerate(self._items)], slots

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(self._items)


class Sequential(ModuleList):
    """Modules applied one after another: ``Sequential(f1, f2)(x) == f2(f1(x))`` (a computation chain).

    Shapes: whatever the first module takes -> whatever the last returns.
    Example:
        >>> from autograd_dag import nn
        >>> mlp = nn.Sequential(nn.Linear(2, 8, rng=0), nn.ReLU(), nn.Linear(8, 1, rng=1))
        >>> mlp.num_parameters()
        33
    """

    def __init__(self, *modules):
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = tuple(modules[0])
        super().__init__(modules)

    def forward(self, x):
        for m in self._items:
            x = m(x)
        return x


def functional_call(module: Module, params: dict, *args, **kwargs):
    """Run ``module(*args)`` with some parameters replaced by the given Tensors or arrays.

    ``params`` maps dotted names (as in :meth:`Module.named_parameters`) to
    values; the module's own parameters are restored afterwards. This makes a
    model a function of its parameters, e.g. for ``ad.grad`` or ``ad.check_grads``.
    A tied parameter (one Parameter held at several attributes, listed once by
    ``named_parameters``) is replaced at every place it is held, under any of
    its names; two different values for one tied parameter are refused.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag import nn
        >>> lin = nn.Linear(3, 2, rng=0)
        >>> f = lambda x, W, b: nn.functional_call(lin, {"weight": W, "bias": b}, x).sum()
        >>> ad.check_grads(f, (np.ones((4, 3)), lin.weight.value, lin.bias.value))
    """
    slots: dict[str, Parameter] = {}
    # Where each parameter is held: a tied parameter (one Parameter at two
    # attributes, e.g. an output layer sharing the embedding table) is held twice.
    holders: dict[int, list[tuple[object, str, int | None]]] = {}
    for mname, m in module.named_modules():
        for name, attr, i, p in m._parameter_slots():
            slots[f"{mname}.{name}" if mname else name] = p
            holders.setdefault(id(p), []).append((m, attr, i))
    unknown = [k for k in params if k not in slots]
    if unknown:
        raise AutogradDagError(f"functional_call: {type(module).__name__} has no parameter(s) {unknown}; "
                               f"its parameters are {list(slots)}")
    # A tied parameter is one variable: the value given under any of its names
    # replaces it everywhere (as torch.func.functional_call's tie_weights), so
    # that the function, and its gradient, see every use.
    given: dict[int, tuple[str, object]] = {}
    for key, value in params.items():
        pid = id(slots[key])
        if pid in given and given[pid][1] is not value:
            raise AutogradDagError(f"functional_call: '{given[pid][0]}' and '{key}' name one tied parameter "
                                   f"of {type(module).__name__}; give it once")
        given[pid] = (key, value)
    saved = []
    try:
        for pid, (_, value) in given.items():
            value = value if isinstance(value, Tensor) else Tensor(value)
            for owner, attr, i in holders[pid]:
                old = owner.__dict__[attr]
                saved.append((owner, attr, old))
                if i is None:
                    object.__setattr__(owner, attr, value)
                elif isinstance(old, dict):
                    object.__setattr__(owner, attr, {**old, i: value})
                else:
                    seq = list(old)
                    seq[i] = value
                    object.__setattr__(owner, attr, type(old)(seq) if isinstance(old, tuple) else seq)
        return module(*args, **kwargs)
    finally:
        for owner, attr, old in reversed(saved):
            object.__setattr__(owner, attr, old)
