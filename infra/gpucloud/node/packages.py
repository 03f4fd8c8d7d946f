"""Installing a package on a node that boots, safely: what the fallbacks use when the image lacks
something (python3-venv for the services, mount-s3 with `storage.s3Mount.install: download`).

At first boot cloud-init and unattended-upgrades hold the package locks for minutes, and apt-get
started then fails at once ("Could not get lock /var/lib/dpkg/lock-frontend"). So an install here
waits for the locks, refreshes the package lists (an image's lists are as old as the image), tries
a bounded number of times within one deadline, and otherwise returns one line saying why, which
the caller turns into a gate or service failure. It never hangs past its deadline.

Facts (read 2026-11-28): dpkg and apt lock with fcntl(2) write locks on the whole file
(guillemj/dpkg `lib/dpkg/lock.c`: F_WRLCK, F_SETLK, EACCES/EAGAIN when held) on
/var/lib/dpkg/lock-frontend and /var/lib/dpkg/lock, and apt on /var/lib/apt/lists/lock (update)
and /var/cache/apt/archives/lock (downloads). apt-get's `-o DPkg::Lock::Timeout=N` (apt >= 1.9.11;
Ubuntu 22.04 ships apt 2.4) waits for the dpkg locks only, not for the lists lock `update` takes,
so the locks are probed here first, with F_GETLK, which reads a conflicting lock without taking
one (a probe that took the lock could make cloud-init's own apt-get fail).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpucloud.node.commands import CommandResult, CommandRunner

ROOT_ENV = "GPUCLOUD_ROOT"
LOCK_FILES = ("var/lib/dpkg/lock-frontend", "var/lib/dpkg/lock", "var/lib/apt/lists/lock",
              "var/cache/apt/archives/lock")
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
FLOCK = "hhqqi"
"""struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len (off_t), l_pid."""
FLOCK_SIZE = 32


@dataclass(frozen=True)
class InstallPolicy:
    """How long and how often an install may try."""

    deadline_s: float = 900.0
    """Everything (lock waits, commands, pauses) ends within this: the storage unit's and the gate's
    own limits (userdata/layout.py) leave room for it after the disks."""
    attempts: int = 3
    pause_s: float = 20.0
    poll_s: float = 5.0
    command_timeout_s: float = 300.0


def root_path() -> Path:
    return Path(os.environ.get(ROOT_ENV, "/"))


def lock_holder(path: Path) -> int | None:
    """The pid of a process holding a lock that conflicts with a write lock on `path`, else None
    (also when the file does not exist: nothing holds it)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        query = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0).ljust(FLOCK_SIZE, b"\0")
        answer = fcntl.fcntl(descriptor, fcntl.F_GETLK, query)
    finally:
        os.close(descriptor)
    lock_type, _whence, _start, _length, pid = struct.unpack(FLOCK, answer[:struct.calcsize(FLOCK)])
    return None if lock_type == fcntl.F_UNLCK else pid


def _holder_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return "?"


class Installer:
    """Installs packages with the image's package manager, waiting for its locks, within a deadline."""

    def __init__(self, run: CommandRunner, policy: InstallPolicy = InstallPolicy(), root: Path | None = None,
                 which: Callable[[str], "str | None"] | None = None, sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] | None = None):
        self.run, self.policy, self.root = run, policy, root or root_path()
        self.which = which or shutil.which
        self.sleep = sleep or time.sleep
        self.clock = clock or time.monotonic

    def install(self, packages: Sequence[str], update: bool = True) -> str | None:
        """Install `packages` (names, or paths of package files); None when installed, else why not."""
        deadline = self.clock() + self.policy.deadline_s
        if self.which("apt-get"):
            return self._apt(list(packages), update, deadline)
        manager = "dnf" if self.which("dnf") else "yum" if self.which("yum") else None
        if manager is None:
            return f"installing {' '.join(packages)}: the image has neither apt-get nor dnf"
        return self._attempts([manager, "install", "-y", "-q", *packages], deadline, None,
                              f"{manager} install {' '.join(packages)}", locks=False)

    def run_unlocked(self, argv: Sequence[str]) -> str | None:
        """Run a command that takes the dpkg lock (`apt-mark hold`) once no package lock is held,
        retried like an install; None when it succeeded, else why not."""
        return self._attempts(list(argv), self.clock() + self.policy.deadline_s, None, " ".join(argv), locks=True)

    def wait_for_locks(self, deadline: float) -> str | None:
        """None once no package lock is held; else which one was still held at the deadline."""
        while True:
            held = [(name, pid) for name in LOCK_FILES if (pid := lock_holder(self.root / name)) is not None]
            if not held:
                return None
            if self.clock() + self.policy.poll_s > deadline:
                name, pid = held[0]
                return f"/{name} still held by pid {pid} ({_holder_name(pid)})"
            self.sleep(self.policy.poll_s)

    def _apt(self, packages: list[str], update: bool, deadline: float) -> str | None:
        lock_timeout = f"DPkg::Lock::Timeout={int(self.policy.command_timeout_s)}"
        install = ["apt-get", "-o", lock_timeout, "install", "-y", "-q", *packages]
        refresh = ["apt-get", "-o", lock_timeout, "update", "-q"] if update else None
        return self._attempts(install, deadline, refresh, f"apt-get install {' '.join(packages)}", locks=True)

    def _attempts(self, argv: list[str], deadline: float, refresh: list[str] | None, what: str,
                  locks: bool) -> str | None:
        last, refresh_failure, tried = "no attempt fitted in the deadline", "", 0
        while tried < self.policy.attempts:
            if tried:
                if self.clock() + self.policy.pause_s >= deadline:
                    break
                self.sleep(self.policy.pause_s)
            if locks:
                held = self.wait_for_locks(deadline)
                if held:
                    return f"{what}: gave up after waiting for the package locks: {held}"
            if refresh is not None:
                result = self._run(refresh, deadline)
                refresh_failure = "" if result.ok else (
                    f" (apt-get update failed too: {result.describe_failure(self.policy.command_timeout_s)})")
            if self.clock() >= deadline:
                break
            result = self._run(argv, deadline)
            tried += 1
            if result.ok:
                return None
            last = result.describe_failure(self.policy.command_timeout_s) + refresh_failure
        return (f"{what}: failed {tried} time{'s' if tried != 1 else ''} within {self.policy.deadline_s:g} s; "
                f"last: {last}")

    def _run(self, argv: list[str], deadline: float) -> CommandResult:
        timeout = max(1.0, min(self.policy.command_timeout_s, deadline - self.clock()))
        return self.run(argv, timeout, APT_ENV)
