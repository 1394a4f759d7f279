"""benchmarks/bench_gradcheck.py --fast: ours catches every wrong rule of the comparison, with no false alarm."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gradcheck  # noqa: E402


def test_fast_mode_catches_every_wrong_rule_without_false_alarm(capsys):
    rows = bench_gradcheck.main(["--fast"])["ours (ad.check_grads)"]
    assert len(rows) == len(bench_gradcheck.RULES)
    assert all(caught == wrong for _, wrong, caught, _, _ in rows)
    assert "| ours (ad.check_grads) | 3 (jacobian, kink, hessian) | 0 (-) |" in capsys.readouterr().out
