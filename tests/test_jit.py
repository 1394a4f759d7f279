"""ad.jit: trace once per signature, then execute the program on numpy."""

import numpy as np
import pytest

import autograd_dag as ad


def loss(params, x, labels):
    logits = x @ params["w"] + params["b"]
    return (ad.logsumexp(logits, axis=-1) - (logits * ad.one_hot(labels, 3)).sum(axis=-1)).mean()


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 3)), "b": np.zeros(3)}
    return params, rng.standard_normal((5, 4)), np.array([0, 2, 1, 1, 0])


def test_jit_of_value_and_grad_matches_the_eager_result(data):
    params, x, labels = data
    fast = ad.jit(ad.value_and_grad(loss))
    value, grads = fast(params, x, labels)
    value_ref, grads_ref = ad.value_and_grad(loss)(params, x, labels)
    np.testing.assert_allclose(value, value_ref, rtol=1e-14)
    np.testing.assert_allclose(grads["w"], grads_ref["w"], rtol=1e-14)
    np.testing.assert_allclose(grads["b"], grads_ref["b"], rtol=1e-14)
    assert isinstance(value, np.ndarray) and set(grads) == {"w", "b"}


def test_jit_traces_once_per_signature_and_follows_new_values(data):
    params, x, labels = data
    fast = ad.jit(ad.grad(loss))
    fast(params, x, labels)
    moved = {"w": params["w"] + 1.0, "b": params["b"] - 0.5}
    np.testing.assert_allclose(fast(moved, x, labels)["w"], ad.grad(loss)(moved, x, labels)["w"], rtol=1e-14)
    assert len(fast.programs) == 1
    fast(params, x[:2], labels[:2])  # a new batch size is a new signature
    assert len(fast.programs) == 2


def test_jit_program_is_an_ordinary_program(data):
    params, x, labels = data
    fast = ad.jit(loss)
    fast(params, x, labels)
    (program, _), = fast.programs.values()
    assert isinstance(program, ad.Program) and "logsumexp" in program.op_counts()


def test_jit_inside_a_transformation_records_through(data):
    params, x, labels = data
    g = ad.grad(lambda w: ad.jit(lambda w: (w * w).sum())(w))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])


def test_a_result_that_is_a_constant_of_the_program_is_the_callers_own_array():
    # The Hessian of a quadratic does not depend on x: under jit it is a constant of the
    # program (and a reshape of one). Handed out as it was, an in-place update of the result
    # (damping h -= λI) changed what every later call returned.
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    hess = ad.jit(ad.hessian(lambda x: x @ A @ x))
    h = hess(np.ones(2))
    h -= 100.0 * np.eye(2)
    np.testing.assert_array_equal(hess(np.ones(2)), A + A.T)
    jac = ad.jit(ad.jacobian(lambda x: x * 2.0))
    jac(np.ones(3))[0, 0] = 99.0
    np.testing.assert_array_equal(jac(np.ones(3)), 2.0 * np.eye(3))
    # A closure's array returned (or reshaped) is not the closure's memory either.
    c = np.arange(6.0)
    both = ad.jit(lambda x: (ad.sum(x), ad.reshape(ad.Tensor(c), (2, 3))))
    both(np.ones(3))[1][0, 0] = 99.0
    np.testing.assert_array_equal(c, np.arange(6.0))


def test_a_python_exponent_gives_the_same_derivatives_under_jit_at_base_zero():
    # jit makes the Python number n an input (a Tensor exponent); its derivative rule gave
    # 0·0⁻¹ = NaN at x = 0 where the static exponent gives d/dx x⁰ = 0 (and d²/dx² x¹ = 0).
    x = np.zeros(2)
    for n, first, second in [(0, 0.0, 0.0), (1, 1.0, 0.0), (2, 0.0, 2.0), (3, 0.0, 0.0)]:
        eager = ad.grad(lambda a: ad.sum(a ** n))(x)
        fast = ad.jit(ad.grad(lambda a, n: ad.sum(a ** n)))(x, n)
        np.testing.assert_array_equal(eager, first)
        np.testing.assert_array_equal(fast, first)
        hess = ad.jit(lambda a, n: ad.hessian(lambda b: ad.sum(b ** n))(a))(x, float(n))
        np.testing.assert_array_equal(hess, second * np.eye(2))


def test_jit_of_a_deeply_nested_argument_neither_crashes_nor_retraces():
    # jit's cache was keyed by the nested treedef: hashing a tuple nested 100,000 deep
    # recurses in C and crashed the interpreter (segmentation fault). Run in a child
    # process so that a crash fails this test instead of the whole run.
    import subprocess
    import sys
    code = """
import numpy as np, autograd_dag as ad
tree = np.array([1.0, 2.0])
for _ in range(100_000):
    tree = [tree]
def f(t):
    while isinstance(t, list):
        t = t[0]
    return ad.sum(t * t)
g = ad.jit(f)
print(float(g(tree)), float(g(tree)), len(g.programs))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["5.0", "5.0", "1"]


def test_structure_key_tells_apart_exactly_the_structures_that_differ():
    from autograd_dag.tree import flatten, structure_key
    trees = [1, (1,), [1], (1, 2), ((1,), 2), (1, (2,)), {"a": 1}, {"b": 1}, {"a": 1, "b": 2},
             {"b": 2, "a": 1}, [(1, 2), {"a": [3]}], [(1, 2), {"a": (3,)}]]
    defs = [flatten(t)[1] for t in trees]
    for i, d in enumerate(defs):
        for j, e in enumerate(defs):
            assert (structure_key(d) == structure_key(e)) == (d == e), (trees[i], trees[j])
