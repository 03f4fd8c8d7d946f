"""What `pip install gpucloud` ships: every package a regular install needs, and its data."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from support import ROOT

PACKAGE = ROOT / "infra" / "gpucloud"


def test_every_folder_of_python_modules_is_a_regular_package():
    folders = {path.parent for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    assert sorted(str(f.relative_to(PACKAGE)) for f in folders if not (f / "__init__.py").exists()) == []


def test_package_data_is_declared_for_the_wheel():
    assert (PACKAGE / "py.typed").exists()
    assert (PACKAGE / "data" / "prices.json").exists()
    assert (PACKAGE / "node" / "xid_catalog.json").exists()
    assert (PACKAGE / "node" / "gpucloud-jupyter.service").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'gpucloud = ["py.typed", "data/*", "node/*.json", "node/*.service"]' in pyproject


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


SNIPPETS_WITHOUT_PLAN_EXTRA = {
    # First, before anything imports gpucloud: what a team's own unit tests do with Pulumi's mocks.
    "mocks": """
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
""",
    "components": """
import gpucloud, gpucloud.components, gpucloud.config, gpucloud.lookups.pulumi_aws, gpucloud.program
from gpucloud import GpuInstanceGroup, GpuInstanceGroupArgs, ProjectEnvironment
names = gpucloud.components.__all__
missing = [name for name in names if getattr(gpucloud, name) is not getattr(gpucloud.components, name)]
leaked = sorted(name for name in sys.modules if name.split(".")[0] in {extra!r})
print(len(names), missing, leaked)
""".replace("{extra!r}", repr(PLAN_EXTRA_ONLY)),
    "plan": "from gpucloud.cli import main; sys.exit(main(['plan', '--stack', 'notebooks']))",
}
"""Run one after the other in one interpreter without the plan extra (each of them imports Pulumi and
the components, 2 s a process): each gets its own output, exit status and global names."""

EACH_SNIPPET = """
import contextlib, io, json, traceback
results = {}
for name, code in SNIPPETS.items():
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            exec(compile(code, name, "exec"), {"__name__": "__main__", "sys": sys})
            returncode = 0
        except SystemExit as exit_:
            returncode = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:
            traceback.print_exc()
            returncode = 1
    results[name] = {"returncode": returncode, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def without_plan_extra() -> dict[str, subprocess.CompletedProcess]:
    """Each snippet's outcome, as its own `python -c` without the plan extra would give it."""
    code = WITHOUT_PLAN_EXTRA + f"SNIPPETS = {SNIPPETS_WITHOUT_PLAN_EXTRA!r}\n" + EACH_SNIPPET
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return {name: subprocess.CompletedProcess(name, **outcome) for name, outcome in json.loads(result.stdout).items()}


def test_the_base_install_requires_none_of_the_plan_extra():
    from importlib.metadata import requires

    base = [requirement for requirement in requires("gpucloud") or [] if "extra ==" not in requirement]
    named = {requirement.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower() for requirement in base}
    assert named == {"pulumi", "pulumi-aws", "boto3", "pydantic", "pyyaml", "grafana-foundation-sdk", "pulumiverse-grafana"}


def test_every_component_and_the_program_import_without_the_plan_extra(without_plan_extra):
    result = without_plan_extra["components"]

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(len(importlib.import_module("gpucloud.components").__all__)), "[]", "[]"]


def test_a_component_builds_under_plain_pulumi_mocks_without_the_plan_extra(without_plan_extra):
    """What a team's own unit tests do with Pulumi's mocks, in an environment without moto."""
    result = without_plan_extra["mocks"]

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "arn:aws:kms:us-east-1:123456789012:key/team-key-key"


def test_plan_without_the_extra_says_which_extra_to_install(without_plan_extra):
    result = without_plan_extra["plan"]

    assert result.returncode == 2
    assert "pip install 'gpucloud[plan]'" in result.stderr


VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it, as CI and the release workflow build them (without
    build isolation: the venv's setuptools, no download)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True, capture_output=True, text=True, timeout=120,
    )
    return {"wheel": out / f"gpucloud-{VERSION}-py3-none-any.whl", "sdist": out / f"gpucloud-{VERSION}.tar.gz"}


def test_wheel_and_sdist_pass_twine_check(distributions):
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, distributions.values())],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2


def test_the_wheel_carries_the_data_and_the_sdist_the_sources(distributions):
    wheel = set(zipfile.ZipFile(distributions["wheel"]).namelist())
    for data in ("gpucloud/py.typed", "gpucloud/data/prices.json", "gpucloud/data/stack-config.schema.json",
                 "gpucloud/node/xid_catalog.json", "gpucloud/cli/schema.py", "gpucloud/component_provider.py"):
        assert data in wheel
    assert not [name for name in wheel if "__pycache__" in name or name.startswith("tests/")]
    sdist = set(tarfile.open(distributions["sdist"]).getnames())
    assert {f"gpucloud-{VERSION}/pyproject.toml", f"gpucloud-{VERSION}/README.md"} <= sdist


SDIST_TOP_LEVEL = {"PKG-INFO", "README.md", "pyproject.toml", "setup.cfg", "MANIFEST.in", "infra"}
"""The sdist's own files and the package's sources; nothing else of the repository (tests import
support modules and fixtures the sdist does not carry)."""


def test_the_sdist_carries_the_package_and_nothing_else_of_the_repository(distributions):
    members = tarfile.open(distributions["sdist"]).getnames()
    inside = [Path(name).relative_to(f"gpucloud-{VERSION}") for name in members if name != f"gpucloud-{VERSION}"]

    assert sorted(str(path) for path in inside if path.parts[0] not in SDIST_TOP_LEVEL) == []
    stray = [path for path in inside if path.parts[0] == "infra" and len(path.parts) > 1
             and path.parts[1] not in ("gpucloud", "gpucloud.egg-info")]
    assert stray == []


INSTALLED_CHECK = WITHOUT_PLAN_EXTRA + """
import importlib.metadata, json, pathlib
import gpucloud, gpucloud.components, gpucloud.program
from gpucloud.config.schema import packaged_schema_text
names = gpucloud.components.__all__
classes = [getattr(gpucloud, name) for name in names]
print(json.dumps({
    "file": gpucloud.__file__,
    "version": gpucloud.__version__,
    "components": len(classes),
    "schema": json.loads(packaged_schema_text())["title"],
    "extras": sorted(set(importlib.metadata.metadata("gpucloud").get_all("Provides-Extra"))),
}))
"""


def test_the_built_wheel_installs_in_a_fresh_venv_and_imports_every_component(distributions, tmp_path):
    """The wheel alone, no test extras: a fresh venv gets the wheel without dependencies (no index, no
    network), and sees this venv's site-packages only for the base dependencies (a path line, so
    neither the editable install's finder nor the source tree is on it); the plan extra stays blocked."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    # Without PYTHONPATH: pip would take the source tree's gpucloud.egg-info on it for an installed
    # gpucloud and install nothing (a benchmark run with PYTHONPATH=infra failed here).
    installing = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index",
         "--no-compile", str(distributions["wheel"])],
        check=True, capture_output=True, text=True, timeout=120, env=installing,
    )
    site_packages = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    (site_packages / "base-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    result = subprocess.run([str(python), "-c", INSTALLED_CHECK], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path, env=environment)

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert Path(report["file"]).is_relative_to(site_packages)
    assert report["version"] == VERSION
    assert report["components"] == len(importlib.import_module("gpucloud.components").__all__)
    assert report["schema"].startswith("gpu-cloud stack file")
    assert report["extras"] == ["plan", "policy", "test"]
    version = subprocess.run([str(venv / "bin" / "gpucloud"), "--version"], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path, env=environment)
    assert version.stdout.strip() == f"gpucloud {VERSION}", version.stderr


def test_gpucloud_version_comes_from_the_package_metadata(capsys):
    import gpucloud
    from gpucloud.cli import main

    assert gpucloud.__version__ == VERSION
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpucloud {VERSION}"


def test_the_changelog_has_a_section_for_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "Keep a Changelog" in changelog
    assert f"## [{VERSION}]" in changelog


PLAN_PATH = ("gpucloud.plan", "gpucloud.testing", "gpucloud.policy", "gpucloud.pricing", "gpucloud.cli", "gpucloud.program")
"""What `gpucloud plan` runs: the engine, the policies, the prices, the command; every module of each."""

PLAN_PATH_IMPORTS = """
import importlib, json, pkgutil, sys
before = set(sys.modules)
for root in {roots!r}:
    module = importlib.import_module(root)
    for info in pkgutil.walk_packages(getattr(module, "__path__", []), root + "."):
        # the CrossGuard wrapper needs pulumi-policy, which the policy pack's requirements add
        if not info.name.endswith((".__main__", ".crossguard")):
            importlib.import_module(info.name)
print(json.dumps(sorted({{name.split(".")[0] for name in set(sys.modules) - before}})))
"""

OPTIONAL_PROBES = {"backports"}
"""Imported by a try that does without it: urllib3 tries backports.zstd, and the attempt loads the
`backports` namespace package of whatever else is installed."""


def _installed_closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, with their dependencies' (extras and markers honoured)."""
    from importlib.metadata import PackageNotFoundError, requires
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras)
        if (name, *extras) in seen:
            continue
        seen.add((name, *extras))
        try:
            declared = requires(name) or []
        except PackageNotFoundError:
            continue
        for text in declared:
            for wanted in ["", *extras]:
                pending.append((Requirement(text), wanted))
    return {entry[0] for entry in seen}


def test_the_plan_extra_installs_everything_the_plan_path_imports():
    """The docs' lighter install (`gpucloud[plan]`, without the test extra) is enough to plan."""
    from importlib.metadata import packages_distributions
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = _installed_closure(project["dependencies"] + [
        requirement for requirement in project["optional-dependencies"]["plan"] if not requirement.startswith("gpucloud[")
    ] + project["optional-dependencies"]["policy"])
    result = subprocess.run([sys.executable, "-c", PLAN_PATH_IMPORTS.format(roots=PLAN_PATH)],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    providers = packages_distributions()

    imported = {name: {canonicalize_name(dist) for dist in providers[name]}
                for name in json.loads(result.stdout) if name in providers and name not in {"gpucloud", *OPTIONAL_PROBES}}
    assert sorted(name for name, dists in imported.items() if not dists & installed) == []
    assert {"moto", "rich", "pulumi_aws"} <= set(imported)
