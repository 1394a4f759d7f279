"""Small helpers shared by the test files."""

import inspect
import sys


def line_of(marker: str, module: str) -> int:
    """Line number, in the test module named ``module``, of its one source line containing ``marker``.

    Tests use it to check that errors and listings name the user's line.
    """
    lines = inspect.getsource(sys.modules[module]).splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if marker in text and "line_of(" not in text]
    assert len(hits) == 1, hits
    return hits[0]
