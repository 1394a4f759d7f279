"""Defect hunt 4: the common mistakes of backward() and ad.grad name the user's line, as every other error does."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import autograd_dag as ad


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def test_backward_and_grad_mistakes_name_the_users_line():
    a = ad.Tensor(np.ones((2, 3)), requires_grad=True)
    mistakes = []
    with pytest.raises(ad.AutogradDagError, match=r"scalar output; this output has shape \(2, 3\)") as info:
        line = _line(); (a * 2).backward()  # noqa: E702  (the mistake and its line number together)
    mistakes.append((info, line))
    with pytest.raises(ad.AutogradDagError, match="does not require a gradient") as info:
        line = _line(); ad.Tensor(1.0).backward()  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.AutogradDagError, match=r"grad has shape \(3,\), expected \(2, 3\)") as info:
        line = _line(); (a * 2).backward(np.ones(3))  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.AutogradDagError, match=r"scalar \(one element\); got shape \(3,\)") as info:
        line = _line(); ad.grad(lambda x: x * 2)(np.ones(3))  # noqa: E702
    mistakes.append((info, line))
    with pytest.raises(ad.AutogradDagError, match="must return a Tensor computed from its inputs; got float") as info:
        line = _line(); ad.grad(lambda x: 3.0)(np.ones(3))  # noqa: E702
    mistakes.append((info, line))
    assert len(mistakes) == 5
    for info, line in mistakes:
        assert str(info.value).endswith(f"(at {__file__}:{line})"), str(info.value)
