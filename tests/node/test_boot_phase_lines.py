"""The node says when each phase starts, not only when it ends: `boot` opens the agent and mount
phases, a container's supervision its healthy phase, and each line carries what is running, so a
node two minutes into a pull says so (its CloudWatch agent sends the lines on: ops/node_phases.py)."""

from __future__ import annotations

import json

from gpucloud.node import boot_phases
from gpucloud.node.boot import MOUNT_UNIT, boot
from gpucloud.node.commands import CommandResult
from gpucloud.node.containers import supervise


def lines(directory) -> list[dict]:
    return [json.loads(line) for line in (directory / boot_phases.LOG.name).read_text().splitlines()]


def test_boot_says_when_the_agent_and_mount_phases_start(tmp_path, monkeypatch):
    monkeypatch.setenv(boot_phases.DIRECTORY_ENV, str(tmp_path / "phases"))
    source = tmp_path / "bundle"
    (source / "boot").mkdir(parents=True)
    steps = [["systemctl", "daemon-reload"], ["systemctl", "start", MOUNT_UNIT]]
    (source / "boot" / "manifest.json").write_text(json.dumps({"files": [], "steps": steps}))
    mounting = []

    def run(argv, timeout_s, env=None):
        if MOUNT_UNIT in argv:
            mounting.append(lines(tmp_path / "phases")[-1])
        return CommandResult(tuple(argv), returncode=0)

    ticks = iter([1000.0, 1010.0, 1012.0, 1012.0, 1100.0])
    assert boot(run, source=source, root=tmp_path / "root", clock=lambda: next(ticks)) == 0

    events = [(line["event"], line["phase"]) for line in lines(tmp_path / "phases")]
    assert events == [("ended", "boot"), ("started", "agent"), ("ended", "agent"), ("started", "mount"), ("ended", "mount")]
    assert mounting == [{"event": "started", "phase": "mount", "at": 1012.0, "running": {"mount": 1012.0},
                         "done": {"boot": mounting[0]["done"]["boot"], "agent": {"start": 1000.0, "end": 1012.0}}}]


def test_a_container_says_when_it_starts_waiting_for_its_first_healthy_answer(tmp_path, monkeypatch):
    monkeypatch.setenv(boot_phases.DIRECTORY_ENV, str(tmp_path / "phases"))

    class Exited:
        returncode = 0

        def poll(self):
            return 0

    container = {"name": "server", "port": 8000, "health": {"path": "/health", "interval_seconds": 5, "timeout_seconds": 2,
                                                            "start_period_seconds": 60, "unhealthy_threshold": 3}}
    assert supervise(Exited(), container, probe=lambda *args: True, sleep=lambda seconds: None) == 0
    [line] = lines(tmp_path / "phases")
    assert (line["event"], line["phase"], list(line["running"])) == ("started", "healthy:server", ["healthy:server"])
