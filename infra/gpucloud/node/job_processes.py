"""A job's processes on this node: its directory, the pid of its command, and `launch-stop`.

The launcher starts the command as the leader of a process group of its own and writes its pid to
/run/gpucloud/jobs/JOB_ID/pid; stopping signals that whole group (torchrun and its workers), and a
container's processes, which are the container runtime's children, are removed by name.
The launcher also holds an exclusive lock on JOB_ID/launcher from before the restore until after
the sync, so the drain can tell when a job's checkpoint has reached its store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gpucloud.node.commands import CommandRunner
from gpucloud.node.tuning import root_path

JOBS_DIR = "run/gpucloud/jobs"
LAUNCHER_LOCK = "launcher"
DRAINED = "drained"
"""Written in the job's directory by the drain before it stops the job: the node is going."""
JOB_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
STOP_GRACE_S = 30.0
STOP_POLL_S = 0.1
"""How often `launch-stop` looks whether the job has ended after SIGTERM: a job that exits at once is
reported within a tenth of a second, not half of one."""
EXIT_USAGE = 64
"""sysexits.h EX_USAGE: the launch cannot start as asked (this node is not in the list, a bad value)."""

log = logging.getLogger("gpucloud.node.launcher")


def job_dir(job_id: str, root: Path | None = None) -> Path:
    return (root or root_path()) / JOBS_DIR / job_id


def container_name(job_id: str) -> str:
    return f"gpucloud-{job_id}"


def terminate_with_parent() -> None:
    """In the child, before exec: SIGTERM when the launcher dies (prctl PR_SET_PDEATHSIG), so a
    command never outlives an SSM command that was killed. Linux only; elsewhere nothing."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def signal_group(pgid: int, signum: int) -> bool:
    """False once the group has no process left."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def running_pid(directory: Path, job_id: str) -> int | None:
    """The pid of the job's running command: from its pid file, when that process still carries
    the job's id in its environment (a pid left behind may since name another process)."""
    try:
        pid = int((directory / "pid").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    try:
        environment = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    return pid if f"GPUCLOUD_JOB_ID={job_id}".encode() in environment.split(b"\0") else None


def stop(job_id: str, run: CommandRunner, root: Path | None = None, grace_s: float = STOP_GRACE_S,
         sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """SIGTERM to the job's process group, SIGKILL after grace_s (and its container removed);
    0 also when nothing of the job runs here."""
    if not JOB_ID_PATTERN.match(job_id):
        log.error("job id %r does not match %s", job_id, JOB_ID_PATTERN.pattern)
        return EXIT_USAGE
    directory = job_dir(job_id, root)
    pid = running_pid(directory, job_id)
    if pid is None:
        log.info("job %s is not running on this node", job_id)
        return 0
    log.info("stopping job %s (process group %d)", job_id, pid)
    signal_group(pid, signal.SIGTERM)
    deadline = clock() + grace_s
    while clock() < deadline:
        if not signal_group(pid, 0):
            log.info("job %s ended", job_id)
            return 0
        sleep(min(STOP_POLL_S, max(0.0, deadline - clock())))
    log.warning("job %s still running after %g s: killing it", job_id, grace_s)
    kill(directory, pid, run)
    return 0


def kill(directory: Path, pid: int, run: CommandRunner) -> None:
    """SIGKILL to the job's process group, and its container removed."""
    signal_group(pid, signal.SIGKILL)
    container = directory / "container"
    if container.is_file():
        # The container's processes are the container runtime's children, not in our group.
        result = run(["docker", "rm", "--force", container.read_text(encoding="utf-8").strip()], 60.0)
        if not result.ok:
            log.warning("docker rm: %s", result.describe_failure(60.0))


@contextlib.contextmanager
def launcher_lock(directory: Path) -> Iterator[bool]:
    """Hold the job's launcher lock for the block: True when taken, False when another launcher
    holds it. The kernel releases it however the launcher ends, so a crash never leaves it held."""
    import fcntl

    with open(directory / LAUNCHER_LOCK, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        yield True


def launcher_running(directory: Path) -> bool:
    """Whether a launcher still holds the job's lock (running its command or syncing after it)."""
    import fcntl

    try:
        lock = open(directory / LAUNCHER_LOCK, encoding="utf-8")
    except FileNotFoundError:
        return False
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
