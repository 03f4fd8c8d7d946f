"""The agent bundle: what it holds, that it is the same bytes wherever `pulumi up` runs, that it
runs on the images' Pythons without site-packages, and that `boot` installs and starts it."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from gpucloud.node import boot, tuning
from gpucloud.node.commands import run_command
from gpucloud.userdata import bundle, layout, scripts
from node_fakes import fixture_text

INFRA = Path(bundle.__file__).resolve().parents[2]
AGENT_DIR = INFRA / "gpucloud" / "node"


def find_python(name: str) -> str | None:
    """On PATH, or one that pyenv installed; skips the test when neither runs."""
    candidates = [shutil.which(name), *map(str, sorted(Path.home().glob(f".pyenv/versions/*/bin/{name}")))]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    pytest.skip(f"{name} is not installed")


def unpacked(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    zipfile.ZipFile(io.BytesIO(bundle.build_agent_bundle().data)).extractall(lib)
    return lib


def test_bundle_is_content_addressed_and_rebuilt_byte_for_byte():
    built = bundle.build_agent_bundle()
    bundle.build_agent_bundle.cache_clear()

    again = bundle.build_agent_bundle()

    assert again.data == built.data and again.sha256 == hashlib.sha256(built.data).hexdigest()
    assert again.key == f"agent/gpucloud-node-{again.sha256}.zip"


def test_bundle_holds_the_agent_package_and_the_boot_files_and_nothing_else():
    names = zipfile.ZipFile(io.BytesIO(bundle.build_agent_bundle().data)).namelist()
    agent = sorted(f"gpucloud/node/{path.name}" for path in AGENT_DIR.iterdir() if path.suffix in (".py", ".json"))
    boot_files = sorted(item["member"] for item in bundle.boot_manifest()["files"])

    assert sorted(names) == sorted(["gpucloud/__init__.py", *agent, *boot_files, layout.BOOT_MANIFEST_MEMBER])
    assert "gpucloud/node/xid_catalog.json" in names and not any("__pycache__" in name for name in names)


def test_members_are_stored_so_the_hash_does_not_depend_on_the_deployers_zlib():
    archive = zipfile.ZipFile(io.BytesIO(bundle.build_agent_bundle().data))

    assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}
    assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


@pytest.mark.parametrize("python", ["python3.12", "python3.13"])
def test_every_python_that_may_run_pulumi_up_builds_the_same_bytes(python):
    interpreter = find_python(python)
    # gpucloud.userdata's __init__ imports the renderer (PyYAML); the bundle needs only its siblings.
    program = (
        "import sys, types\n"
        "package = types.ModuleType('gpucloud.userdata'); package.__path__ = [sys.argv[1]]\n"
        "sys.modules['gpucloud.userdata'] = package\n"
        "from gpucloud.userdata.bundle import build_agent_bundle\n"
        "print(build_agent_bundle().sha256)\n"
    )
    result = subprocess.run(
        [interpreter, "-I", "-c", f"import sys; sys.path.insert(0, {str(INFRA)!r})\n" + program,
         str(INFRA / "gpucloud" / "userdata")],
        capture_output=True, text=True, timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == bundle.build_agent_bundle().sha256


def test_every_module_the_bundle_carries_parses_as_python_3_9():
    archive = zipfile.ZipFile(io.BytesIO(bundle.build_agent_bundle().data))
    for name in archive.namelist():
        if name.endswith(".py"):
            ast.parse(archive.read(name), filename=name, feature_version=(3, 9))


@pytest.mark.parametrize("python", ["python3.9", "python3.10", sys.executable])
def test_unpacked_bundle_runs_check_on_the_images_python_without_site_packages(python, tmp_path):
    """-S: no site-packages, so neither boto3 nor this repository's gpucloud can be found; the
    default AMI runs the agent on Python 3.10, and Amazon Linux 2023 images on 3.9."""
    interpreter = find_python(python)
    lib = unpacked(tmp_path)
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    (tmp_path / "query.csv").write_text(fixture_text("h100/query-gpu.csv"))
    fake.write_text(f'#!/bin/sh\ncat "{tmp_path / "query.csv"}"\n')
    fake.chmod(0o755)
    environment = {"PATH": f"{fake.parent}:/usr/bin:/bin", "PYTHONPATH": str(lib), "GPUCLOUD_NODE_CONFIG": str(tmp_path / "node.json")}
    (tmp_path / "node.json").write_text(json.dumps({"expected_gpu_count": 1, "expected_gpu_model": "H100"}))

    check = subprocess.run(
        [interpreter, "-S", "-m", "gpucloud.node", "check", "--json", "--read-only"],
        capture_output=True, text=True, env=environment, timeout=60,
    )
    where = subprocess.run(
        [interpreter, "-S", "-c", "import gpucloud.node.watch, gpucloud.node.tuning, gpucloud; print(gpucloud.__file__)"],
        capture_output=True, text=True, env=environment, timeout=60,
    )

    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["healthy"] is True
    assert where.stdout.strip() == str(lib / "gpucloud" / "__init__.py"), where.stderr


def test_boot_steps_start_tuning_disks_and_metrics_under_the_heartbeat_and_the_gate_and_watch_last():
    steps = [" ".join(step) for step in bundle.boot_manifest()["steps"]]

    heartbeat = f"systemd-run --unit={layout.HEARTBEAT_UNIT} {layout.AGENT_COMMAND_PATH} heartbeat"
    assert steps[:2] == ["systemctl daemon-reload", "systemctl enable " + " ".join(
        [layout.TUNE_UNIT, layout.STORAGE_UNIT, layout.DRAIN_UNIT, layout.GATE_UNIT, layout.WATCH_UNIT, layout.COLLECT_UNIT,
         layout.SERVICES_UNIT])]
    assert steps.index(heartbeat) < steps.index(f"systemctl start {layout.TUNE_UNIT} {layout.STORAGE_UNIT}")
    assert steps.index(f"systemctl start {layout.CLOUDWATCH_UNIT}") < len(steps) - 1
    assert steps[-1] == (f"systemctl start --no-block {layout.DRAIN_UNIT} {layout.GATE_UNIT} {layout.WATCH_UNIT} "
                         f"{layout.COLLECT_UNIT} {layout.SERVICES_UNIT}")


def test_watch_runs_only_after_the_gate_passed_and_tuning_before_the_gate():
    watch = scripts.UNITS[layout.WATCH_UNIT].splitlines()
    tune = scripts.UNITS[layout.TUNE_UNIT].splitlines()

    assert f"Requires={layout.GATE_UNIT}" in watch and f"After={layout.GATE_UNIT}" in watch
    assert "Restart=on-failure" in watch and f"Before={layout.GATE_UNIT}" in tune


def test_the_collector_runs_after_the_gate_apart_from_the_watch_and_within_its_measured_limits():
    collect = scripts.UNITS[layout.COLLECT_UNIT].splitlines()

    assert f"Requires={layout.GATE_UNIT}" in collect and f"After={layout.GATE_UNIT} {layout.WATCH_UNIT}" in collect
    assert not any(line.startswith(("Requires=", "Wants=", "BindsTo=")) and layout.WATCH_UNIT in line for line in collect)
    assert f"ExecStart={layout.AGENT_COMMAND_PATH} collect" in collect and "Restart=on-failure" in collect
    assert "MemoryMax=64M" in collect and "CPUQuota=10%" in collect


@pytest.mark.parametrize("python", ["python3.9", "python3.10"])
def test_collect_without_a_workspace_exits_0_at_once_on_the_images_python(python, tmp_path):
    """Restart=on-failure then leaves it stopped: a stack without AMP runs no collector."""
    interpreter = find_python(python)
    lib = unpacked(tmp_path)
    (tmp_path / "node.json").write_text(json.dumps({"project": "p", "group_name": "g"}))
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(lib), "GPUCLOUD_NODE_CONFIG": str(tmp_path / "node.json"),
                   "GPUCLOUD_IMDS_ENDPOINT": "http://127.0.0.1:9"}

    result = subprocess.run([interpreter, "-S", "-m", "gpucloud.node", "collect"],
                            capture_output=True, text=True, env=environment, timeout=30)

    assert result.returncode == 0, result.stderr
    assert "nothing to collect" in result.stderr


def test_the_agent_and_the_userdata_name_the_same_places():
    assert boot.MANIFEST_MEMBER == layout.BOOT_MANIFEST_MEMBER
    assert boot.ROOT_ENV == tuning.ROOT_ENV == "GPUCLOUD_ROOT"


def fake_systemd(tmp_path: Path, failing: str = "") -> tuple[Path, Path]:
    bin_dir, calls = tmp_path / "fakebin", tmp_path / "systemd-calls.log"
    bin_dir.mkdir()
    for name in ("systemctl", "systemd-run"):
        fail = f'case "$*" in *{failing}*) exit 1 ;; esac\n' if failing else ""
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\n{fail}exit 0\n')
        (bin_dir / name).chmod(0o755)
    return bin_dir, calls


def test_boot_installs_every_file_with_its_mode_and_runs_every_step(tmp_path, monkeypatch):
    lib = unpacked(tmp_path)
    root = tmp_path / "root"
    bin_dir, calls = fake_systemd(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    assert boot.boot(run_command, source=lib, root=root) == 0

    for path, text in {**scripts.SCRIPTS, **{f"/etc/systemd/system/{u}": t for u, t in scripts.UNITS.items()}}.items():
        installed = root / path.lstrip("/")
        assert installed.read_text() == text
        assert installed.stat().st_mode & 0o777 == (0o755 if path in scripts.SCRIPTS else 0o644)
    assert calls.read_text().splitlines() == [" ".join(step) for step in bundle.BOOT_STEPS]


def test_a_failed_step_fails_boot_but_the_gate_still_starts(tmp_path, monkeypatch):
    """A disk that cannot be set up must still let the gate start, find the mount missing and ABANDON."""
    lib = unpacked(tmp_path)
    bin_dir, calls = fake_systemd(tmp_path, failing=layout.STORAGE_UNIT)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    assert boot.boot(run_command, source=lib, root=tmp_path / "root") == 1

    assert calls.read_text().splitlines()[-1].startswith(f"systemctl start --no-block {layout.DRAIN_UNIT} {layout.GATE_UNIT}")
