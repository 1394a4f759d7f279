from dataclasses import dataclass
from typing import Callable
import numpy as np

@dataclass
class Case:
    prim: str                     # registered primitive name this case exercises
    fn: Callable                  # function of Tensors/arrays calling the public op
    make_args: Callable[[np.random.Generator], tuple]   # float64 args, away from kinks/ties
    ref: Callable | None = None   # independent numpy computation of the value (the seed's formula)
    wrt: tuple[int, ...] | None = None   # differentiable argument positions (default: all float args)
    id: str = ""                  # short label for pytest ids
