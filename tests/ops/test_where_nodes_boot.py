"""Where a node is, from its own boot-phase records: the node writes a line per phase started or
ended (gpucloud.node.boot_phases), its CloudWatch agent puts each line into the job log group's
stream `boot-phases/<Auto Scaling group>/<instance id>`, and `gpucloud connect --start` (while it
waits) and `gpucloud logs` (of a job not yet on a node) read each instance's latest line. On the moto engine: the
stack deployed, a node held at its launch hook, its lines put as the agent would, then the command."""

from __future__ import annotations

import json
import time
import types

import pytest

from gpucloud.connect import ConnectError, find_connection
from gpucloud.naming import boot_phase_log_stream, job_log_group_name
from gpucloud.node import boot_phases
from gpucloud.ops import job_control, node_phases
from gpucloud.ops.jobs import Clients, new_job
from gpucloud.userdata import layout
from support import deploy, minimal_config, settings_for, user_data_documents

KERNEL = 1_796_000_000.0
"""When the node's kernel started (2026-11-30), in seconds since the epoch."""
PULL_STARTED = KERNEL + 178 + 41 + 12 + 55
NOW = PULL_STARTED + 130
GROUP = "gpu-cloud-demo-workers"


def node_lines(directory, monkeypatch) -> list[str]:
    """The lines a node writes from boot to two minutes into its image pull: boot 2m58s, agent 41s,
    mount 12s, gate 55s, then the server's pull started."""
    monkeypatch.setenv(boot_phases.DIRECTORY_ENV, str(directory))
    boot_phases.record("boot", KERNEL, KERNEL + 178)
    boot_phases.begin("agent", KERNEL + 178)
    boot_phases.begin("mount", KERNEL + 219)
    boot_phases.record("agent", KERNEL + 178, KERNEL + 219)
    boot_phases.record("mount", KERNEL + 219, KERNEL + 231)
    with boot_phases.timed("gate", clock=iter([KERNEL + 231, KERNEL + 286]).__next__):
        pass
    boot_phases.begin("pull", PULL_STARTED, container="server")
    return boot_phases.log_path().read_text(encoding="utf-8").splitlines()


class AtLaunchHook:
    """moto's Auto Scaling, except that its instances show Pending:Wait: moto puts a launched
    instance in service at once, where AWS holds it at the launch hook until the node's gate ends it."""

    def __init__(self, autoscaling):
        self.autoscaling = autoscaling

    def __getattr__(self, name):
        return getattr(self.autoscaling, name)

    def describe_auto_scaling_groups(self, **request):
        answer = self.autoscaling.describe_auto_scaling_groups(**request)
        for group in answer["AutoScalingGroups"]:
            for instance in group["Instances"]:
                instance["LifecycleState"] = "Pending:Wait"
        return answer


def booting_node(account, settings, lines: list[str]) -> str:
    """A node of the deployed group, its lines sent as its CloudWatch agent sends them (one event
    each, in order, timestamped when read)."""
    autoscaling = account.client("autoscaling")
    autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=1)
    [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"]
    [instance] = group["Instances"]
    logs = account.client("logs")
    sent = int(time.time() * 1000)  # CloudWatch Logs refuses events more than 2 hours ahead
    stream = boot_phase_log_stream(GROUP, instance["InstanceId"])
    logs.create_log_stream(logGroupName=job_log_group_name(settings.name_base), logStreamName=stream)
    logs.put_log_events(logGroupName=job_log_group_name(settings.name_base), logStreamName=stream, logEvents=[
        {"timestamp": sent + index, "message": line} for index, line in enumerate(lines)])
    return instance["InstanceId"]


@pytest.fixture
def now(monkeypatch):
    monkeypatch.setattr(node_phases, "time", types.SimpleNamespace(time=lambda: NOW))


WHERE = "pull server (2m10s so far), after boot 2m58s, agent 41s, mount 12s, gate 55s"


def test_the_node_writes_a_line_per_phase_started_or_ended_each_saying_all_it_knows(tmp_path, monkeypatch):
    lines = node_lines(tmp_path, monkeypatch)
    assert len(lines) == 8
    last = json.loads(lines[-1])
    assert (last["event"], last["phase"], last["running"]) == ("started", "pull:server", {"pull:server": PULL_STARTED})
    assert list(last["done"]) == ["agent", "boot", "gate", "mount"]
    assert node_phases.where_it_is(last, NOW) == WHERE
    assert node_phases.where_it_is(json.loads(lines[-2]), KERNEL + 300) == (
        "gate ended 14s ago, after boot 2m58s, agent 41s, mount 12s, gate 55s")


def test_the_nodes_cloudwatch_agent_sends_the_phase_lines_to_the_job_log_group(account):
    """The agent's config in each launch template's user data: the node's phase file, the stack's job
    log group (the node role may write under its prefix), one stream per instance."""
    settings = settings_for(minimal_config())
    deploy(settings, account)
    configs = [json.loads(entry["content"]) for document in user_data_documents(account)
               for entry in document["write_files"] if entry["path"] == layout.CLOUDWATCH_CONFIG_PATH]

    assert configs and all(config["logs"]["logs_collected"]["files"]["collect_list"] == [{
        "file_path": str(boot_phases.LOG), "log_group_name": job_log_group_name(settings.name_base),
        "log_stream_name": f"boot-phases/{GROUP}/{{instance_id}}", "timezone": "UTC"}] for config in configs)
    assert layout.BOOT_PHASE_LOG_PATH == str(boot_phases.LOG)
    groups = account.client("logs").describe_log_groups(logGroupNamePrefix=job_log_group_name(settings.name_base))
    assert job_log_group_name(settings.name_base) in [group["logGroupName"] for group in groups["logGroups"]], \
        "the stack creates the group the agent writes"


@pytest.mark.access_calls("person:notebookUser", "connect")
def test_connect_start_says_where_each_node_is_from_its_own_records(account, tmp_path, monkeypatch, now):
    settings = settings_for(minimal_config())
    deploy(settings, account)
    instance = booting_node(account, settings, node_lines(tmp_path, monkeypatch))
    said: list[str] = []
    clock = [0.0]
    monkeypatch.setattr("gpucloud.connect.time", types.SimpleNamespace(monotonic=lambda: clock[0]))

    with pytest.raises(ConnectError, match="has no node in service"):
        find_connection(settings, AtLaunchHook(account.client("autoscaling")), "workers", start=True, wait_seconds=1,
                        sleep=lambda seconds: clock.__setitem__(0, clock[0] + seconds), progress=said.append,
                        logs=account.client("logs"))

    assert said[0] == (f"waiting for a node of {GROUP} to pass its health gate: {instance} Pending:Wait (booting: "
                       f"boot, agent, mount and gate, its launch hook pending); boot phases: {WHERE}; on a node, "
                       "`gpucloud-node phases` names its boot phase")


@pytest.mark.access_calls("person:jobRunner", "logs")
def test_logs_of_a_job_not_yet_on_a_node_say_where_each_node_is_from_its_own_records(account, tmp_path, monkeypatch,
                                                                                   now):
    settings = settings_for(minimal_config())
    deploy(settings, account)
    instance = booting_node(account, settings, node_lines(tmp_path, monkeypatch))
    job = new_job(settings, "workers", ["python", "train.py"], nodes=1, job_id="workers-20261130120000-beef")
    monkeypatch.setattr(job_control, "find_job", lambda clients, settings, job_id: job)
    printed: list[str] = []

    job_control.logs(Clients(autoscaling=AtLaunchHook(account.client("autoscaling")), ec2=None, ssm=None, logs=account.client("logs"),
                             s3=None), settings, job.job_id, say=printed.append)

    assert printed == [f"job {job.job_id}: no output yet (it has not started on a node)",
                       f"  {instance} Pending:Wait (booting: boot, agent, mount and gate, its launch hook pending); "
                       f"boot phases: {WHERE}"]


def test_the_latest_line_is_known_by_its_content_whatever_order_the_events_come_in(tmp_path, monkeypatch):
    """Several lines share a time (boot ends as the agent starts; the mount starts, then the agent
    ends, at one tick): the last written still wins, in any order."""
    lines = [json.loads(line) for line in node_lines(tmp_path, monkeypatch)]
    for order in (lines, lines[::-1], lines[3:] + lines[:3]):
        assert node_phases._latest(order) == lines[-1]
    assert node_phases._latest(lines[:4]) == lines[3], "mount started, then agent ended, at one time"
    assert node_phases._latest([lines[1], lines[0]]) == lines[1], "boot ended, then agent started, at one time"
