"""The examples' --fast modes run, train, and write their pictures."""

import os
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


def test_demo_entry_point_fast(tmp_path):
    out = tmp_path / "demo"
    # Progress bars are asked for but stderr is a pipe: nothing is written to it.
    proc = subprocess.run([sys.executable, "-m", "examples.demo", "--fast", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "seed 0" not in proc.stdout and "The Elements of Differentiable Programming" in proc.stdout
    assert "def f(" in proc.stdout and "def grad_f(" in proc.stdout
    # The sequence-model section: a trained Transformer decodes with greedy and beam search.
    assert "== 5. A sequence model" in proc.stdout and "reverse [2, 7, 1] -> greedy [" in proc.stdout
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
