"""Programs: DAGs of primitive functions in topological order (seed 001 §4.1.3).

A :class:`Program` is made from recorded Tensors (:meth:`Program.from_outputs`),
from a traced function (:func:`~autograd_dag.jitting.trace`), or from a :class:`~autograd_dag.dag.Graph`
whose vertices name primitives (:meth:`Program.from_graph`). Calling it runs
Algorithm 4.1: for k = 1..K, s_k = f_k(s_parents(k)), freeing every
intermediate value right after its last use.
"""

from __future__ import annotations

import enum
from operator import attrgetter
from typing import Sequence

import numpy as np

from . import parallel
from .core import Tensor, _recording_as, apply, attributed_to
from .displays import mimebundle
from .errors import AutogradDagError, ProgramInputError
from .codegen import generated as generated_code, run as run_generated
from .execution import disposable, plan_steps, shared_outputs, step_error
from .formatting import format_shape, listing
from .dag import Graph
from .graph import paused_gc
from .graph_recording import record_graph
from .kinds import ProgramKind
from .leaf_names import leaf_name
from .passes import common_subexpressions
from .program_inputs import checked_inputs
from .scheduling import run_schedule, schedule_for
from .tracing import topological_nodes
from .primitives.structure import IDENTITY


_new_node = object.__new__
_serial = attrgetter("serial")


class NodeKind(enum.Enum):
    """What a program node without a primitive is (its ``op``).

    Not a string, so that no primitive's name can pass for one; it prints as
    its value, so listings and pictures read ``input``, ``constant``...
    """

    INPUT = "input"
    CONSTANT = "constant"
    PARAMETER = "parameter"  # a constant leaf that required a gradient when recorded
    VERTEX = "vertex"  # a vertex of a hand-built Graph naming no primitive (drawn, never run)

    def __str__(self) -> str:
        return self.value



def _recorded_order(walk: list[Tensor], inputs: dict) -> tuple[list[Tensor], dict]:
    """The Tensors of ``walk`` (a topological order) in the order they were recorded, each leaf before its first reader.

    Nodes made by operations from the oldest (their serials count down from −1,
    each below its parents'); a leaf (whose serial is not an order) just before the first node that
    reads it, as the depth-first walk places it; ``inputs`` (ids) are numbered
    apart and left out. Also returns ``{id(leaf or input): scope of its first reader}``,
    where a module call left the names its parameters had then (see :mod:`.leaf_names`).
    """
    order, readers = [], {}
    append = order.append
    for t in sorted([t for t in walk if t.parents and id(t) not in inputs], key=_serial, reverse=True):
        for p in t.parents:
            if not p.parents and id(p) not in readers:
                readers[id(p)] = t.scope
                if id(p) not in inputs:
                    append(p)
        append(t)
    # Leaves no node reads (outputs).
    order.extend(t for t in walk if not t.parents and id(t) not in readers and id(t) not in inputs)
    return order, readers


class ProgramNode:
    """One node k of a program: the function f_k and its output variable s_k.

    ``op`` is the primitive's name, or a :class:`NodeKind` for roots (the
    tracer's record of an input, parameter or constant). ``parents`` are node
    indices, all smaller than ``index``. ``value`` holds the array of constants
    and parameters. Roles ``grad_program`` records (names are only shown, never
    read): ``gradient_of``, the position in ``inputs`` of the input whose
    gradient this node is (None for any other node); ``in_backward_pass``, whether
    the node is the reverse sweep's seed or computed from it.
    """

    __slots__ = ("index", "op", "prim", "parents", "params", "shape", "dtype", "name",
                 "source", "scope", "value", "gradient_of", "in_backward_pass")

    def __init__(self, index, op, prim, parents, params, shape, dtype, name=None,
                 source=None, scope=(), value=None, gradient_of=None, in_backward_pass=False):
        self.index = index
        self.op = op
        self.prim = prim
        self.parents = parents
        self.params = params or {}
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.name = name
        self.source = source
        self.scope = scope
        self.value = value
        self.gradient_of = gradient_of
        self.in_backward_pass = in_backward_pass

    def __copy__(self) -> "ProgramNode":
        # The passes copy every node they keep: the generic copy of a slotted object
        # (__reduce_ex__, then one setattr per slot) cost 8 µs a node, this 1.
        new = _new_node(ProgramNode)
        new.index, new.op, new.prim, new.parents, new.params, new.shape = (
            self.index, self.op, self.prim, self.parents, self.params, self.shape)
        new.dtype, new.name, new.source, new.scope, new.value = (
            self.dtype, self.name, self.source, self.scope, self.value)
        new.gradient_of, new.in_backward_pass = self.gradient_of, self.in_backward_pass
        return new

    @property
    def is_root(self) -> bool:
        return self.prim is None

    def type_str(self) -> str:
        """``float64[256,10]``: dtype and shape as the listing prints them."""
        return f"{self.dtype}{format_shape(self.shape)}"

    def __repr__(self) -> str:
        return f"<ProgramNode %{self.index} {self.op} {self.type_str()}>"


class Program:
    """A DAG of primitive functions in topological order, with inputs and outputs.

    ``nodes[k]`` is node k (parents before children); ``inputs`` and
    ``outputs`` are tuples of node indices (several of each are allowed,
    §4.1.3). Call it on numpy arrays to execute it (Algorithm 4.1); call it on
    Tensors to record its nodes again (how transformations compose).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x) * 2.0, np.zeros(3))
        >>> print(prog)  # doctest: +ELLIPSIS
        def f(%0: float64[3]):
          %1 = exp(%0)  : float64[3]...
        >>> prog(np.ones(3)).round(3)
        array([5.437, 5.437, 5.437])
    """

    def __init__(self, nodes: Sequence[ProgramNode], inputs: Sequence[int], outputs: Sequence[int],
                 *, name: str = "f", single_output: bool | None = None, kind: ProgramKind | str = "program"):
        self.nodes = list(nodes)
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.name = name
        self.kind = kind
        self.single_output = len(self.outputs) == 1 if single_output is None else single_output
        for node in self.nodes:
            for p in node.parents:
                if not 0 <= p < node.index:
                    raise AutogradDagError(f"Program: node %{node.index} has parent %{p}, which "
                                           f"does not come before it: nodes must be in topological order")
        self._children: list[list[int]] | None = None
        self._initial: list | None = None
        self._steps, self._epoch = None, -1   # the plan, and parallel.epoch when it was made
        self._shared: frozenset[int] = frozenset()  # outputs that may share memory: copied (by _plan)
        self._generated = None   # the plan's code and calls (codegen.py)

    def __getstate__(self) -> dict:
        # A copy (copy, deepcopy, pickle) makes its own plan: this one's ids of the constants' buffers
        # and its generated code's globals are this program's arrays (a deep copy ran on the original's
        # constants and handed out its own: tests/test_jit_adversarial.py).
        state = dict(self.__dict__, _steps=None, _epoch=-1, _initial=None, _generated=None)
        state.update(_shared=frozenset(), _inter_op_schedule=None)
        return state

    @property
    def kind(self) -> ProgramKind:
        """What the program is (a :class:`ProgramKind`); assigning its value (``"circuit"``) works too."""
        return self._kind

    @kind.setter
    def kind(self, kind: ProgramKind | str) -> None:
        self._kind = ProgramKind.of(kind)

    # ------------------------------------------------------------ building

    @classmethod
    def from_outputs(cls, inputs, outputs, *, name: str = "f", kind: ProgramKind | str = "program") -> "Program":
        """The program computing ``outputs`` (Tensors) from ``inputs`` (Tensors).

        Leaves that are not inputs become constants (``parameter`` if they
        require a gradient). Recorded history behind an input is cut there.
        A single Tensor may be passed instead of a tuple for either argument.

        Example:
            >>> import autograd_dag as ad
            >>> x = ad.Tensor([1.0, 2.0], name="x")
            >>> ad.Program.from_outputs(x, ad.exp(x)).outputs
            (1,)
        """
        single = isinstance(outputs, Tensor)
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        outputs = (outputs,) if single else tuple(outputs)
        for t in inputs + outputs:
            if not isinstance(t, Tensor):
                raise ProgramInputError(f"Program.from_outputs: expected Tensors, got {type(t).__name__}")
        # A long program is one ProgramNode (and a few tuples) per node and no reference cycle:
        # the collector would only walk the growing node list again and again (a third of
        # this on a 1,000-step LSTM's gradient), as in tracing and the sweeps.
        with paused_gc():
            index: dict[int, int] = {}
            nodes: list[ProgramNode] = []
            for t in inputs:
                if id(t) in index:
                    raise ProgramInputError(f"Program.from_outputs: the same Tensor is given twice as an input "
                                            f"({t.name or 'unnamed'}, shape {t.shape})")
                index[id(t)] = len(nodes)
                nodes.append(ProgramNode(len(nodes), NodeKind.INPUT, None, (), None, t.shape, t.dtype,
                                         name=t.name or f"x{len(nodes)}", source=t.source, scope=t.scope))
            # In the order the nodes were recorded (a node's serial is below its parents'): the order the
            # computation was written and run in, each weight's gradient product next to the input's that
            # reads the same cotangent. The depth-first order from the outputs would put the whole chain
            # behind the first output before anything else (in a training step, every weight's gradient
            # product last), each operand then read long after it was made: 10 % slower on the Transformer.
            walk = topological_nodes(outputs, stop=set(index), what="Program.from_outputs")
            append = nodes.append
            order, readers = _recorded_order(walk, index)
            for k, t in enumerate(inputs):
                if t.prim is None and id(t) in readers:   # (a parameter given as an input)
                    nodes[k].name = leaf_name(t, readers[id(t)]) or nodes[k].name
            for t in order:
                tid = id(t)
                if tid in index:
                    continue
                parents, prim = t.parents, t.prim
                if prim is IDENTITY and parents:
                    # A transformation's per-slot input node computes nothing.
                    index[tid] = index[id(parents[0])]
                    continue
                k = index[tid] = len(nodes)
                if prim is None or not parents:
                    op = NodeKind.PARAMETER if t.requires_grad else NodeKind.CONSTANT
                    append(ProgramNode(k, op, None, (), None, t.shape, t.dtype,
                                       name=leaf_name(t, readers.get(id(t))),
                                       source=t.source, scope=t.scope, value=t.value))
                else:
                    append(ProgramNode(k, prim.name, prim, tuple([index[id(p)] for p in parents]),
                                       t.params, t.shape, t.dtype, name=t.name, source=t.source,
                                       scope=t.scope))
            return cls(nodes, range(len(inputs)), [index[id(t)] for t in outputs], name=name,
                       single_output=single, kind=kind)

    @classmethod
    def from_graph(cls, graph: Graph, ops: dict, inputs: dict, *, outputs=None,
                   params: dict | None = None, name: str = "f") -> "Program":
        """A program from a hand-built :class:`Graph` whose vertices name primitives.

        ``ops`` maps each non-input vertex to a primitive name (or Primitive);
        its parents, in the order the edges were added, are its arguments.
        ``inputs`` maps input vertices to example arrays (they fix shapes and
        dtypes). ``outputs`` defaults to the graph's leaves; ``params`` maps a
        vertex to its static parameters, as the public function of that name takes
        them (``{"axis": -1}`` for ``"sum"``; left out, its defaults).

        Example:
            >>> import numpy as np, autograd_dag as ad
            >>> g = ad.Graph.from_edges([("x", "e"), ("e", "m"), ("x", "m")])
            >>> prog = ad.Program.from_graph(g, {"e": "exp", "m": "multiply"}, {"x": np.ones(2)})
            >>> prog(np.zeros(2))
            array([0., 0.])
        """
        inputs, result = record_graph(graph, ops, inputs, outputs, params)
        return cls.from_outputs(inputs, result, name=name)

    def without_common_subexpressions(self) -> "Program":
        """The same program with each repeated computation done once (common-subexpression elimination).

        Nodes applying the same primitive, with the same parameters, to the
        same operands are merged (gradient programs repeat forward values such
        as ``tanh(x)`` once per use); nodes no output needs are dropped.
        ``jit`` runs its programs this way; render one to see a smaller
        gradient. See :func:`~autograd_dag.passes.common_subexpressions`.

        Example:
            >>> import numpy as np, autograd_dag as ad
            >>> g = ad.trace(ad.grad(lambda x: ad.sum(ad.tanh(x) * ad.tanh(x))), np.ones(3))
            >>> len(g), len(g.without_common_subexpressions())
            (17, 14)
        """
        with paused_gc():  # as in from_outputs: many small objects, no cycle
            nodes, new_index = common_subexpressions(self.nodes, self.inputs, self.outputs)
            return Program(nodes, [new_index[k] for k in self.inputs], [new_index[k] for k in self.outputs],
                           name=self.name, single_output=self.single_output, kind=self.kind)

    def parameters_as_inputs(self) -> "Program":
        """The same program with its parameters (leaves that required a gradient) as extra inputs.

        They follow the existing inputs, in node order, and keep their names;
        this is how a model's loss becomes a function of its weights.

        Example:
            >>> import numpy as np, autograd_dag as ad
            >>> w = ad.Tensor(np.ones(2), requires_grad=True, name="w")
            >>> prog = ad.Program.from_outputs((), ad.sum(w * w)).parameters_as_inputs()
            >>> [prog.nodes[k].name for k in prog.inputs], float(prog(np.full(2, 3.0)))
            (['w'], 18.0)
        """
        nodes = [ProgramNode(n.index, NodeKind.INPUT, None, (), None, n.shape, n.dtype, name=n.name,
                             source=n.source, scope=n.scope) if n.op is NodeKind.PARAMETER else n
                 for n in self.nodes]
        params = [n.index for n in self.nodes if n.op is NodeKind.PARAMETER]
        return Program(nodes, self.inputs + tuple(params), self.outputs, name=self.name,
                       single_output=self.single_output, kind=self.kind)

    # ------------------------------------------------------------- queries

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, k: int) -> ProgramNode:
        return self.nodes[k]

    def __iter__(self):
        return iter(self.nodes)

    @property
    def num_edges(self) -> int:
        """Number of edges (each parent reference of each node counts once)."""
        return sum(len(n.parents) for n in self.nodes)

    def parents(self, k: int) -> tuple[int, ...]:
        """Indices of node k's parents, in argument order."""
        return self.nodes[k].parents

    def children(self, k: int) -> list[int]:
        """Indices of the nodes that use node k, in topological order."""
        if self._children is None:
            children: list[list[int]] = [[] for _ in self.nodes]
            for node in self.nodes:
                for p in dict.fromkeys(node.parents):
                    children[p].append(node.index)
            self._children = children
        return self._children[k]

    def roots(self) -> list[int]:
        """Nodes without parents: inputs, constants and parameters."""
        return [n.index for n in self.nodes if not n.parents]

    def leaves(self) -> list[int]:
        """Nodes without children (the book's leaves; not ``Tensor.is_leaf``, PyTorch's word for a root)."""
        return [n.index for n in self.nodes if not self.children(n.index)]

    def to_graph(self) -> Graph:
        """The bare DAG of node indices (for the graph algorithms)."""
        return Graph.from_edges([(p, n.index) for n in self.nodes for p in n.parents],
                                vertices=range(len(self.nodes)), check=False)

    def op_counts(self) -> dict[str, int]:
        """How many nodes use each primitive (roots counted under their kind's name, ``input``...)."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[str(n.op)] = counts.get(str(n.op), 0) + 1
        return counts

    # ------------------------------------------------------------ executing

    def _plan(self):
        """The execution plan, made once: constants preloaded, then one step per function node.

        The steps (:func:`~autograd_dag.execution.plan_steps`) free each value
        after its last use, and write elementwise results into operands that die there.
        """
        if self._steps is None or self._epoch != parallel.epoch:   # large steps split per thread setting
            with paused_gc():  # as in from_outputs: one step tuple per node, no cycle
                steps, epoch = plan_steps(self.nodes, self.outputs), parallel.epoch
                initial = [n.value if n.prim is None and n.op is not NodeKind.INPUT else None for n in self.nodes]
                self._initial = initial
                self._shared = shared_outputs(self.nodes, self.outputs)
                # Published last: a call on another thread that finds the steps reads _initial (the
                # first calls of one program on 4 threads got None for it, tests/test_jit_adversarial.py).
                self._steps, self._epoch = steps, epoch
            return initial, steps
        return self._initial, self._steps

    def _check_inputs(self, args, kwargs=None) -> list:
        return checked_inputs(self, args, kwargs)

    def __call__(self, *args, **kwargs):
        """Execute the program (Algorithm 4.1).

        On numpy arrays: returns numpy arrays (one, or a tuple), computing each
        node once and freeing every intermediate after its last use. On
        Tensors: records the nodes again and returns Tensors. Inputs may also
        be given by name (``prog(x=..., w=...)``).
        """
        args = checked_inputs(self, args, kwargs)
        if any(isinstance(a, Tensor) for a in args):
            return self._replay(args)
        initial, steps = self._plan()
        schedule = schedule_for(self, steps)
        # From its second call a plan runs as straight-line Python (codegen.py), the same calls without
        # the loop's bookkeeping (its step tuples, list of values and frees: a third of the per-op chain's
        # time, 1.11 µs/op against 0.72). The loop stays Algorithm 4.1 as written, and the reference.
        generated = None if schedule is not None else generated_code(self, initial, steps)
        if generated is not None:
            return self._returned(run_generated(self, generated, args))
        values = list(initial)
        for k, a in zip(self.inputs, args):
            values[k] = a
        if schedule is not None:   # independent heavy nodes run on the thread pool (scheduling.py)
            run_schedule(self, schedule, values)
            steps = ()
        # The hot loop of Algorithm 4.1: one numpy call per node, nothing else.
        k = None
        try:
            # (Unpacked in the for statement: 2 % less time per step than a name and a line of its own.)
            for k, impl, parents, params, frees, inplace in steps:
                if inplace is not None and disposable(values, inplace):
                    # (No local may hold an operand here: disposable() counts references.)
                    values[k] = impl(*[values[p] for p in parents], out=values[inplace], **(params or {}))
                elif params is None:
                    if len(parents) == 2:
                        values[k] = impl(values[parents[0]], values[parents[1]])
                    elif len(parents) == 1:
                        values[k] = impl(values[parents[0]])
                    else:
                        values[k] = impl(*[values[p] for p in parents])
                else:
                    values[k] = impl(*[values[p] for p in parents], **params)
                for p in frees:
                    values[p] = None
        except (Warning, FloatingPointError):
            raise  # warnings turned into errors by the user stay theirs
        except Exception as exc:
            raise step_error(self, k, values, exc) from None
        return self._returned([values[k] for k in self.outputs])

    def _returned(self, outs):
        """The outputs as the caller gets them: arrays of its own, one or a tuple.

        numpy gives scalars for 0-d results; a program returns arrays, as ad.grad does.
        Each output is the caller's own array, as jax.jit's are fresh buffers: one that
        may be an input, a constant (the Hessian of a quadratic: the caller's h -= λI
        changed every later call's), another output or a view of one is copied (which
        ones is decided once per program, execution.shared_outputs). No later call
        writes into it: the executor writes only into arrays nothing else holds
        (execution.disposable counts their references).
        """
        outs = tuple(map(np.asarray, outs))
        if self._shared:
            outs = tuple(o.copy() if i in self._shared else o for i, o in enumerate(outs))
        return outs[0] if self.single_output else outs

    def _replay(self, args):
        values: list = [None] * len(self.nodes)
        for k, a in zip(self.inputs, args):
            values[k] = a if isinstance(a, Tensor) else Tensor(a)
        with _recording_as(True):
            for node in self.nodes:
                if node.prim is None:
                    if node.op is not NodeKind.INPUT:
                        values[node.index] = Tensor(node.value, requires_grad=False, name=node.name)
                    continue
                # Replayed nodes keep the line and scope they were recorded at.
                with attributed_to(node.source, node.scope):
                    out = apply(node.prim, *[values[p] for p in node.parents], **node.params)
                out.name = node.name
                values[node.index] = out
        outs = tuple(values[k] for k in self.outputs)
        return outs[0] if self.single_output else outs

    # ------------------------------------------------------------- printing

    def __str__(self) -> str:
        return listing(self.name, [self.nodes[k] for k in self.inputs],
                       [n for n in self.nodes if n.op is not NodeKind.INPUT], self.outputs, self.single_output)

    def __repr__(self) -> str:
        return (f"<Program {self.name}: {len(self.inputs)} input(s), {len(self.nodes)} nodes, "
                f"{self.num_edges} edges, {len(self.outputs)} output(s)>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        # Jupyter shows the listing and the views layers above registered (the renderer: the picture).
        return mimebundle(self, include, exclude)


