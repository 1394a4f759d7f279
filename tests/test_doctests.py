"""Every example in the library's docstrings runs and prints what it says."""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import numpy as np

import pytest

import autograd_dag

MODULES = sorted(m.name for m in pkgutil.walk_packages(autograd_dag.__path__, "autograd_dag."))


@pytest.mark.parametrize("name", ["autograd_dag"] + MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=True, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def _inline_examples():
    """Every one-line docstring example ``Example: ``expr`` is ``value``.`` (or ``Example: ``a == b``.``).

    These are not doctests; a user reads and copies them all the same. Fragments that
    name something the sentence only describes (``model``, ``opt``) are skipped below.
    """
    pattern = re.compile(r"Example:\s*``(.+?)``(?:\s+is\s+``(.+?)``)?", re.S)
    for name in ["autograd_dag"] + MODULES:
        module = importlib.import_module(name)
        source = Path(module.__file__).read_text()
        for match in pattern.finditer(source):
            expr, want = (g and " ".join(g.split()) for g in match.groups())
            if "{" in expr:  # an f-string's template
                continue
            if want is not None or "==" in expr:
                yield pytest.param(name, expr, want, id=f"{name}:{expr[:40]}")


# A value as the docstrings write it, made Python.
_SPELLINGS = [("log 2", "log(2)"), ("π", "pi"), ("-inf", "-inf")]


@pytest.mark.parametrize("name, expr, want", list(_inline_examples()))
def test_inline_docstring_examples(name, expr, want, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {**vars(importlib.import_module(name)), "np": np, "ad": autograd_dag, "nn": autograd_dag.nn}
    try:
        got = eval(expr, namespace)
    except NameError:
        pytest.skip("a fragment naming an object the sentence describes")
    if want is None:
        assert got is True or (isinstance(got, np.ndarray) and got.all()), f"{expr} gave {got!r}"
        return
    text = want
    for spelled, python in _SPELLINGS:
        text = text.replace(spelled, python)
    try:
        expected = eval(text, {"log": np.log, "pi": np.pi, "inf": np.inf, "np": np})
    except Exception:
        pytest.skip(f"the value {want!r} is prose")
    if isinstance(expected, (str, set, dict)):
        assert (set(got) if isinstance(expected, set) else got) == expected
        return
    assert np.shape(got) == np.shape(expected), f"{expr} is {got!r}, the docstring says {want}"
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), atol=5e-4,
                               err_msg=f"{expr}: the docstring says {want}")
