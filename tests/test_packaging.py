"""What `pip install gpucloud` ships: every package a regular install needs, and its data."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT

PACKAGE = ROOT / "infra" / "gpucloud"


def test_every_folder_of_python_modules_is_a_regular_package():
    folders = {path.parent for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    assert sorted(str(f.relative_to(PACKAGE)) for f in folders if not (f / "__init__.py").exists()) == []


def test_package_data_is_declared_for_the_wheel():
    assert (PACKAGE / "py.typed").exists()
    assert (PACKAGE / "data" / "prices.json").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'gpucloud = ["py.typed", "data/*"]' in pyproject


def test_import_gpucloud_loads_nothing_heavy():
    code = "import sys, gpucloud; print(sorted(m for m in ('pulumi', 'pulumi_aws', 'moto', 'boto3') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
