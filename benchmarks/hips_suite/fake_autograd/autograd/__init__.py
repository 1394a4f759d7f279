"""A stand-in for HIPS autograd that only renames: each name maps to autograd_dag's counterpart.

Used by benchmarks/hips_suite/run.py to run HIPS autograd's own tests against
autograd_dag. ``autograd.numpy`` is numpy itself (its functions dispatch to
autograd_dag's rules on Tensors); ``grad``'s ``argnum`` is our ``argnums``.
"""

import builtins

import autograd_dag as _ad

from . import core, numpy, test_util, wrap_util  # noqa: F401

tuple = builtins.tuple  # noqa: A001 - HIPS's differentiable containers are plain ones here
list = builtins.list    # noqa: A001
dict = builtins.dict    # noqa: A001


def grad(fun, argnum=0):
    return _ad.grad(fun, argnums=argnum)


def value_and_grad(fun, argnum=0):
    return _ad.value_and_grad(fun, argnums=argnum)


def jacobian(fun, argnum=0):
    return _ad.jacobian(fun, argnums=argnum)


def hessian(fun, argnum=0):
    return _ad.hessian(fun, argnums=argnum)
