"""The drain stops this node's `gpucloud run` jobs so their launchers sync the checkpoints written
since the job started, within the notice's time; and a node's restored copy never overwrites a
newer checkpoint another node wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpucloud.node import launcher
from gpucloud.node.commands import CommandResult
from gpucloud.node.job_drain import HOOK_RESERVE_S, SPOT_NOTICE_S, TERMINATE_HOOK_TIMEOUT_S, drain_budget_s, stop_jobs
from gpucloud.node.launcher import JobSpec, encode_command
from gpucloud.node.lifecycle import drain
from node_fakes import NO_WAIT, TERMINATE_HOOK, aws_client
from test_launcher import FakeSpawn, make_launch
from test_node_lifecycle import SPOT_PATH, TARGET_STATE_PATH, node_config

JOB = "vision-train-20261125120000-ab12"


def checkpointing_job(node: Path, ignore_term: bool) -> list[str]:
    """Writes step-1.pt, says it is ready, and sleeps; on SIGTERM writes step-2.pt and exits 0
    (or, with ignore_term, never hears SIGTERM)."""
    on_term = ("signal.signal(signal.SIGTERM, signal.SIG_IGN)" if ignore_term else
               "signal.signal(signal.SIGTERM, lambda *_: (d.joinpath('step-2.pt').write_text('2'), sys.exit(0)))")
    return [sys.executable, "-c", (
        "import os, pathlib, signal, sys, time; d = pathlib.Path(os.environ['GPUCLOUD_CHECKPOINT_DIR']); "
        f"d.joinpath('step-1.pt').write_text('1'); {on_term}; "
        f"pathlib.Path({str(node / 'ready')!r}).touch(); time.sleep(60)")]


@pytest.fixture
def node(tmp_path, monkeypatch):
    """This node's /run under tmp_path (GPUCLOUD_ROOT, which the drain reads too) and a file:// store."""
    (tmp_path / "node.json").write_text(json.dumps({"checkpoint_dir": str(tmp_path / "checkpoints")}))
    monkeypatch.setenv("GPUCLOUD_ROOT", str(tmp_path / "root"))
    (tmp_path / "store").mkdir()
    return tmp_path


def start_job(node: Path, command: list[str]):
    environment = dict(os.environ, PYTHONPATH=str(Path(launcher.__file__).resolve().parents[2]),
                       GPUCLOUD_NODE_CONFIG=str(node / "node.json"), **{launcher.NODE_IPV4_ENV: "10.0.1.7"})
    process = subprocess.Popen(
        [sys.executable, "-m", "gpucloud.node", "launch", "--job", JOB, "--nodes", "10.0.1.7", "--gpus-per-node", "1",
         "--checkpoint-uri", (node / "store").as_uri() + "/", "--command-b64", encode_command(command)],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while not (node / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (node / "ready").exists(), process.communicate(timeout=10)
    return process


def stored(node: Path) -> list[str]:
    return sorted(path.name for path in (node / "store").iterdir())


@pytest.mark.node_aws_calls("drain")
@pytest.mark.parametrize("spot", [True, False], ids=["spot-notice", "scale-in-or-replacement"])
def test_a_going_node_stops_the_running_job_and_its_checkpoint_is_synced_before_the_hook_completes(
    node, gpu_group, lifecycle_actions, metadata_stub, spot
):
    """A node the watch had replaced after a node fault is terminated through the same hook as a scale-in."""
    process = start_job(node, checkpointing_job(node, ignore_term=False))
    metadata_stub.serve_instance(gpu_group.instance_id)
    if spot:
        metadata_stub.routes[SPOT_PATH] = json.dumps({"action": "terminate", "time": "2026-11-25T08:00:00Z"})
    metadata_stub.routes[TARGET_STATE_PATH] = "Terminated"
    store_when_the_agent_checkpointed: list[list[str]] = []

    def agent_checkpoint(argv, timeout_s, env=None):
        store_when_the_agent_checkpointed.append(stored(node))
        return CommandResult(tuple(argv), 0)

    config = node_config(checkpoint_dir=str(node / "checkpoints"), checkpoint_command=("save-checkpoint",))
    status = drain(config, metadata_stub.client(), run=agent_checkpoint, client_factory=aws_client, backoff=NO_WAIT,
                   sleep=lambda seconds: None, max_polls=1)

    assert status == 0
    assert process.wait(timeout=10) == 75, "the launcher says the node went, not that the job failed"
    assert store_when_the_agent_checkpointed == [["step-1.pt", "step-2.pt"]], (
        "the launcher synced what the job wrote since it started, before the drain went on")
    assert [action["hook"] for action in lifecycle_actions.completed] == [TERMINATE_HOOK]
    assert "synced 2 new or changed file(s)" in process.stderr.read()


def test_a_job_that_ignores_sigterm_is_killed_within_the_budget_and_its_launcher_still_syncs(node):
    process = start_job(node, checkpointing_job(node, ignore_term=True))
    started = time.monotonic()

    outcomes = stop_jobs(1.5, run=lambda argv, timeout_s, env=None: CommandResult(tuple(argv), 0))

    assert time.monotonic() - started < 1.5 + 0.5
    assert process.wait(timeout=10) == 75
    assert (node / "root/run/gpucloud/jobs" / JOB / "exit").read_text() == "137\n", "SIGKILL ended the command"
    assert outcomes == {JOB: "synced"}
    assert stored(node) == ["step-1.pt"]
    assert stop_jobs(1.5, run=None) == {}, "nothing left running"


def test_the_agents_checkpoint_retries_end_within_the_spot_notice():
    """Three tries of up to checkpointTimeoutSeconds (90) would take 270 s of a spot node's 120."""
    now = [0.0]
    timeouts: list[float] = []

    def failing_checkpoint(argv, timeout_s, env=None):
        timeouts.append(timeout_s)
        now[0] += timeout_s
        return CommandResult(tuple(argv), returncode=None, timed_out=True)

    config = node_config(checkpoint_command=("save-checkpoint",), terminate_hook_name=None, checkpoint_timeout_s=90)

    class SpotNotice:
        def instance_id(self):
            return "i-0123456789abcdef0"

        def region(self):
            return config.region

        def spot_instance_action(self):
            return {"action": "terminate", "time": "2026-11-25T08:00:00Z"}

        def target_lifecycle_state(self):
            return "InService"

    def sleep(seconds):
        now[0] += seconds

    assert drain(config, SpotNotice(), run=failing_checkpoint, sleep=sleep, backoff=NO_WAIT, max_polls=1,
                 clock=lambda: now[0]) == 0
    assert timeouts[0] == 90
    assert now[0] <= drain_budget_s(True, config.poll_interval_s)
    assert drain_budget_s(True, config.poll_interval_s) + config.poll_interval_s + HOOK_RESERVE_S <= SPOT_NOTICE_S


def test_the_drains_budget_on_scale_in_is_the_stacks_terminate_hook_timeout():
    from gpucloud.components.gpu_group import TERMINATE_HOOK_TIMEOUT_SECONDS

    assert TERMINATE_HOOK_TIMEOUT_S == TERMINATE_HOOK_TIMEOUT_SECONDS


def test_a_nodes_restored_copy_never_overwrites_the_newer_checkpoint_another_node_wrote(tmp_path):
    """With c10d global rank 0 may land on any node. Both nodes restore step 10; node A's rank 0
    writes step 20 and syncs; node B, which restored before A synced and wrote nothing, syncs last."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "tiny.pt").write_bytes(b"step 10")
    os.utime(store / "tiny.pt", (time.time() - 600,) * 2)

    def spec():
        return JobSpec(JOB, ("10.0.1.7", "10.0.1.12"), ("torchrun",), gpus_per_node=1, attempt=1,
                       checkpoint_uri=store.as_uri() + "/")

    def rank_zero_writes(environment):
        (Path(environment["GPUCLOUD_CHECKPOINT_DIR"]) / "tiny.pt").write_bytes(b"step 20, a larger state")

    node_a = make_launch(tmp_path / "a", spec(), FakeSpawn(effect=rank_zero_writes), address="10.0.1.7")
    node_b = make_launch(tmp_path / "b", spec(), FakeSpawn(effect=lambda environment: node_a()), address="10.0.1.12")

    assert node_b() == 0
    assert (tmp_path / "b/checkpoints/jobs" / JOB / "tiny.pt").read_bytes() == b"step 10", "B restored before A synced"
    assert (store / "tiny.pt").read_bytes() == b"step 20, a larger state"
