"""pulumi-aws's service packages, loaded a name at a time in the engine's process, give every name
the object the package's own `__init__` gives it, load only the modules a plan uses, and fall back
to the whole package for anything they cannot place."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpucloud.testing.aws_packages import ServicePackage, service_package


def test_a_plan_loads_the_modules_it_uses_and_every_name_is_the_one_the_whole_package_binds():
    """In a fresh interpreter: plan an example stack, note what it loaded, then resolve every name
    of ec2, s3 and iam through the name-by-name packages and run their real `__init__` over them:
    each name must come out the same object."""
    script = textwrap.dedent(
        """
        import json, sys, types
        import pulumi_aws
        from gpucloud.config import load_stack_file
        from gpucloud.plan.preview import plan_stack
        from gpucloud.testing.aws_packages import ServicePackage, _sources

        plan_stack(load_stack_file("stacks/Pulumi.vision-train.yaml"))
        ec2_loaded = sorted(name for name in sys.modules if name.startswith("pulumi_aws.ec2."))
        mismatched, counted = [], {}
        for service in ("ec2", "s3", "iam"):
            package = getattr(pulumi_aws, service)
            assert isinstance(package, ServicePackage), type(package)
            lazily = {name: getattr(package, name) for name in _sources(package)}
            dir(package)  # runs the package's own __init__ over the same module
            mismatched += [f"{service}.{name}" for name, value in lazily.items() if package.__dict__[name] is not value]
            unplaced = [name for name, value in package.__dict__.items()
                        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name not in lazily]
            counted[service] = [len(lazily), unplaced]
        config = type(pulumi_aws.config).__name__  # its __init__ swaps its own class: left to pulumi
        print(json.dumps({"ec2_loaded": ec2_loaded, "mismatched": mismatched, "counted": counted, "config": config}))
        """
    )
    root = Path(__file__).resolve().parents[2]
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    seen = json.loads(completed.stdout.strip().splitlines()[-1])

    assert seen["mismatched"] == []
    assert seen["config"] != "ServicePackage"
    for service, (placed, unplaced) in seen["counted"].items():
        assert placed > 100 and unplaced == [], service  # every name the real __init__ binds was placed
    assert "pulumi_aws.ec2.launch_template" in seen["ec2_loaded"]
    assert "pulumi_aws.ec2.vpn_connection" not in seen["ec2_loaded"]
    assert len(seen["ec2_loaded"]) < 40  # of ec2's 182 modules (20 for vision-train on 2026-11-27)


@pytest.fixture
def fake_service(tmp_path, monkeypatch) -> Path:
    """A service package as pulumi-aws lays one out: star imports in order, `outputs` as a module."""
    folder = tmp_path / "fakeaws" / "compute"
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("")
    (folder / "__init__.py").write_text(
        "# coding=utf-8\nimport builtins as _builtins\nimport typing\n"
        "from ._enums import *\nfrom .instance import *\nfrom .instance_v2 import *\nfrom .get_thing import *\n"
        "from . import outputs\n"
    )
    (folder / "_enums.py").write_text("__all__ = ['Size']\nSize = 'enum'\n")
    (folder / "instance.py").write_text("__all__ = ['Instance', 'InstanceArgs']\nInstance = 'v1'\nInstanceArgs = 'v1 args'\n")
    (folder / "instance_v2.py").write_text("__all__ = [\n    'InstanceV2',\n    'Instance',\n]\nInstanceV2 = 'v2'\nInstance = 'v2 wins'\n")
    (folder / "outputs.py").write_text("__all__ = ['InstanceState']\nInstanceState = 'state'\n")
    (folder / "unlisted.py").write_text("Hidden = 'hidden'\n")
    (folder / "get_thing.py").write_text("__all__ = ['GetThingResult', 'get_thing']\nGetThingResult = 'result'\ndef get_thing():\n    return 'thing'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield folder
    for name in [name for name in sys.modules if name == "fakeaws" or name.startswith("fakeaws.")]:
        del sys.modules[name]


def test_a_name_comes_from_the_last_module_that_exports_it_and_only_its_module_is_loaded(fake_service):
    package = service_package("fakeaws.compute", fake_service)

    assert isinstance(package, ServicePackage)
    assert package.Instance == "v2 wins"
    assert package.Size == "enum"
    assert package.outputs.InstanceState == "state"
    assert "fakeaws.compute.instance" not in sys.modules
    assert package.InstanceArgs == "v1 args"
    assert "fakeaws.compute.instance" in sys.modules


def test_a_function_named_as_its_module_stays_the_function_once_its_module_is_imported(fake_service):
    package = service_package("fakeaws.compute", fake_service)

    assert package.GetThingResult == "result"  # imports fakeaws.compute.get_thing
    assert package.get_thing() == "thing"
    assert package.unlisted.Hidden == "hidden"  # a submodule, as the whole package binds it
    assert "_gpucloud_whole" not in package.__dict__


def test_a_name_no_module_exports_loads_the_whole_package_and_is_still_missing(fake_service):
    package = service_package("fakeaws.compute", fake_service)

    with pytest.raises(AttributeError, match="has no attribute 'Hidden'"):
        package.Hidden
    assert package.__dict__["Instance"] == "v2 wins"  # the real __init__ ran


def test_a_star_import_and_dir_get_the_whole_package(fake_service):
    service_package("fakeaws.compute", fake_service)
    namespace: dict = {}

    exec("from fakeaws.compute import *", namespace)

    assert {"Instance", "InstanceArgs", "InstanceV2", "Size", "outputs"} <= set(namespace)
    assert namespace["Instance"] == "v2 wins"
    assert "InstanceV2" in dir(sys.modules["fakeaws.compute"])


@pytest.mark.parametrize(("extra", "instance"), [
    ("X = 1", "v2 wins"), ("from .instance import Instance", "v1"), ("if True:\n    pass", "v2 wins")])
def test_an_init_that_does_anything_else_is_run_whole(fake_service, extra, instance):
    init = fake_service / "__init__.py"
    init.write_text(init.read_text() + extra + "\n")
    package = service_package("fakeaws.compute", fake_service)

    assert package.Instance == instance
    assert "fakeaws.compute.instance" in sys.modules  # loaded by the real __init__, not by name


def test_a_module_without_a_literal_all_makes_the_whole_package_load(fake_service):
    (fake_service / "instance.py").write_text("__all__ = ['Instance'] + ['InstanceArgs']\nInstance = 'v1'\nInstanceArgs = 'a'\n")
    package = service_package("fakeaws.compute", fake_service)

    assert package.InstanceV2 == "v2"
    assert "fakeaws.compute.instance" in sys.modules
