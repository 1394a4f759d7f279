"""``autograd.numpy`` is numpy: on Tensors its functions dispatch to autograd_dag's rules."""

import importlib

import numpy as _np
from numpy import *  # noqa: F401,F403

# ``from numpy import *`` bound numpy's own linalg and random; these are the renamed ones.
linalg = importlib.import_module(__name__ + ".linalg")
random = importlib.import_module(__name__ + ".random")


def __getattr__(name):
    return getattr(_np, name)
