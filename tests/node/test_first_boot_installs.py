"""Installs the node makes at first boot when the image lacks something (python3-venv, mount-s3, the
CloudWatch agent): each waits for the package locks cloud-init and unattended-upgrades hold, refreshes
the package lists where it installs from the archive, retries a bounded number of times within one
deadline, and fails saying why. The locks are real fcntl locks held by another process."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpucloud.node import services
from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.packages import LOCK_FILES, Installer, InstallPolicy, lock_holder
from gpucloud.node.shared_storage import install_mount_s3, shared_storage_problems
from gpucloud.userdata import scripts

FRONTEND = LOCK_FILES[0]
HOLD = ("import fcntl, sys, time\n"
        "handle = open(sys.argv[1], 'r+')\n"
        "fcntl.lockf(handle, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n")


@contextlib.contextmanager
def held(path: Path):
    """Another process holds a write lock on `path`, as dpkg does on /var/lib/dpkg/lock-frontend."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        yield child
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


class Clock:
    """A monotonic clock that moves only when the code under test sleeps; `on_sleep` runs first."""

    def __init__(self, on_sleep=None):
        self.now, self.slept, self.on_sleep = 1000.0, [], on_sleep

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        if self.on_sleep:
            self.on_sleep()
        self.now += seconds


class Apt:
    """apt-get as it behaves at first boot: it refuses while another process holds the dpkg lock."""

    def __init__(self, root: Path, install_failures: int = 0):
        self.root, self.install_failures, self.calls = root, install_failures, []

    def __call__(self, argv, timeout_s, env=None):
        holder = lock_holder(self.root / FRONTEND)
        self.calls.append((list(argv), timeout_s, holder))
        if argv[0] == "apt-get" and holder is not None:
            return CommandResult(tuple(argv), 100, stderr=f"E: Could not get lock /{FRONTEND}. It is held by process {holder}")
        if argv[0] == "apt-get" and "install" in argv and self.install_failures:
            self.install_failures -= 1
            return CommandResult(tuple(argv), 100, stderr="E: Unable to locate package python3-venv")
        return CommandResult(tuple(argv), 0)

    def commands(self):
        return [call[0][call[0].index("-o") + 2] if call[0][0] == "apt-get" else call[0][0] for call in self.calls]


def apt_only(name):
    return "/usr/bin/apt-get" if name == "apt-get" else None


def test_lock_probe_names_the_holder_without_taking_the_lock(tmp_path):
    lock = tmp_path / FRONTEND
    assert lock_holder(lock) is None, "a missing lock file is held by nobody"
    with held(lock) as child:
        assert lock_holder(lock) == child.pid
        assert lock_holder(lock) == child.pid, "probing took nothing from the holder"
    assert lock_holder(lock) is None


def test_install_waits_for_the_dpkg_lock_then_refreshes_lists_and_installs(tmp_path):
    apt = Apt(tmp_path)
    with held(tmp_path / FRONTEND) as child:
        clock = Clock(on_sleep=lambda: (child.kill(), child.wait()))
        failure = Installer(apt, root=tmp_path, which=apt_only, sleep=clock.sleep, clock=clock).install(["python3-venv"])
        child.wait()
    assert failure is None
    assert apt.commands() == ["update", "install"]
    assert all(holder is None for _argv, _timeout, holder in apt.calls), "apt-get never ran while the lock was held"
    assert clock.slept == [InstallPolicy().poll_s]
    assert "DPkg::Lock::Timeout=300" in apt.calls[1][0] and apt.calls[1][0][-1] == "python3-venv"


def test_a_lock_held_past_the_deadline_fails_naming_it_and_runs_nothing(tmp_path):
    apt = Apt(tmp_path)
    clock = Clock()
    policy = InstallPolicy(deadline_s=60)
    with held(tmp_path / FRONTEND) as child:
        failure = Installer(apt, policy, root=tmp_path, which=apt_only, sleep=clock.sleep, clock=clock).install(["python3-venv"])
    assert failure.startswith(f"apt-get install python3-venv: gave up after waiting for the package locks: "
                              f"/{FRONTEND} still held by pid {child.pid}")
    assert apt.calls == []
    assert sum(clock.slept) <= 60


def test_a_failing_install_is_retried_a_bounded_number_of_times_then_says_why(tmp_path):
    apt = Apt(tmp_path, install_failures=10)
    clock = Clock()
    failure = Installer(apt, root=tmp_path, which=apt_only, sleep=clock.sleep, clock=clock).install(["python3-venv"])
    assert apt.commands() == ["update", "install"] * 3
    assert clock.slept == [20.0, 20.0]
    assert failure == ("apt-get install python3-venv: failed 3 times within 900 s; last: apt-get failed with exit "
                       "status 100: E: Unable to locate package python3-venv")


def test_no_command_runs_past_the_deadline(tmp_path):
    clock = Clock()
    timeouts = []

    def hangs(argv, timeout_s, env=None):
        timeouts.append(timeout_s)
        clock.now += timeout_s
        return CommandResult(tuple(argv), None, timed_out=True)

    policy = InstallPolicy(deadline_s=700)
    failure = Installer(hangs, policy, root=tmp_path, which=apt_only, sleep=clock.sleep, clock=clock).install(["x"])
    assert clock.now - 1000.0 <= 700
    assert timeouts == [300.0, 300.0, 80.0]
    assert failure.startswith("apt-get install x: failed 1 time within 700 s; last: apt-get did not answer")


def test_images_without_apt_install_with_dnf(tmp_path):
    calls = []

    def run(argv, timeout_s, env=None):
        calls.append(list(argv))
        return CommandResult(tuple(argv), 0)

    which = {"dnf": "/usr/bin/dnf"}.get
    assert Installer(run, root=tmp_path, which=which, sleep=Clock().sleep).install(["/tmp/mount-s3.rpm"]) is None
    assert calls == [["dnf", "install", "-y", "-q", "/tmp/mount-s3.rpm"]]


def test_python3_venv_install_waits_for_a_held_dpkg_lock(tmp_path, monkeypatch):
    """What the node's services do on the default image, which lacks python3-venv: before, apt-get
    ran at once, failed on the lock cloud-init held, and the service died of a venv error."""
    monkeypatch.setenv("GPUCLOUD_ROOT", str(tmp_path))
    monkeypatch.setattr(shutil, "which", apt_only)
    apt = Apt(tmp_path)
    calls_before = []

    def run(argv, timeout_s, env=None):
        if argv[1:3] == ["-m", "venv"]:
            calls_before.append(argv)
            ok = len(calls_before) > 1 and any(call[0][0] == "apt-get" and "install" in call[0] and call[2] is None
                                               for call in apt.calls)
            return CommandResult(tuple(argv), 0 if ok else 1, stderr="" if ok else "ensurepip is not available")
        return apt(argv, timeout_s, env)

    with held(tmp_path / FRONTEND) as child:
        clock = Clock(on_sleep=lambda: (child.kill(), child.wait()))
        monkeypatch.setattr(time, "sleep", clock.sleep)
        monkeypatch.setattr(time, "monotonic", clock)
        assert services.install_venv(run, str(tmp_path / "venv"), ["jupyterlab==4.6.6"]) == f"{tmp_path}/venv/bin"
    assert [call[0][0] for call in apt.calls] == ["apt-get", "apt-get", f"{tmp_path}/venv/bin/python"]
    assert all(holder is None for _argv, _timeout, holder in apt.calls)


def test_python3_venv_that_cannot_be_installed_fails_the_service_saying_why(tmp_path):
    apt = Apt(tmp_path, install_failures=10)
    clock = Clock()

    def run(argv, timeout_s, env=None):
        if argv[1:3] == ["-m", "venv"]:
            return CommandResult(tuple(argv), 1, stderr="ensurepip is not available")
        return apt(argv, timeout_s, env)

    installer = Installer(run, root=tmp_path, which=apt_only, sleep=clock.sleep, clock=clock)
    with pytest.raises(services.ServiceError, match=r"python3-venv, which it needs, could not be installed: "
                       r"apt-get install python3-venv: failed 3 times"):
        services.install_venv(run, str(tmp_path / "venv"), ["jupyterlab==4.6.6"], installer=installer)


def test_mount_s3_download_installs_with_its_dependencies_through_the_waiting_installer(tmp_path):
    apt = Apt(tmp_path)
    installer = Installer(apt, root=tmp_path, which=apt_only, sleep=Clock().sleep)
    assert install_mount_s3(apt, apt_only, "x86_64", installer=installer) is None
    curl, update, install = (call[0] for call in apt.calls)
    assert curl[0] == "curl" and "--retry-all-errors" in curl
    assert curl[-1] == "https://s3.amazonaws.com/mountpoint-s3-release/latest/x86_64/mount-s3.deb"
    assert update[-2:] == ["update", "-q"] and install[-1] == "/tmp/mount-s3.deb"


def test_gate_says_the_boot_download_failed_rather_than_blaming_the_image():
    config = NodeConfig(s3_mounts=("ro demo-data datasets/ /s3/datasets",), s3_mount_install="download")
    [problem] = shared_storage_problems(config, which=lambda name: None, mounts={})
    assert "was to be downloaded and installed at boot (storage.s3Mount.install: download)" in problem
    assert "journalctl -u gpucloud-storage" in problem


class CloudWatchTools:
    """Stand-ins for curl, dpkg, mktemp, apt-get and sleep that log their calls; bash's own `[` is
    switched off so that `[ -x CTL ]` asks a stand-in, which says the agent is there once apt-get
    succeeded. apt-get refuses `lock_failures` times, as while unattended-upgrades holds the lock."""

    def __init__(self, root: Path, lock_failures: int):
        self.root, self.log, self.bin = root, root / "calls.log", root / "bin"
        self.bin.mkdir()
        (root / "bootstrap.env").write_text("REGION=us-east-1\n")
        (root / "bash_env").write_text("enable -n [ test\nunset BASH_ENV\n")
        installed, count = root / "installed", root / "apt-count"
        self.tool("dpkg", "echo amd64")
        self.tool("mktemp", f"echo {root}/agent.deb")
        self.tool("curl", "exit 0")
        self.tool("sleep", "exit 0")
        self.tool("apt-get", f'n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"\n'
                             f'if [ "$n" -lt {lock_failures} ]; then echo "E: Could not get lock" >&2; exit 100; fi\n'
                             f'touch "{installed}"')
        self.tool("[", f'if [ "$1" = -x ]; then [ -e "{installed}" ]; exit $?; fi\n'
                       f'if [ "$1" = ! ] && [ "$2" = -x ]; then [ ! -e "{installed}" ]; exit $?; fi\nbuiltin [ "$@"')

    def tool(self, name, body):
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{self.log}"\n{body}\n')
        path.chmod(0o755)

    def run(self):
        script = self.root / "gpucloud-cloudwatch"
        script.write_text(scripts.CLOUDWATCH_SCRIPT)
        environment = {"PATH": f"{self.bin}:/usr/bin:/bin", "GPUCLOUD_BOOTSTRAP_ENV": str(self.root / "bootstrap.env"),
                       "BASH_ENV": str(self.root / "bash_env")}
        result = subprocess.run(["bash", str(script)], env=environment, capture_output=True, text=True, timeout=30)
        calls = [line for line in self.log.read_text().splitlines() if not line.startswith("[ ")]
        return result, calls


def test_cloudwatch_agent_install_waits_for_the_dpkg_lock_and_retries(tmp_path):
    result, calls = CloudWatchTools(tmp_path, lock_failures=2).run()
    installs = [call for call in calls if call.startswith("apt-get")]
    assert len(installs) == 3
    assert all("-o DPkg::Lock::Timeout=120 install -y -q" in call for call in installs)
    assert [call for call in calls if call.startswith("sleep")] == ["sleep 20", "sleep 20"]
    assert "attempt 2 of 3" in result.stderr and "not installed" not in result.stderr


def test_cloudwatch_agent_install_gives_up_after_three_attempts_saying_so(tmp_path):
    result, calls = CloudWatchTools(tmp_path, lock_failures=10).run()
    assert result.returncode == 1
    assert len([call for call in calls if call.startswith("apt-get")]) == 3
    assert "CloudWatch agent not installed after 3 attempts; no GPU metrics" in result.stderr


def test_tune_holds_the_driver_packages_once_the_dpkg_lock_is_free(tmp_path, monkeypatch):
    """apt-mark hold takes the dpkg lock: before, tune ran it at once, it failed on the lock
    unattended-upgrades held, and the driver and kernel were left unheld while it upgraded."""
    from gpucloud.node import tuning

    calls = []

    def system(argv, timeout_s, env=None):
        holder = lock_holder(tmp_path / FRONTEND)
        calls.append((argv[0], holder))
        if argv[0] == "dpkg-query":
            return CommandResult(tuple(argv), 0, stdout="nvidia-driver-550-server installed\nlinux-aws installed\n")
        if argv[0] == "apt-mark" and holder is not None:
            return CommandResult(tuple(argv), 2, stderr="E: Could not get lock /var/lib/dpkg/lock-frontend")
        return CommandResult(tuple(argv), 0)

    with held(tmp_path / FRONTEND) as child:
        clock = Clock(on_sleep=lambda: (child.kill(), child.wait()))
        monkeypatch.setattr(time, "sleep", clock.sleep)
        monkeypatch.setattr(time, "monotonic", clock)
        assert tuning.tune(system, efa_expected=False, instance_type="g5.xlarge", root=tmp_path) == 0
    assert [call for call in calls if call[0] == "apt-mark"] == [("apt-mark", None)]
    assert clock.slept == [InstallPolicy().poll_s]
