"""The examples' --fast modes run, train, and write their pictures."""

import os
import pkgutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")
pytest.importorskip("tqdm")

from examples import lenet_digits, resnet_digits, rnn_pooling, seq2seq_digits, two_moons  # noqa: E402

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


def _example_names():
    """Every runnable example module (examples/<name>.py, not the private helpers)."""
    import examples
    return sorted(m.name for m in pkgutil.iter_modules(examples.__path__) if not m.name.startswith("_"))


def _close_stdin():
    os.close(0)


def run_logged(module, args, folder, timeout=300):
    """``python -m module args`` as CI and a user's log run it: stdout and stderr to files, stdin closed.

    Returns (return code, stdout text, stderr text).
    """
    stdout, stderr = folder / "stdout.log", folder / "stderr.log"
    with open(stdout, "w") as out, open(stderr, "w") as err:
        proc = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, stdin=None, stdout=out,
                              stderr=err, preexec_fn=_close_stdin, timeout=timeout)
    return proc.returncode, stdout.read_text(), stderr.read_text()


# What each fast run's log must say (beyond a clean exit): its summary line.
LOGGED_SUMMARY = {
    "bert": "total ",
    "char_transformer": "held-out cross-entropy (nats/char): TransformerLM",
    "data_parallel_lm": "data-parallel loss curve over ",
    "demo": "Output folder: ",
    "gradient_flow": "gradient norm at the first block / at the last: plain ",
    "lenet_digits": "test accuracy ",
    "named_seed000": "training the named Transformer: loss ",
    "onnx_digits": "predictions agree on ",
    "resnet_digits": "test accuracy ",
    "rnn_pooling": "| max |",
    "seq2seq_digits": "greedy exact match",
    "two_moons": "decision boundaries: ",
    "word_vectors": "skip-gram",
}


# Examples that need an optional extra: skipped where it is not installed.
NEEDS = {"data_parallel_lm": "jax"}


def test_every_example_has_a_logged_fast_run_check():
    assert sorted(LOGGED_SUMMARY) == _example_names()


@pytest.mark.parametrize("name", _example_names())
def test_fast_mode_runs_with_output_logged_to_files(tmp_path, name):
    """Progress bars are asked for (the default) but stderr is a file: the run neither fails nor writes bars."""
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    out = tmp_path / "out"
    code, stdout, stderr = run_logged(f"examples.{name}", ["--fast", "--out", str(out)], tmp_path)
    assert code == 0, stderr[-3000:]
    assert stderr == ""
    assert LOGGED_SUMMARY[name] in stdout, stdout[-3000:]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and all(p.stat().st_size > 0 for p in written), written
    if name == "demo":
        assert "seed 0" not in stdout and "The Elements of Differentiable Programming" in stdout
        assert "def f(" in stdout and "def grad_f(" in stdout
        # The sequence-model section: a trained Transformer decodes with greedy and beam search.
        assert "== 5. A sequence model" in stdout and "reverse [2, 7, 1] -> greedy [" in stdout
        assert stdout.rstrip().endswith(f"Output folder: {out}")
        assert is_png(out / "lenet_digits_curves.png")
        # The gradient circuit's picture says what it is (it was drawn as an "arithmetic circuit" titled f).
        assert "gradient circuit (f and its partial derivatives)" in (out / "circuit_grad.svg").read_text()


@pytest.mark.parametrize("enabled", [True, False])
def test_progress_off_a_terminal_still_supports_what_callers_use(monkeypatch, enabled):
    """Off a terminal (a log, a pipe) the bar draws nothing but still iterates, takes postfixes and closes."""
    import io
    from examples import _common as C
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = C.progress(range(4), "steps", enabled, total=4)
    seen = []
    for i in bar:
        seen.append(i)
        bar.set_postfix(loss=f"{i:.3f}")
        bar.set_description("steps")
    bar.update(0)
    bar.close()
    assert seen == [0, 1, 2, 3]
    assert err.getvalue() == ""


def test_gradient_flow_fast_shows_the_gradient_vanishing_through_the_plain_mlp_only(tmp_path):
    from examples import gradient_flow
    result = gradient_flow.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert len(result["pictures"]) == 2 and all(is_png(p) for p in result["pictures"])
    plain, residual = result["results"]["plain"]["blocks"], result["results"]["residual"]["blocks"]
    assert len(plain) == len(residual) == 12
    # Sigmoid's slope is at most 1/4: through 11 plain blocks the norm falls by far more than 1e3;
    # the skip connections carry it back to the first residual block nearly whole.
    assert plain[0] < 1e-3 * plain[-1]
    assert residual[0] > 0.3 * residual[-1]


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


def test_char_transformer_fast_beats_unigram_and_samples(tmp_path):
    from examples import char_transformer
    result = char_transformer.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert is_png(result["picture"])
    assert result["heldout_loss"] < result["baselines"]["unigram"]
    assert result["baselines"]["bigram"] < result["baselines"]["unigram"]
    assert np.mean(result["losses"][-10:]) < np.mean(result["losses"][:10])
    assert result["sample"].startswith("The ") and len(result["sample"]) == 64
    model = result["model"]
    loaded = type(model)(len(result["vocab"]), **{k: result["config"][k] for k in ("d_model", "heads", "hidden",
                                                                                   "layers")},
                             dtype=model.E.dtype)
    loaded.load(result["weights"])
    ids = result["vocab"].encode("The value")
    np.testing.assert_allclose(loaded.logits(ids).value, model.logits(ids).value)


def test_rnn_pooling_fast_compares_three_poolings(tmp_path):
    result = rnn_pooling.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert is_png(result["picture"])
    assert set(result["test_accuracy"]) == {"last", "mean", "max"}
    assert all(acc > 0.4 for acc in result["test_accuracy"].values())  # chance is 0.1
    assert all(h["loss"][-1] < 0.75 * h["loss"][0] for h in result["histories"].values())
    assert "| last |" in result["table"] and "| max |" in result["table"]


def test_seq2seq_digits_fast_rnn_and_transformer_learn_and_decode_both_ways(tmp_path):
    result = seq2seq_digits.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert is_png(result["picture"])
    assert set(result["results"]) == {"rnn", "transformer"}
    for kind, per_task in result["results"].items():
        for task in ("reverse", "sort"):
            loss = per_task[task]["history"]["loss"]
            assert np.mean(loss[-20:]) < 0.5 * np.mean(loss[:20]), (kind, task)
        scores = per_task["sort"]["scores"]
        assert scores["greedy"] > 0.6 and scores["beam"] > 0.6, kind  # chance is far below 1 %
    table = result["table"]
    assert "greedy exact match" in table and "| RNN (GRUCell" in table and "| Transformer (" in table


def test_seq2seq_digits_decodes_through_the_shared_decoding_functions(monkeypatch):
    """Both models are decoded by ad.nn.decoding.greedy / beam_search over start_state / step."""
    calls = []
    for name in ("greedy", "beam_search"):
        fn = getattr(seq2seq_digits.decoding, name)
        monkeypatch.setattr(seq2seq_digits.decoding, name,
                            lambda *a, _fn=fn, _name=name, **k: calls.append((_name, k["bos"])) or _fn(*a, **k))
    seq = np.array([3, 1, 2])
    for kind in seq2seq_digits.MODELS:
        model = seq2seq_digits.build_model(kind, fast=True)
        for method in ("greedy", "beam"):
            out = seq2seq_digits.decode(model, seq, method, max_len=4, width=2)
            assert len(out) <= 4 and all(0 <= t < 10 for t in out)
    assert [c[0] for c in calls] == ["greedy", "beam_search"] * 2
    assert calls[0][1] == 11 and calls[2][1] == seq2seq_digits.BOS


def test_bert_fast_pretrains_and_fine_tunes(tmp_path):
    from examples import bert
    result = bert.run(fast=True, out=str(tmp_path), show_progress=False, verbose=False)
    assert all(is_png(p) for p in result["pictures"])
    history = result["history"]
    assert np.mean(history["mlm"][-10:]) < np.mean(history["mlm"][:10])
    # Held out, even sixty steps take the MLM loss from near log(vocab) to near the unigram model's.
    assert result["heldout"]["mlm_loss"] < result["before"]["mlm_loss"] - 0.5
    assert result["heldout"]["mlm_acc"] >= result["before"]["mlm_acc"]
    assert 0.0 < result["baseline"]["mlm_acc"] < 0.2 and result["baseline"]["word"] == "the"
    assert 0.0 <= result["heldout"]["nsp_acc"] <= 1.0
    assert set(result["finetune"]) == {"pretrained BERT, fine-tuned", "same network from scratch"}
    assert all(len(accs) == result["config"]["finetune_epochs"] + 1 for accs in result["finetune"].values())
