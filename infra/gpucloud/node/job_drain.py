"""The drain's time budget, and stopping this node's `gpucloud run` jobs within it.

A launcher syncs its job's checkpoint directory to the job's store only once the command has
exited, so a node that goes with a job still running loses every checkpoint written since the job
started. When the node is about to go (a spot interruption notice, a scale-in, the watch replacing
it after a node fault), the drain first stops each running job as `launch-stop` does: SIGTERM to
its process group, then waits for its launcher to finish the sync (it holds the job's launcher
lock until then). The launcher then exits 75 (`launcher.EXIT_DRAINED`), which tells `gpucloud run`
that the node went rather than that the job failed. A command still running after two thirds of the wait is killed, leaving the last
third for the upload; the drain then goes on whether or not the sync has finished, so the lifecycle
action is still completed in time.

The budget: EC2 gives a Spot Instance two minutes' notice before it interrupts it (EC2 user guide,
"Spot Instance interruption notices", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html,
read 2026-11-25), and the drain sees the notice up to one poll later. On a scale-in the terminate
lifecycle hook holds the instance for its heartbeat timeout (gpucloud.components.gpu_group's
TERMINATE_HOOK_TIMEOUT_SECONDS; Auto Scaling user guide, "Amazon EC2 Auto Scaling lifecycle hooks",
read 2026-11-25). Either way a few seconds stay in reserve to complete the lifecycle action.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path

from gpucloud.node.commands import CommandRunner
from gpucloud.node.job_processes import DRAINED, JOBS_DIR, kill, launcher_running, running_pid, signal_group
from gpucloud.node.tuning import root_path

SPOT_NOTICE_S = 120.0
TERMINATE_HOOK_TIMEOUT_S = 600.0
"""The stack's terminate hook timeout (tests hold it equal to the component's)."""
HOOK_RESERVE_S = 10.0
"""Kept back from the budget to complete the lifecycle action (with its retries)."""
KILL_AT = 2 / 3
"""Share of the wait after which a command that is still running gets SIGKILL."""

log = logging.getLogger("gpucloud.node.drain")


def drain_budget_s(spot: bool, poll_interval_s: float) -> float:
    """Seconds from the notice's first sight until the drain must have finished its own work."""
    notice = SPOT_NOTICE_S if spot else TERMINATE_HOOK_TIMEOUT_S
    return max(0.0, notice - poll_interval_s - HOOK_RESERVE_S)


def running_jobs(root: Path | None = None) -> list[Path]:
    """The directories of the jobs whose launcher is still running here."""
    jobs = (root or root_path()) / JOBS_DIR
    if not jobs.is_dir():
        return []
    return sorted(directory for directory in jobs.iterdir() if directory.is_dir() and launcher_running(directory))


def stop_jobs(
    budget_s: float,
    run: CommandRunner,
    root: Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """Stop every running job and wait, within budget_s, for each launcher to sync its checkpoint.
    Returns job id -> "synced" (the launcher finished), "killed" (SIGKILL, its launcher still
    syncing at the end of the budget) or "running" (still syncing though its command ended)."""
    pending = {directory.name: directory for directory in running_jobs(root)}
    if not pending:
        return {}
    start = clock()
    kill_at, deadline = start + budget_s * KILL_AT, start + budget_s
    log.info("stopping %d job(s) so their launchers sync their checkpoints: %s (at most %g s)",
             len(pending), ", ".join(sorted(pending)), budget_s)
    signalled: dict[str, int] = {}
    killed: set[str] = set()
    outcomes: dict[str, str] = {}
    while True:
        for job_id, directory in list(pending.items()):
            if not launcher_running(directory):
                outcomes[job_id] = "synced"
                del pending[job_id]
                log.info("job %s: its launcher has exited (%s)", job_id, _exit_of(directory))
                continue
            # A launcher still restoring starts its command later: signal it once it has.
            pid = running_pid(directory, job_id)
            if pid is not None and signalled.get(job_id) != pid:
                (directory / DRAINED).write_text("the node is going\n", encoding="utf-8")
                signal_group(pid, signal.SIGTERM)
                signalled[job_id] = pid
            if pid is not None and clock() >= kill_at and job_id not in killed:
                log.warning("job %s still running after %g s: killing it", job_id, kill_at - start)
                kill(directory, pid, run)
                killed.add(job_id)
        if not pending or clock() >= deadline:
            break
        sleep(min(0.2, max(0.0, deadline - clock())))
    for job_id in pending:
        outcomes[job_id] = "killed" if job_id in killed else "running"
        log.error("job %s: its launcher has not finished its checkpoint sync within %g s; going on without it",
                  job_id, budget_s)
    return outcomes


def _exit_of(directory: Path) -> str:
    try:
        return "status " + (directory / "exit").read_text(encoding="utf-8").strip()
    except OSError:
        return "its command never started"
