"""benchmarks/bench_models.py: its two tables (one core, default threads) and issue 30's goal rows.

Nothing here times anything that is asserted: the smoke run checks that both tables and the
scoreboard are printed (the rows run, their gradients checked against numpy's), the goal rows
are checked on figures written by hand.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_PATH = _ROOT / "benchmarks" / "bench_models.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_models", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(ms, mib=None):
    return {"median_ms": ms, "peak_mib": mib}


def test_goal_rows_are_marked_from_the_figures():
    bench = _bench()
    one_core = {"mlp/float64/numpy": _row(10.0), "mlp/float64/products": _row(10.0),
                "mlp/float64/jit": _row(10.4), "lenet/float64/numpy": _row(10.0), "lenet/float64/jit": _row(10.1),
                "micrograd/float64/numpy": _row(0.3), "micrograd/float64/micrograd": _row(800.0),
                "micrograd/float64/jit": _row(200.0)}
    default = {"mlp/float64/numpy": _row(10.0, 10.0), "mlp/float64/jit": _row(9.0, 12.5),
               "mlp/float64/eager": _row(11.5, 11.0), "mlp/float64/torch": _row(10.0),
               "lenet/float64/numpy": _row(10.0, 1.0), "lenet/float64/jit": _row(9.0, 0.5)}
    lines = bench.goal_lines(one_core, default)
    text = "\n".join(lines)

    def line(*words):
        (found,) = [ln for ln in lines if all(w in ln for w in words)]
        return found
    assert line("mlp", "jit, default threads", "torch").endswith(" met")          # 0.90x <= 1.00
    assert "NOT met" in line("mlp", "eager, default threads", "torch")            # 1.15x > 1.10
    assert "not measured" in line("mlp", "jit, default threads", "jax")           # no jax row
    assert "1.04x products" in line("mlp", "jit, one core")                       # the MLP: its floor
    assert line("mlp", "jit, one core").endswith(" met")                          # <= 1.05
    assert "NOT met" in line("lenet", "jit, one core", "numpy")                   # 1.01x > 1.00
    assert "0.25x micrograd" in line("micrograd", "jit, one core")               # not 667x numpy
    assert line("micrograd", "jit, one core").endswith("(a graph of scalars: against micrograd)")
    assert "NOT met" in line("mlp", "jit, default threads", "memory")             # 1.25x > 1.2
    assert line("mlp", "eager, default threads", "memory").endswith(" met")       # 1.10x
    assert "lenet       float64  eager" not in text                              # no eager row measured


def test_one_run_prints_both_tables_and_the_goals(tmp_path):
    # The quickest run there is (one model, one dtype, one round, no peers, no memory): the two
    # tables come from two processes (the pin is per process), the default-threads rows each from
    # a process of its own; ~7 s.
    out = tmp_path / "both.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(_PATH), "--models", "mlp", "--dtypes", "float32", "--repeat", "1",
                           "--quick", "--no-peers", "--no-memory", "--json", str(out)],
                          capture_output=True, text=True, env=env, cwd=_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.index("ONE CORE") < text.index("DEFAULT THREADS") < text.index("Issue 30's goals")
    assert text.count("MLP 784-512-512-10") == 2
    assert "each row in a process of its own" in text
    assert "mlp         float32  jit, one core           time" in text
    report = json.loads(out.read_text())
    assert report["one_core"]["threads"] == 1 and report["default"]["threads"] == 0
    for table in ("one_core", "default"):
        assert {"numpy", "eager", "jit", "products"} <= {k.split("/")[2] for k in report[table] if k.count("/") == 2}
