"""The examples' --fast modes run, train, and write their pictures."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")
pytest.importorskip("tqdm")

from examples import lenet_digits, resnet_digits, two_moons  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 5000


def test_two_moons_fast(tmp_path):
    result = two_moons.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert is_png(result["picture"])
    res = result["results"]
    assert res["MLP 2-32-32-2 (tanh)"]["train_acc"] > 0.9
    assert res["MLP 2-32-32-2 (tanh)"]["train_acc"] > res["logistic regression"]["train_acc"]
    losses = res["logistic regression"]["loss"]
    assert losses[-1] < losses[0]


def test_lenet_digits_fast_learns_and_saves(tmp_path):
    result = lenet_digits.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert all(is_png(p) for p in result["pictures"])
    history = result["history"]
    assert history["loss"][-1] < history["loss"][0]
    assert result["test_accuracy"] > 0.4  # far above chance (0.1) after three short epochs
    model = lenet_digits.build_model().load(result["weights"])
    assert model.num_parameters() == result["model"].num_parameters()


@pytest.mark.parametrize("norm", ["batch", "layer"])
def test_resnet_digits_fast(tmp_path, norm):
    result = resnet_digits.run(fast=True, out=str(tmp_path), norm=norm, blocks=2, show_progress=False,
                               verbose=False)
    assert is_png(result["picture"])
    assert result["test_accuracy"] > 0.6


def test_demo_entry_point_fast(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "examples.demo", "--fast", "--no-progress", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "def f(" in proc.stdout and "def grad_f(" in proc.stdout
    assert proc.stdout.rstrip().endswith(f"Output folder: {out}")
    assert is_png(out / "lenet_digits_curves.png")


def test_word_vectors_fast(tmp_path):
    from examples import word_vectors
    result = word_vectors.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert all(is_png(p) for p in result["pictures"])
    for losses in result["losses"].values():
        assert losses[-1] < losses[0]
    sgns, glove = result["models"].values()
    # Even a two-epoch run on the reference topics learns that true and false go together.
    assert "false" in [w for w, _ in glove.most_similar("true", 5)]
    assert "list" in result["table"] and result["table"].count("\n") >= 5
