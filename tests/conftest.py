"""Suite-wide settings.

Hypothesis draws new examples on every run, so a latent defect shows up in some runs and not
others (bool ** 2.0's dtype was found that way, in one run of many). Under CI (``CI`` set, as
``.ci/run`` is run) the draws are derandomized: the same examples every run, so a red CI names
a change, not a lucky draw. Developers' runs keep exploring new examples.
"""

import os

import pytest
from hypothesis import settings

# XLA's compile of each jitted function is most of the JAX tests' time (tests/test_jax_lowering.py
# compiles ~1,400 small programs, one per case; compiling was ~60 % of a case's time). LLVM's -O0
# instead of -O2 makes a small program's compile ~30 % cheaper (that file 77 -> 62 s on 2 workers).
# XLA's own HLO passes still run; only LLVM's last-bit choices (e.g. fused multiply-adds) change:
# measured 1 ulp on an elementwise sin·cos + sqrt, and on a 64x33 gradient of sum(tanh(a @ b)²)
# a largest difference of 2e-16 (float64) and 1.5e-7 (float32) of the gradient's largest entry,
# inside the tolerances these tests state for comparing two implementations. Set before any JAX
# import (XLA reads the flags when its CPU backend starts); a level the user set is kept.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def jax_x64():
    """Float64 in JAX for comparisons with our float64 results; the previous setting is restored after.

    Used by the files comparing with JAX (``pytestmark = pytest.mark.usefixtures("jax_x64")``);
    skipped where JAX is not installed.
    """
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)
