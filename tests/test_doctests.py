"""Every example in the library's docstrings runs and prints what it says."""

import doctest
import importlib
import pkgutil

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
