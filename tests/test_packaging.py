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
    assert (PACKAGE / "node" / "xid_catalog.json").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'gpucloud = ["py.typed", "data/*", "node/*.json"]' in pyproject


def test_import_gpucloud_loads_nothing_heavy():
    code = "import sys, gpucloud; print(sorted(m for m in ('pulumi', 'pulumi_aws', 'moto', 'boto3') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


PLAN_EXTRA_ONLY = ("moto", "parliament", "rich", "pulumi_policy")
"""What `gpucloud[plan]` (and the test extra) brings, which `pulumi up` of a team's program must not need."""

WITHOUT_PLAN_EXTRA = f"""
import importlib.abc, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {PLAN_EXTRA_ONLY!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed without gpucloud[plan])")
        return None

sys.meta_path.insert(0, Absent())
"""


def _run_without_plan_extra(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PLAN_EXTRA + code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_the_base_install_requires_none_of_the_plan_extra():
    from importlib.metadata import requires

    base = [requirement for requirement in requires("gpucloud") or [] if "extra ==" not in requirement]
    named = {requirement.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower() for requirement in base}
    assert named == {"pulumi", "pulumi-aws", "boto3", "pydantic", "pyyaml", "grafana-foundation-sdk", "pulumiverse-grafana"}


def test_every_component_and_the_program_import_without_the_plan_extra():
    code = """
import gpucloud, gpucloud.components, gpucloud.config, gpucloud.lookups.pulumi_aws, gpucloud.program
from gpucloud import GpuInstanceGroup, GpuInstanceGroupArgs, ProjectEnvironment
names = gpucloud.components.__all__
missing = [name for name in names if getattr(gpucloud, name) is not getattr(gpucloud.components, name)]
leaked = sorted(name for name in sys.modules if name.split(".")[0] in {extra!r})
print(len(names), missing, leaked)
""".replace("{extra!r}", repr(PLAN_EXTRA_ONLY))
    result = _run_without_plan_extra(code)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["28", "[]", "[]"]


def test_a_component_builds_under_plain_pulumi_mocks_without_the_plan_extra():
    """What a team's own unit tests do with Pulumi's mocks, in an environment without moto."""
    code = """
import pulumi

class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", dict(args.inputs, arn=f"arn:aws:kms:us-east-1:123456789012:key/{args.name}")

    def call(self, args):
        return {}

pulumi.runtime.set_mocks(Mocks(), project="team", stack="dev", preview=False)
from gpucloud import EncryptionKey, EncryptionKeyArgs

key = EncryptionKey("team-key", EncryptionKeyArgs(project="team", account_id="123456789012", region="us-east-1", user_role_names=[]))
print(pulumi.runtime.sync_await._sync_await(key.key_arn.future()))
"""
    result = _run_without_plan_extra(code)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "arn:aws:kms:us-east-1:123456789012:key/team-key-key"


def test_plan_without_the_extra_says_which_extra_to_install():
    code = "from gpucloud.cli import main; sys.exit(main(['plan', '--stack', 'notebooks']))"
    result = _run_without_plan_extra(code)

    assert result.returncode == 2
    assert "pip install 'gpucloud[plan]'" in result.stderr
