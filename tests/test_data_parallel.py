"""examples.data_parallel_lm: the TransformerLM's training step, lowered to JAX, sharded over 8 host devices.

The example's --fast --compare path runs in a subprocess (JAX fixes its device count when it is first
imported, and this process may have imported it already), with 8 simulated CPU devices: its loss curve
must equal our numpy training's (same init, batches, Adam) within the example's stated tolerance, and
the batch must really be split over the 8 devices of the mesh. The several-hosts path runs as two
processes of 4 devices each joined by ``jax.distributed`` over localhost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path, *flags):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "examples.data_parallel_lm", "--fast", "--compare", "--no-progress",
                           "--out", str(tmp_path), *flags], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads((tmp_path / "data_parallel_lm.json").read_text()), proc.stdout


def test_sharded_training_gives_our_numpy_loss_curve(tmp_path):
    from examples.data_parallel_lm import TOLERANCE
    result, stdout = _run(tmp_path)
    assert result["dtype"] == "float64"
    assert result["tolerance"] == TOLERANCE[next(k for k in TOLERANCE if str(k) == "float64")]
    assert len(result["losses"]) == len(result["numpy_losses"]) == result["steps"] >= 3
    worst = max(abs(a - b) for a, b in zip(result["losses"], result["numpy_losses"]))
    assert worst <= result["tolerance"], worst
    assert result["losses"][-1] < result["losses"][0]  # it trains
    # Really data-parallel: the batch spans the 8 devices, each holding batch/8 rows; parameters replicated.
    assert result["devices"] == 8 and result["batch_devices"] == 8
    assert result["batch_shard_shapes"] == [[result["batch"] // 8, result["length"]]]
    assert result["sharded_params"] == [] and set(result["param_devices"].values()) == {8}
    assert "agree" in stdout and "loss curve: 0: " in stdout


def test_sharded_parameters_give_the_same_curve(tmp_path):
    result, _ = _run(tmp_path, "--shard-params")
    assert result["sharded_params"], "no parameter was sharded"
    worst = max(abs(a - b) for a, b in zip(result["losses"], result["numpy_losses"]))
    assert worst <= result["tolerance"], worst


def test_two_processes_of_four_devices_train_as_one_mesh(tmp_path):
    """The several-hosts path on one machine: two processes (jax.distributed over localhost), each feeding its rows."""
    import socket
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "examples.data_parallel_lm", "--fast", "--compare",
                               "--no-progress", "--out", str(tmp_path / str(i)), "--coordinator", f"localhost:{port}",
                               "--num-processes", "2", "--process-id", str(i)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]
    for i in range(2):
        result = json.loads((tmp_path / str(i) / "data_parallel_lm.json").read_text())
        assert result["devices"] == 8 and result["batch_devices"] == 8
        assert result["batch_shard_shapes"] == [[result["batch"] // 8, result["length"]]]  # its 4 devices' rows
        worst = max(abs(a - b) for a, b in zip(result["losses"], result["numpy_losses"]))
        assert worst <= result["tolerance"], worst
