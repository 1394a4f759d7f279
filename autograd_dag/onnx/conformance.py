"""ONNX's own operator tests, run through the importer and back out through the exporter.

The ``onnx`` package defines a conformance test for each operator form
(``onnx.backend.test.case.node``: a one-node model, input arrays and the
expected outputs). :func:`node_cases` writes them once with onnx's generator
into a cache folder outside the checkout (``$AUTOGRAD_DAG_CACHE``, else
``$XDG_CACHE_HOME/autograd_dag``, else ``~/.cache/autograd_dag``; one folder
per onnx version) and reads them back; :func:`run_case` loads one with
:func:`~autograd_dag.onnx.load`, executes it on numpy and compares, then
exports the loaded program and runs it on ONNX Runtime and compares again.

Run ``python -m autograd_dag.onnx.conformance`` for the per-operator table
(``--failures`` lists each failing test with its reason).

Example (needs onnx; not run as a doctest)::

    from autograd_dag.onnx import conformance
    results = [conformance.run_case(c) for c in conformance.node_cases()]
    print(conformance.table(results))
"""

from __future__ import annotations

import collections
import dataclasses
import fnmatch
import json
import os
import re
import shutil
import tempfile

import numpy as np

from ..errors import AutogradDagError
from ._export import export, require_onnx
from ._import import SUPPORTED_ONNX_OPS, load
from ._run import run

# Float results are compared at these tolerances unless the test itself states
# looser ones (onnx's defaults are rtol 1e-3, atol 1e-7): float32 kernels that
# differ in summation order or in their exp/log agree to a few ulps, so 1e-5
# relative is strict enough to catch any wrong formula and loose enough for
# BLAS and libm differences between CPUs.
RTOL = {np.dtype(np.float64): 1e-7, np.dtype(np.float32): 1e-5}
ATOL = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 1e-6}
# The 16-bit floats at 4 units in the last place (float16's is 2**-11 relative, bfloat16's
# 2**-8): onnx's reference rounds after every numpy operation, the importer sometimes once
# after several (numpy computes matmul and softmax of bfloat16 in float32), so a chain of
# operations (the expanded Attention tests) differs by an ulp or two; a wrong formula differs
# by far more. Other types without an entry (complex): onnx's default.
RTOL[np.dtype(np.float16)] = ATOL[np.dtype(np.float16)] = 4 * 2.0 ** -11
try:
    import ml_dtypes  # noqa: E402 - optional: onnx installs it with the narrow float types
    RTOL[np.dtype(ml_dtypes.bfloat16)] = ATOL[np.dtype(ml_dtypes.bfloat16)] = 4 * 2.0 ** -8
except ImportError:
    pass
RTOL_DEFAULT, ATOL_DEFAULT = 1e-3, 1e-3
ONNX_DEFAULT_RTOL, ONNX_DEFAULT_ATOL = 1e-3, 1e-7


# Node tests of operators in the import table that end in a refusal, by name pattern
# (fnmatch), with the reason; the README lists each. tests/test_onnx_conformance.py
# requires every other test of a table operator to pass, and these to be refused.
EXCEPTIONS: dict[str, str] = {
    **dict.fromkeys(["test_training_dropout", "test_training_dropout_mask", "test_training_dropout_default",
                     "test_training_dropout_default_mask"],
                    "Dropout with training_mode=True draws a random mask (onnx's expected output is numpy's "
                    "draw): a loaded program is never random, so it is refused"),
    **dict.fromkeys(["test_identity_sequence", "test_identity_opt"],
                    "a sequence or optional value: the library's values are tensors"),
    "test_cast*FLOAT4E2M1*": "ONNX Runtime 1.32 has no CPU kernel that reads or writes float4e2m1: the import and "
                             "the numpy execution pass, the round trip is refused naming the missing kernel",
}

# The onnx and onnxruntime versions the README's conformance figures were measured with
# (pinned in the dev extra, so make test installs them).
MEASURED_WITH = ("1.23.2", "1.32.0")

# Node tests whose expected outputs onnx states to fewer digits than its default tolerances
# assume, with the relative tolerance they support and why.
LOOSER: dict[str, tuple[float, str]] = {
    "test_averagepool_2d_ceil_last_window_starts_on_pad":
        (1e-3, "onnx's case file hard-codes the expected output to 4 decimals (0.2841 for 2.5564 / 9 = 0.284044)"),
}

# Operators whose listed exceptions leave them under the 98 % goal, with the reason.
BELOW_GOAL: dict[str, str] = {
    "Dropout": "4 of its 12 tests drop at random (training_mode=True)",
    "Identity": "2 of its 3 tests pass a sequence or an optional",
    "Cast": "4 of its 60 tests cast to or from float4e2m1, which ONNX Runtime cannot run",
    "CastLike": "4 of its 56 tests cast to or from float4e2m1, which ONNX Runtime cannot run",
}


def exception(name: str) -> str | None:
    """The reason a node test is a listed exception, or None."""
    return next((reason for pattern, reason in EXCEPTIONS.items() if fnmatch.fnmatchcase(name, pattern)), None)


@dataclasses.dataclass(frozen=True)
class Case:
    """One generated node test: its folder holds ``model.onnx`` and ``test_data_set_*/``."""

    name: str
    folder: str
    op_type: str          # the operator under test (for *_expanded tests, the expanded operator)
    ops: tuple            # every operator the model's graph uses
    expanded: bool        # the operator's function body, spelled with other operators
    rtol: float
    atol: float

    def model(self):
        onnx = require_onnx()
        return onnx.load(os.path.join(self.folder, "model.onnx"))

    def data_sets(self):
        """[(inputs, expected outputs)], each a list of numpy arrays (lists for sequences)."""
        onnx = require_onnx()
        graph = self.model().graph
        sets = []
        for d in sorted(x for x in os.listdir(self.folder) if x.startswith("test_data_set_")):
            path = os.path.join(self.folder, d)
            sets.append(tuple(_read_values(onnx, path, kind, infos)
                              for kind, infos in (("input", graph.input), ("output", graph.output))))
        return sets


def _read_values(onnx, folder: str, kind: str, infos) -> list:
    values = []
    for i, info in enumerate(infos):
        path = os.path.join(folder, f"{kind}_{i}.pb")
        if not os.path.exists(path):
            break
        with open(path, "rb") as f:
            data = f.read()
        values.append(_parse_value(onnx, data, info))
    return values


def _parse_value(onnx, data: bytes, info):
    # The graph's declared type says which proto the generator wrote (see _serialize).
    if info.type.HasField("sequence_type"):
        proto = onnx.SequenceProto()
        proto.ParseFromString(data)
        return onnx.numpy_helper.to_list(proto)
    if info.type.HasField("optional_type"):
        proto = onnx.OptionalProto()
        proto.ParseFromString(data)
        return onnx.numpy_helper.to_optional(proto)
    proto = onnx.TensorProto()
    proto.ParseFromString(data)
    return onnx.numpy_helper.to_array(proto)


def cache_root() -> str:
    """The folder generated conformance data is cached in (created on demand)."""
    root = os.environ.get("AUTOGRAD_DAG_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "autograd_dag")
    try:
        os.makedirs(root, exist_ok=True)
    except OSError:  # a read-only home (some CI runners): the temporary folder still caches
        root = os.path.join(tempfile.gettempdir(), "autograd_dag-cache")
    return root


def _generate(folder: str) -> None:
    """Write onnx's node tests into ``folder`` (atomically: concurrent test workers may race)."""
    onnx = require_onnx()
    import warnings  # noqa: PLC0415
    from onnx.backend.test.case import node as node_cases_module  # noqa: PLC0415
    with warnings.catch_warnings():
        # The generators compute their expected outputs with numpy (1/0, log 0, ...).
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            cases = node_cases_module.collect_testcases(None)
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".node-tests-", dir=parent)
    index = []
    for case in cases:
        out = os.path.join(tmp, case.name)
        os.makedirs(out)
        with open(os.path.join(out, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            d = os.path.join(out, f"test_data_set_{i}")
            os.makedirs(d)
            graph = case.model.graph
            for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for j, value in enumerate(values):
                    with open(os.path.join(d, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(_serialize(onnx, value, infos[j]))
        index.append({"name": case.name, "rtol": case.rtol, "atol": case.atol,
                      "ops": sorted({n.op_type for n in case.model.graph.node}),
                      "first_op": case.model.graph.node[0].op_type if case.model.graph.node else ""})
    with open(os.path.join(tmp, "index.json"), "w") as f:
        json.dump(index, f)
    try:
        os.rename(tmp, folder)
    except OSError:  # another process finished first: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)


def _serialize(onnx, value, info) -> bytes:
    if info.type.HasField("sequence_type"):
        return onnx.numpy_helper.from_list(value, info.name).SerializeToString()
    if info.type.HasField("optional_type"):
        return onnx.numpy_helper.from_optional(value, info.name).SerializeToString()
    if isinstance(value, onnx.TensorProto):
        return value.SerializeToString()
    return onnx.numpy_helper.from_array(np.asarray(value), info.name).SerializeToString()


def cache_folder() -> str:
    onnx = require_onnx()
    return os.path.join(cache_root(), f"onnx-{onnx.__version__}-node-tests")


def node_cases() -> list[Case]:
    """Every node test of the installed onnx, generated into the cache on first use."""
    folder = cache_folder()
    if not os.path.exists(os.path.join(folder, "index.json")):
        _generate(folder)
    with open(os.path.join(folder, "index.json")) as f:
        index = json.load(f)
    first = {e["name"]: e["first_op"] for e in index}
    cases = []
    for e in index:
        name = e["name"]
        # Function-expanded tests are named <test>_expanded or <test>_expanded_ver<opset>.
        match = re.fullmatch(r"(.*)_expanded(_ver\d+)?", name)
        base = match.group(1) if match else None
        op = first.get(base, e["first_op"]) if base else e["first_op"]
        cases.append(Case(name, os.path.join(folder, name), op, tuple(e["ops"]), base is not None,
                          e["rtol"], e["atol"]))
    return cases


@dataclasses.dataclass
class Result:
    """How one case went: ``status`` is pass, fail (wrong values), refused (a library error),
    crash (any other exception) or unsupported (an operator outside the import table);
    ``stage`` is import, execute or roundtrip."""

    case: Case
    status: str
    stage: str = ""
    detail: str = ""


def _tolerances(case: Case, dtype: np.dtype) -> tuple[float, float]:
    rtol, atol = RTOL.get(dtype, RTOL_DEFAULT), ATOL.get(dtype, ATOL_DEFAULT)
    if case.name in LOOSER:
        rtol = max(rtol, LOOSER[case.name][0])
    # A test that states looser tolerances than onnx's defaults says its operator is inexact.
    return max(rtol, case.rtol if case.rtol > ONNX_DEFAULT_RTOL else 0.0), \
        max(atol, case.atol if case.atol > ONNX_DEFAULT_ATOL else 0.0)


def compare(case: Case, got, expected) -> str:
    """'' when ``got`` matches ``expected``, else what differs (dtype, shape or the worst element)."""
    if isinstance(expected, list):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return f"expected a sequence of {len(expected)}, got {type(got).__name__}"
        return next((m for g, e in zip(got, expected) if (m := compare(case, g, e))), "")
    got, expected = np.asarray(got), np.asarray(expected)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if expected.dtype.kind in "biuSUO" or expected.dtype.itemsize == 1:
        # Integers, booleans, strings and the 8-bit float formats: exact.
        bad = got != expected
        if expected.dtype.kind == "f" or expected.dtype.itemsize == 1:
            bad &= ~(_isnan(got) & _isnan(expected))
        if bad.any():
            i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
            return f"{int(bad.sum())} of {bad.size} differ; at {tuple(map(int, i))}: {got[i]!r} != {expected[i]!r}"
        return ""
    rtol, atol = _tolerances(case, expected.dtype)
    g, e = got.astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(e)
    same_inf = np.isinf(e) & (g == e)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity (masked below)
        err = np.abs(g - e)
    bad = ~(both_nan | same_inf) & ~(err <= atol + rtol * np.abs(e))
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1)), bad.shape) \
            if bad.ndim else ()
        return (f"{int(bad.sum())} of {bad.size} differ beyond rtol {rtol:g} atol {atol:g}; "
                f"at {tuple(map(int, i))}: {g[i]!r} != {e[i]!r}")
    return ""


def _isnan(a: np.ndarray) -> np.ndarray:
    try:
        return np.isnan(a.astype(np.float32))
    except (TypeError, ValueError):
        return np.zeros(a.shape, bool)


def _message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def run_case(case: Case, *, roundtrip: bool = True) -> Result:
    """Import ``case``'s model, execute it on each data set and compare; then export and run on ONNX Runtime."""
    missing = [op for op in case.ops if op not in SUPPORTED_ONNX_OPS]
    if missing:
        return Result(case, "unsupported", "import", f"operators outside the import table: {', '.join(missing)}")
    model = case.model()
    data = case.data_sets()
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    for inputs, expected in data:
        feeds = dict(zip(names, inputs))
        try:
            program = load(model, constants=feeds)
        except AutogradDagError as exc:
            return Result(case, "refused", "import", _message(exc))
        except Exception as exc:  # noqa: BLE001 - any other exception is a defect to report
            return Result(case, "crash", "import", _message(exc))
        args = [feeds[program.nodes[k].name] for k in program.inputs]
        try:
            with np.errstate(all="ignore"):
                got = program(*args)
        except AutogradDagError as exc:
            return Result(case, "refused", "execute", _message(exc))
        except Exception as exc:  # noqa: BLE001
            return Result(case, "crash", "execute", _message(exc))
        got = list(got) if isinstance(got, tuple) else [got]
        for g, e in zip(got, expected):
            if msg := compare(case, g, e):
                return Result(case, "fail", "execute", msg)
        if not roundtrip:
            continue
        try:
            exported = export(program)
            back = run(exported, *args)
        except AutogradDagError as exc:
            return Result(case, "refused", "roundtrip", _message(exc))
        except Exception as exc:  # noqa: BLE001
            return Result(case, "crash", "roundtrip", _message(exc))
        for g, e in zip(back, expected):
            if msg := compare(case, g, e):
                return Result(case, "fail", "roundtrip", msg)
    return Result(case, "pass")


def by_operator(results: list[Result]) -> dict[str, collections.Counter]:
    """Statuses counted per operator; a function-expanded test counts under "<op> (expanded)"."""
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        table[r.case.op_type + (" (expanded)" if r.case.expanded else "")][r.status] += 1
    return dict(table)


def table(results: list[Result]) -> str:
    """A per-operator table (markdown): tests, passed, and each kind of failure."""
    rows = ["| operator | tests | pass | fail | refused | crash | unsupported |", "|---|---|---|---|---|---|---|"]
    per = by_operator(results)
    total: collections.Counter = collections.Counter()
    for op in sorted(per):
        c = per[op]
        total.update(c)
        rows.append(f"| {op} | {sum(c.values())} | {c['pass']} | {c['fail']} | {c['refused']} | {c['crash']} "
                    f"| {c['unsupported']} |")
    rows.append(f"| **all** | {sum(total.values())} | {total['pass']} | {total['fail']} | {total['refused']} "
                f"| {total['crash']} | {total['unsupported']} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    import argparse  # noqa: PLC0415
    parser = argparse.ArgumentParser(prog="python -m autograd_dag.onnx.conformance", description=__doc__.split("\n")[0])
    parser.add_argument("pattern", nargs="?", default="", help="only tests whose name contains this")
    parser.add_argument("--failures", action="store_true", help="list every test that did not pass")
    parser.add_argument("--no-roundtrip", action="store_true", help="import only (skip ONNX Runtime)")
    parser.add_argument("--all", action="store_true", help="also list operators outside the import table")
    args = parser.parse_args(argv)
    results = [run_case(c, roundtrip=not args.no_roundtrip) for c in node_cases() if args.pattern in c.name]
    shown = results if args.all else [r for r in results if r.status != "unsupported"
                                      or r.case.op_type in SUPPORTED_ONNX_OPS]
    print(table(shown))
    if args.failures:
        for r in shown:
            if r.status != "pass":
                print(f"{r.case.name}: {r.status} at {r.stage}: {r.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
