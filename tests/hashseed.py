"""Running a snippet under several hash seeds, for the tests that a result does not depend on
the order of a set."""

from __future__ import annotations

import os
import subprocess
import sys


def outputs_by_seed(code: str, seeds: int = 6) -> set[str]:
    """What ``code`` prints, run by this interpreter under ``PYTHONHASHSEED`` 0 to ``seeds`` - 1
    (from the working directory, so ``tests`` is importable as a path): one output when the
    result does not depend on a set's order."""
    return {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(seeds)
    }
