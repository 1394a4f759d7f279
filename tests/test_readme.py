"""The README's quick start runs as written (its Python blocks, in order, in one namespace)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_the_two_setup_commands_only():
    text = README.read_text()
    setup = text.split("## Set-up", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", setup, flags=re.S)
    assert commands == ["make demo\nmake test\n"]


def test_quick_start_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "quickstart"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"README.md block {i + 1}", "exec"), namespace)
        except Exception as exc:  # name the block that broke
            pytest.fail(f"README block {i + 1} failed: {type(exc).__name__}: {exc}\n{block}")
    assert (tmp_path / "out" / "f.svg").exists() and (tmp_path / "out" / "grad_f.png").exists()


def test_quick_start_prints_the_program_it_shows(tmp_path, capsys):
    # The listing under print(program) named lines 9 and 10 of quickstart.py; saved as
    # quickstart.py, the block's operations are on lines 5 and 6.
    block = python_blocks(README.read_text())[0]
    shown = block.split("print(program)", 1)[1].split("\ny =", 1)[0]
    expected = [line[2:] for line in shown.strip().splitlines() if line.startswith("# ")]
    path = tmp_path / "quickstart.py"
    path.write_text(block)
    exec(compile(block, str(path), "exec"), {"__name__": "quickstart"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[:len(expected)] == expected


def test_the_readmes_common_subexpression_example_counts_the_nodes_it_names():
    import numpy as np

    import autograd_dag as ad
    text = " ".join(README.read_text().split())
    stated = re.search(r"e\.g\. (\d+) → (\d+) nodes for the gradient of `sum\(tanh\(x\)·tanh\(x\) \+ "
                       r"sin\(x\)·cos\(x\)\)`", text)
    assert stated, "README.md no longer gives the common-subexpression example"
    gradient = ad.trace(ad.grad(lambda x: ad.sum(ad.tanh(x) * ad.tanh(x) + ad.sin(x) * ad.cos(x))), np.ones(3))
    assert (len(gradient), len(gradient.without_common_subexpressions())) == tuple(map(int, stated.groups()))


def test_the_interop_coverage_table_is_current():
    # The README's table of what ad.jax.lower, ad.from_jax and ad.from_torch cover is written by
    # scripts/interop_coverage.py from the rule tables themselves (none of them needs jax or torch).
    import importlib.util  # noqa: PLC0415
    spec = importlib.util.spec_from_file_location("interop_coverage", README.parent / "scripts" / "interop_coverage.py")
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    assert coverage.block() in README.read_text(), \
        "README's interop coverage table is stale: python scripts/interop_coverage.py --write"
