"""The job supervisor's preflight EXECUTED by moto's Step Functions interpreter (the fixtures of
test_job_supervisor.py): a fabric that passes lets the job start; one slow node is found by the
search on the job's first node (`preflight-decide`, the real node code on the scripted output),
replaced, and the job runs on the new set; a culprit still named after two replacement rounds stops
the job and tells the topic.

What the nodes' agents answer is scripted (gpucloud.testing.run_command `Agents`): each node of a
set exits as `gpucloud-node preflight` would (2 when the set's all_reduce misses its floor, with a
result line of figures on stdout), `preflight-decide` prints what the node code decides from the
statuses the supervisor sent it, and `preflight-replace` has Auto Scaling replace the node."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from gpucloud.documents.job_supervisor_preflight import decide_argv
from gpucloud.node.launcher import decode_command
from gpucloud.node.preflight import RESULT_MARKER
from gpucloud.node.preflight_command import decision
from gpucloud.node.preflight_search import EXIT_BELOW_FLOOR
from gpucloud.ops.job_records import Clock
from gpucloud.ops.supervised_jobs import follow, outcome
from test_job_supervisor import (  # noqa: F401 (aws and agents are fixtures)
    BUCKET,
    SETTINGS,
    agents,
    aws,
    denied_to_the_supervisor_role,
    detached,
    ended,
    launches,
    notifications,
)

SUPERVISOR = pytest.mark.access_calls("service:states.amazonaws.com", "jobSupervisor", settings=SETTINGS,
                                      principal="arn:${partition}:iam::${account}:role/gpu-cloud-${nameBase}-jobs-role")
"""The supervisor's own calls, its preflight's included, recorded for the plan's access check as its
role's (as test_job_supervisor.py's; tests/access/test_access_calls.py reads the marker here)."""
FAST_GBPS, SLOW_GBPS = 363.0, 3.3
"""The recorded four-H200 all_reduce over NVLink and with NCCL on sockets (tests/fixtures/gpu/preflight_*.json)."""


def commands(session, action: str) -> list[dict]:
    return [command for command in session.client("ssm").list_commands()["Commands"]
            if command["Parameters"].get("action") == [action]]


def fabric(session, slow: Callable[[str], bool]) -> tuple[Callable, Callable]:
    """Agents' (status, output) for nodes where a set is slow when it holds a `slow(instance id)` node."""
    replaced: set[str] = set()
    known: dict[str, str] = {}
    sent: dict[str, dict] = {}
    ec2, ssm = session.client("ec2"), session.client("ssm")

    def addresses() -> dict[str, str]:
        """Private address -> instance id, read again only for a node not seen yet."""
        known.update({instance["PrivateIpAddress"]: instance["InstanceId"]
                      for reservation in ec2.describe_instances()["Reservations"]
                      for instance in reservation["Instances"]})
        return known

    def code(parameters: dict, instance: str) -> int:
        action = parameters["action"][0]
        if action in ("preflight", "preflight-fabric"):
            addresses_now = known if all(address in known for address in parameters["nodes"][0].split(",")) else addresses()
            members = [addresses_now[address] for address in parameters["nodes"][0].split(",")]
            return EXIT_BELOW_FLOOR if len(members) > 1 and any(slow(member) for member in members) else 0
        if action == "preflight-replace" and instance not in replaced:
            replaced.add(instance)
            session.client("autoscaling").terminate_instance_in_auto_scaling_group(
                InstanceId=instance, ShouldDecrementDesiredCapacity=False)
        return 0

    def parameters_of(command: str) -> dict:
        if command not in sent:
            sent[command] = ssm.list_commands(CommandId=command)["Commands"][0]["Parameters"]
        return sent[command]

    def status(command, instance, calls):
        result = code(parameters_of(command), instance)
        return ("Success", 0) if result == 0 else ("Failed", result)

    def output(command, instance, parameters):
        action = parameters["action"][0]
        if action == "preflight-decide":
            return decision(parameters["nodes"][0], parameters["commandB64"][0])
        if action == "preflight-replace":
            return "replaced\n"
        if action in ("preflight", "preflight-fabric"):
            members = parameters["nodes"][0].split(",")
            busbw = SLOW_GBPS if code(parameters, instance) == EXIT_BELOW_FLOOR else FAST_GBPS
            node = {value: key for key, value in known.items()}[instance]
            return "torchrun: starting\n" + RESULT_MARKER + json.dumps(
                {"node": node, "set": members, "busbw_gbps": busbw, "problems": []}) + "\n"
        return None

    return status, output

def slow_node_of_the_first_round(aws, agents, position: int) -> None:
    """Script the agents so that the node at `position` of the first preflight's instance list is
    slow: chosen when the first status is asked, since the ids exist only once the job is sent."""
    chosen: dict[str, str] = {}
    agents.status, agents.output = fabric(aws, slow=lambda instance: instance == chosen.get("slow"))
    original_status = agents.status

    def status(command, instance, calls):
        chosen.setdefault("slow", commands(aws, "preflight")[0]["InstanceIds"][position])
        return original_status(command, instance, calls)

    agents.status = status



def test_a_passing_fabric_starts_the_job_without_a_search(aws, agents):
    agents.status, agents.output = fabric(aws, slow=lambda instance: False)
    clients, arn, job = detached(aws, nodes=4, preflight="quick")

    assert ended(clients, arn).status == "SUCCEEDED"
    assert [command["Parameters"]["action"] for command in aws.client("ssm").list_commands()["Commands"]] == [
        ["preflight"], ["launch"]]
    kept = aws.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=f"runs/vision-train/jobs/{job.job_id}/preflight/")
    assert sorted(item["Key"].rsplit("/", 2)[1] for item in kept["Contents"]) == ["round-0"] * 4, "every figure kept"


@pytest.mark.access_calls("person:jobRunner", "run")
@SUPERVISOR
def test_one_slow_node_is_named_replaced_and_the_job_runs_on_the_new_set(aws, agents):
    chosen: dict[str, str] = {}
    agents.status, agents.output = fabric(aws, slow=lambda instance: instance == chosen.get("slow"))
    original_status = agents.status

    def status(command, instance, calls):
        if not chosen:
            chosen["slow"] = commands(aws, "preflight")[0]["InstanceIds"][-1]
        return original_status(command, instance, calls)

    agents.status = status
    clients, arn, job = detached(aws, nodes=4, preflight="quick")

    execution = ended(clients, arn)

    assert execution.status == "SUCCEEDED", execution.cause
    slow = chosen["slow"]
    [replace] = commands(aws, "preflight-replace")
    assert replace["InstanceIds"] == [slow]
    [reason_flag, reason] = decode_command(replace["Parameters"]["commandB64"][0])
    assert reason_flag == "--reason" and "below its floor" in reason
    rounds = commands(aws, "preflight-fabric")
    assert rounds and all(len(command["InstanceIds"]) == 2 for command in rounds)  # halves, then partners
    assert len(commands(aws, "preflight")) == 2, "the first set, then the new set after the replacement"
    [launch] = launches(aws)
    assert slow not in launch["InstanceIds"] and len(launch["InstanceIds"]) == 4
    assert outcome(job, execution).exit_code == 0
    [(subject, _)] = notifications(aws)
    assert subject.endswith(": succeeded")
    kept = aws.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=f"runs/vision-train/jobs/{job.job_id}/preflight/")
    keys = [item["Key"] for item in kept["Contents"]]
    assert f"runs/vision-train/jobs/{job.job_id}/preflight/attempt-0/try-0/round-0/{slow}.txt" in keys
    figures = aws.client("s3").get_object(Bucket=BUCKET, Key=keys[0])["Body"].read().decode()
    assert RESULT_MARKER in figures and "busbw_gbps" in figures
    printed: list[str] = []
    assert follow(clients, job, arn, say=printed.append, clock=Clock(sleep=lambda seconds: None)).exit_code == 0
    shown = [line for line in printed if line.startswith("preflight attempt-0/try-0/round-0: ")]
    assert len(shown) == 4 and all(f"busbw {SLOW_GBPS} GB/s" in line for line in shown), "run prints every figure"
    passed = [line for line in printed if line.startswith("preflight attempt-0/try-1/round-0: ")]
    assert len(passed) == 4 and all(f"busbw {FAST_GBPS} GB/s" in line for line in passed), "the new set's too"
    assert denied_to_the_supervisor_role(aws, agents.made) == []


def test_a_culprit_named_after_two_replacement_rounds_stops_the_job_and_tells_the_topic(aws, agents):
    healthy: set[str] = set()
    agents.status, agents.output = fabric(aws, slow=lambda instance: instance not in healthy)
    original_status = agents.status

    def status(command, instance, calls):
        if not healthy:
            healthy.update(commands(aws, "preflight")[0]["InstanceIds"][:-1])
        return original_status(command, instance, calls)

    agents.status = status
    clients, arn, job = detached(aws, nodes=4, preflight="quick")

    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "preflight-failed"
    assert "still names a culprit after 2 replacement rounds" in execution.cause
    assert len(commands(aws, "preflight-replace")) == 2 and launches(aws) == []
    [(subject, message)] = notifications(aws)
    assert subject == f"gpu-cloud job {job.job_id}: preflight-failed" and "below its floor" in message
    assert outcome(job, execution).exit_code == 1


def test_a_node_failing_its_own_checks_is_replaced_without_a_fabric_round(aws, agents):
    failing: dict[str, str] = {}
    status, agents.output = fabric(aws, slow=lambda instance: False)

    def own_checks(command, instance, calls):
        parameters = aws.client("ssm").list_commands(CommandId=command)["Commands"][0]["Parameters"]
        if parameters["action"] == ["preflight-full"]:
            failing.setdefault("instance", instance)
            return ("Failed", 1) if instance == failing["instance"] else ("Success", 0)
        return status(command, instance, calls)

    agents.status = own_checks
    clients, arn, job = detached(aws, nodes=2, preflight="full")

    assert ended(clients, arn).status == "SUCCEEDED"
    assert commands(aws, "preflight-fabric") == []
    [replace] = commands(aws, "preflight-replace")
    assert replace["InstanceIds"] == [failing["instance"]]
    assert "its own checks failed" in decode_command(replace["Parameters"]["commandB64"][0])[1]
    assert failing["instance"] not in launches(aws)[0]["InstanceIds"]


def test_the_decide_step_gets_every_round_s_statuses_as_base64_of_a_json_argv(aws, agents):
    slow_node_of_the_first_round(aws, agents, 0)
    clients, arn, job = detached(aws, nodes=3, preflight="quick")
    ended(clients, arn)

    decides = commands(aws, "preflight-decide")
    first = decides[0]
    argv = json.loads(base64.b64decode(first["Parameters"]["commandB64"][0]))
    assert argv[0] == "--instance-ids" and argv[2] == "--rounds"
    [round_zero] = json.loads(argv[3])
    assert sorted(round_zero) == sorted(f"{instance}={EXIT_BELOW_FLOOR}" for instance in json.loads(argv[1]))
    assert first["InstanceIds"] == [json.loads(argv[1])[0]], "the job's first node decides"
    assert base64.b64decode(first["Parameters"]["commandB64"][0]).decode() == decide_argv(
        json.loads(argv[1]), json.loads(argv[3])), "what search_rounds measures"
    last = json.loads(base64.b64decode(decides[-1]["Parameters"]["commandB64"][0]))
    assert json.loads(last[3])[0] == round_zero and len(json.loads(last[3])) == len(decides), "every round so far"


def test_two_nodes_slow_together_stop_on_the_fabric_without_replacing(aws, agents):
    agents.status, agents.output = fabric(aws, slow=lambda instance: True)
    clients, arn, job = detached(aws, nodes=2, preflight="quick")

    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "preflight-failed"
    assert "the fabric or NCCL's setup" in execution.cause
    assert commands(aws, "preflight-replace") == [] and launches(aws) == []


def test_a_search_longer_than_the_decide_step_s_input_holds_stops_through_the_topic(aws, agents, monkeypatch):
    """On many nodes the rounds' statuses outgrow States.Base64Encode's 10,000 characters; the
    supervisor stops before that, through the topic (documents/job_supervisor_preflight.search_rounds)."""
    import gpucloud.documents.job_supervisor as supervisor

    monkeypatch.setattr(supervisor, "search_rounds", lambda nodes: 1)
    slow_node_of_the_first_round(aws, agents, -1)
    clients, arn, job = detached(aws, nodes=4, preflight="quick")

    execution = ended(clients, arn)

    assert execution.status == "FAILED" and execution.error == "preflight-failed"
    assert "a search on 4 nodes holds 1 rounds in the supervisor: run gpucloud preflight" in execution.cause
    assert len(commands(aws, "preflight-decide")) == 1 and launches(aws) == []
    [(subject, _)] = notifications(aws)
    assert subject.endswith(": preflight-failed")
