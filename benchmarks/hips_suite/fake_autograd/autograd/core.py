"""``autograd.core.make_vjp`` renamed: (vjp function, value), from autograd_dag.vjp."""

import autograd_dag as _ad


def make_vjp(fun, x):
    out, vjp_fn = _ad.vjp(fun, x)
    return (lambda g: vjp_fn(g)[0]), out
