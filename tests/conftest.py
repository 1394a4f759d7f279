"""Suite-wide settings.

Hypothesis draws new examples on every run, so a latent defect shows up in some runs and not
others (bool ** 2.0's dtype was found that way, in one run of many). Under CI (``CI`` set, as
``.ci/run`` is run) the draws are derandomized: the same examples every run, so a red CI names
a change, not a lucky draw. Developers' runs keep exploring new examples.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "default")
