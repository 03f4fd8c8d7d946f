"""The preflight over SSM (gpucloud.ops.preflight_run): the node results recorded on four H200s come
back through a fake Run Command, as each node's stdout, for the sets the search asks for."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace

from gpucloud.node.preflight import RESULT_MARKER
from gpucloud.ops.job_records import Clock, Job
from gpucloud.ops.nodes import Node
from gpucloud.ops.preflight_run import figures, node_result, preflight, require_pass

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"
SETTINGS = SimpleNamespace(name_base="gpu-cloud-vision-train")
NODES = [Node(f"i-0{index}", f"127.0.0.{index}") for index in range(1, 5)]
JOB = Job(job_id="train-20261128000000-a1b2", stack="vision-train", group="train",
          group_name="gpu-cloud-vision-train-train", nodes=4, command=["torchrun", "train.py"], gpus_per_node=1)


def recorded_results(name: str, run: int) -> dict[tuple[tuple[str, ...], str], dict]:
    record = json.loads((FIXTURES / f"preflight_{name}.json").read_text())
    return {(tuple(result["set"]), result["node"]): result for round_ in record["runs"][run]["rounds"] for result in round_}


class FakeSsm:
    """Answers each node with the recorded result of the same set; `replace` answers preflight-replace."""

    def __init__(self, results, replace="replaced", healthy=None):
        self.results, self.replace, self.healthy = results, replace, healthy or {}
        self.sent: list[dict] = []

    def send_command(self, **request):
        self.sent.append(request)
        return {"Command": {"CommandId": f"c-{len(self.sent)}"}}

    def get_command_invocation(self, CommandId, InstanceId):  # noqa: N803 - boto3's names
        request = self.sent[int(CommandId[2:]) - 1]
        address = next(node.private_ip for node in [*NODES, *self.healthy.get("nodes", [])] if node.instance_id == InstanceId)
        if request["Parameters"]["action"] == ["preflight-replace"]:
            return {"Status": "Success" if self.replace == "replaced" else "Failed", "StandardOutputContent": self.replace + "\n"}
        members = tuple(request["Parameters"]["nodes"][0].split(","))
        result = self.results.get((members, address)) or self.healthy.get("results", {}).get((members, address))
        if result is None:
            return {"Status": "Failed", "StandardOutputContent": ""}
        return {"Status": "Success" if result["ok"] else "Failed",
                "StandardOutputContent": "torchrun noise\n" + RESULT_MARKER + json.dumps(result) + "\n"}


def clients(ssm):
    return SimpleNamespace(ssm=ssm)


def clock():
    now = [0.0]
    return Clock(now=lambda: now[0], sleep=lambda seconds: now.__setitem__(0, now[0] + seconds))


def healthy_set(nodes):
    """The recorded NVLink four-node round, answered for another set of four addresses."""
    template = next(iter(recorded_results("nvlink", 1).values()))
    members = tuple(node.private_ip for node in nodes)
    return {"nodes": nodes, "results": {(members, address): {**template, "node": address, "set": list(members)}
                                        for address in members}}


def test_the_loaded_node_is_named_replaced_and_the_new_set_passes():
    new = [NODES[0], NODES[1], NODES[3], Node("i-05", "127.0.0.5")]
    ssm = FakeSsm(recorded_results("loaded", 1), healthy=healthy_set(new))
    said = []

    outcome = preflight(clients(ssm), SETTINGS, JOB, list(NODES), "quick", said.append, clock(), rewait=lambda: new)

    assert outcome.passed and outcome.nodes == new
    assert require_pass(outcome) == new
    actions = [request["Parameters"]["action"][0] for request in ssm.sent]
    assert actions == ["preflight", "preflight-fabric", "preflight-fabric", "preflight-fabric", "preflight-fabric",
                       "preflight-replace", "preflight"]
    replace = ssm.sent[5]
    assert replace["InstanceIds"] == ["i-03"]
    reason = json.loads(base64.b64decode(replace["Parameters"]["commandB64"][0]))
    assert reason[0] == "--reason" and reason[1].startswith("all_reduce with 127.0.0.1 (a node seen fast) below its floor")
    assert outcome.tries[0]["replaced"] == {"127.0.0.3": "replaced"}
    assert any(line.startswith("preflight verdict: replace; 127.0.0.3: all_reduce with 127.0.0.1") for line in said)
    assert any("busbw 161.48 GB/s" in line for line in said), "every figure is reported"


def test_the_breaker_holding_the_replacement_stops_the_preflight():
    ssm = FakeSsm(recorded_results("loaded", 1), replace="held")
    outcome = preflight(clients(ssm), SETTINGS, JOB, list(NODES), "quick", lambda line: None, clock(),
                        rewait=lambda: pytest_fail("no new set without a replacement"))
    assert not outcome.passed
    assert outcome.reason.startswith("the group's replacement breaker (health.maxReplacementsPerHour) held back")


def test_sockets_stop_without_replacing_anything():
    ssm = FakeSsm(recorded_results("sockets", 1))
    outcome = preflight(clients(ssm), SETTINGS, JOB, list(NODES), "full", lambda line: None, clock(), rewait=lambda: None)
    assert not outcome.passed and "not one node" in outcome.reason
    assert [request["Parameters"]["action"][0] for request in ssm.sent] == ["preflight-full", "preflight-fabric",
                                                                            "preflight-fabric"]


def test_a_round_sends_each_set_its_own_command_with_the_job_s_port_and_no_checkpoint():
    ssm = FakeSsm(recorded_results("nvlink", 1))
    outcome = preflight(clients(ssm), SETTINGS, JOB, list(NODES), "quick", lambda line: None, clock(), rewait=lambda: None)
    assert outcome.passed
    [request] = ssm.sent
    assert request["InstanceIds"] == ["i-01", "i-02", "i-03", "i-04"]
    assert request["Parameters"]["nodes"] == ["127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4"]
    assert (request["Parameters"]["port"], request["Parameters"]["checkpointUri"]) == (["29500"], [""])
    assert request["CloudWatchOutputConfig"]["CloudWatchOutputEnabled"] is True


def test_a_node_that_printed_no_result_fails_its_set():
    assert node_result({"StandardOutputContent": "Traceback ...\n"}) is None
    assert node_result({"StandardOutputContent": RESULT_MARKER + '{"ok": true}\n'}) == {"ok": True}
    tried = {"rounds": [], "verdict": {"action": "stop", "reason": "the preflight could not run: no preflight result "
                                       "from 127.0.0.2", "culprits": {}}}
    assert figures(tried) == ["preflight verdict: stop (the preflight could not run: no preflight result from 127.0.0.2)"]


def pytest_fail(message):
    raise AssertionError(message)


def test_gpucloud_preflight_is_a_command_of_its_own():
    from gpucloud.cli import build_parser

    arguments = build_parser().parse_args(["preflight", "--stack", "vision-train", "--group", "train", "--nodes", "4",
                                           "--level", "full"])
    assert (arguments.group, arguments.nodes, arguments.level, arguments.node_timeout) == ("train", 4, "full", 1800.0)


def test_a_culprit_named_again_on_every_new_set_stops_after_two_replacements():
    ssm = FakeSsm(recorded_results("loaded", 1))
    said = []
    outcome = preflight(clients(ssm), SETTINGS, JOB, list(NODES), "quick", said.append, clock(), rewait=lambda: list(NODES))
    assert not outcome.passed
    assert outcome.reason == "the preflight still names a culprit after 2 replacement(s)"
    assert [request["Parameters"]["action"][0] for request in ssm.sent].count("preflight-replace") == 2
    assert len(outcome.tries) == 3
    assert said[0].startswith("preflight round 1: ")


class LateSsm(FakeSsm):
    """The first read of each invocation finds none yet (the agent has not got the command)."""

    def __init__(self, *args, code="InvocationDoesNotExist", **kwargs):
        super().__init__(*args, **kwargs)
        self.code, self.asked = code, set()

    def get_command_invocation(self, CommandId, InstanceId):  # noqa: N803
        from botocore.exceptions import ClientError

        if (CommandId, InstanceId) not in self.asked:
            self.asked.add((CommandId, InstanceId))
            raise ClientError({"Error": {"Code": self.code, "Message": "not yet"}}, "GetCommandInvocation")
        return super().get_command_invocation(CommandId, InstanceId)


def test_an_invocation_not_there_yet_is_read_again_and_other_errors_go_on():
    import pytest
    from botocore.exceptions import ClientError

    outcome = preflight(clients(LateSsm(recorded_results("nvlink", 1))), SETTINGS, JOB, list(NODES), "quick",
                        lambda line: None, clock(), rewait=lambda: None)
    assert outcome.passed
    with pytest.raises(ClientError):
        preflight(clients(LateSsm(recorded_results("nvlink", 1), code="AccessDeniedException")), SETTINGS, JOB,
                  list(NODES), "quick", lambda line: None, clock(), rewait=lambda: None)
