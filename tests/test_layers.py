"""The import graph of ``autograd_dag``: every module imports only the layers below it (DESIGN.md).

Read from the source with ``ast``, so a cycle shows here as an upward import
rather than as an ImportError in some other test. A subpackage (``primitives``,
``render``, ``nn``...) is one unit; imports among its own modules are not
checked here.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "autograd_dag"

# Bottom first: each unit may import only units listed before it. A total order,
# so "imports point down" also means "the import graph has no cycle".
LAYERS = [
    "errors", "tree",
    "parallel",  # the thread pool large operations are split over, and set_num_threads
    "splitting",  # large elementwise calls and reductions split into chunks run on that pool
    "heap",  # glibc's heap kept between a program's calls (mallopt): no page faults each call
    "modes",  # what every operation reads before it records (no_grad, scope, anomaly, tracer stack): one set per thread
    "graph",  # the DAG core: the one topological sort and reachability walk
    "dag", "graph_algorithms",  # the hand-built DAG (Graph), then the book's other questions about DAGs
    "trace_state",  # which transformations run now: written by tracing, read by core (below both)
    "scopes", "anomaly", "operation_errors", "promotion",  # the modes and errors apply reads, not the Tensor record
    "public_functions",  # a built-in primitive called with user-form parameters goes through its public function
    "core", "inlined", "primitives", "tracing", "execution",
    "scheduling",  # inter-op parallelism: a program's independent heavy nodes on the pool (above execution's plan)
    "codegen",  # a plan as straight-line Python: the executor of a program called again (above execution's plan)
    "passes",
    "graph_recording",  # a hand-built Graph's vertices applied as operations (Program.from_graph)
    "program_inputs",  # a program's arguments checked against its input nodes
    "leaf_names",  # the names a module call gives its parameters, read by program
    "kinds", "displays",  # what a program is (ProgramKind); the views layers above add to its Jupyter display
    "formatting",  # the short texts of shapes, constants, parameters in listings and pictures
    "program",
    "jitting",  # trace and jit: programs recorded from functions, above the program model
    "ufunc_methods",  # np.add.reduce and the other ufunc methods, as the numpy functions they name (for operators)
    "autodiff", "operators",  # the one place Tensor gets methods from above (backward too)
    "numpy_more",  # more numpy functions on Tensors: entries in operators' dispatch tables
    "batching",
    "checkpointing",  # ad.checkpoint: the sweeps of autodiff, batched by the vmap of batching
    "numdiff",  # numerical derivatives (adaptive steps, Richardson): plain numpy, read by checking
    "check_records", "batched_checking",  # each check's verdict and worst error, for the pytest plugin's report; vmap'd derivatives against a loop
    "checking", "checking_user", "testing", "linalg", "text",
    "circuits", "render",
    "overlays",  # passes that run a program for render(overlay=): the renderer only reads their numbers
    "named", "nn", "optim", "onnx",
    "frontends",  # JAX jaxprs and torch.export programs replayed as Programs (from_jax, from_torch)
    "jax",  # programs lowered to JAX functions (jax itself imported only when lower() is called)
    "__init__",  # the public namespace
    "gallery", "cli",
    "pytest_plugin",  # loaded by pytest (the pytest11 entry point), above everything it checks with
]


def unit_of(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def imported_units(node: ast.Import | ast.ImportFrom, path: pathlib.Path) -> list[str]:
    """The library units an import statement in ``path`` reads (``__init__`` for the package itself)."""
    if isinstance(node, ast.Import):
        return [a.name.split(".")[1] for a in node.names
                if a.name.startswith("autograd_dag.")] + [
            "__init__" for a in node.names if a.name == "autograd_dag"]
    if node.level:
        package = list(path.relative_to(ROOT).parts[:-1])
        base = package[:len(package) - node.level + 1]
        module = base + (node.module.split(".") if node.module else [])
    elif node.module and node.module.split(".")[0] == "autograd_dag":
        module = node.module.split(".")[1:]
    else:
        return []
    if module:
        return [module[0]]
    # ``from . import x``: x is a module of the package, or a name its __init__ defines.
    return [a.name if (ROOT / a.name).is_dir() or (ROOT / f"{a.name}.py").exists() else "__init__"
            for a in node.names]


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """``{unit: units it imports}`` and the imports written inside a function body."""
    graph: dict[str, set[str]] = {}
    in_functions = []
    for path in sorted(ROOT.rglob("*.py")):
        unit = unit_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph.setdefault(unit, set()).update(u for u in imported_units(node, path) if u != unit)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                in_functions += [f"{path.relative_to(ROOT)}:{sub.lineno}" for sub in ast.walk(node)
                                 if isinstance(sub, (ast.Import, ast.ImportFrom)) and imported_units(sub, path)]
    return graph, in_functions


def test_every_module_has_a_layer():
    units = {unit_of(p) for p in ROOT.rglob("*.py")}
    assert units - set(LAYERS) == set(), "add the new module to LAYERS, above what it imports"
    assert len(LAYERS) == len(set(LAYERS))


def test_imports_point_down_so_there_is_no_cycle():
    graph, _ = import_graph()
    rank = {u: k for k, u in enumerate(LAYERS)}
    upward = sorted(f"{u} imports {t}" for u, targets in graph.items() for t in targets if rank[t] >= rank[u])
    assert upward == []
    # The core stands on the graph module: the walks programs use are graph's.
    assert {"graph"} <= graph["tracing"] and {"graph"} <= graph["program"]
    assert graph["graph"] == {"errors"}


def test_no_library_import_inside_a_function():
    # DESIGN.md: no import inside a function body to dodge a cycle.
    assert import_graph()[1] == []
