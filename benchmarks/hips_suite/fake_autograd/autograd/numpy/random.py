"""``autograd.numpy.random`` is numpy.random."""

import numpy.random as _npr
from numpy.random import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_npr, name)
