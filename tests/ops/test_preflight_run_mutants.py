"""`gpucloud preflight`'s rounds over Run Command (ops/preflight_run.py) at their edges, with a fake
SSM and a clock the test moves: how long a round and a replacement wait and how often they read,
what each round sends, which floors judge the rounds, what a node that never answers does to the
verdict, and the lines the user reads. The recorded runs through the same code are in
test_preflight_run.py."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from botocore.exceptions import ClientError

from gpucloud.node.preflight import RESULT_MARKER
from gpucloud.ops.job_records import Clock, Job
from gpucloud.ops.nodes import Node
from gpucloud.ops.preflight_run import figure_line, node_result, preflight

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"
SETTINGS = SimpleNamespace(name_base="gpu-cloud-vision-train")
NODES = [Node(f"i-0{index}", f"127.0.0.{index}") for index in range(1, 5)]
ADDRESS = {node.instance_id: node.private_ip for node in NODES}
JOB = Job(job_id="train-20261128000000-a1b2", stack="vision-train", group="train",
          group_name="gpu-cloud-vision-train-train", nodes=4, command=["torchrun", "train.py"], gpus_per_node=1)
HOST = "nvidia-h200-x4"


def node_figures(address: str, members, busbw: float = 350.0, problems=()) -> dict:
    return {"node": address, "set": list(members), "instance_type": HOST, "ok": not problems, "busbw_gbps": busbw,
            "world_size": len(members), "network": "Socket", "gpus": [], "problems": list(problems),
            "set_problems": [], "fabric_problems": []}


class Ssm:
    """Run Command as the preflight reads it. `answer(action, members, address)` gives a node's
    result (None: no result, its command failed; "running": not ended yet); `replace_output` is
    what preflight-replace prints (None: it never ends)."""

    def __init__(self, answer, replace_output="replaced\n", most_reads=20000):
        self.answer, self.replace_output, self.most_reads = answer, replace_output, most_reads
        self.sent: list[dict] = []
        self.reads = 0

    def send_command(self, **request):
        self.sent.append(request)
        return {"Command": {"CommandId": f"c-{len(self.sent)}"}}

    def get_command_invocation(self, CommandId, InstanceId):  # noqa: N803 - boto3's names
        self.reads += 1
        assert self.reads <= self.most_reads, "read again without waiting"
        parameters = self.sent[int(CommandId[2:]) - 1]["Parameters"]
        if parameters["action"] == ["preflight-replace"]:
            if self.replace_output is None:
                return {"Status": "InProgress", "StandardOutputContent": ""}
            return {"Status": "Success", "StandardOutputContent": self.replace_output}
        result = self.answer(parameters["action"][0], tuple(parameters["nodes"][0].split(",")), ADDRESS[InstanceId])
        if result == "running":
            return {"Status": "InProgress", "StandardOutputContent": ""}
        if result is None:
            return {"Status": "Failed", "StandardOutputContent": "Traceback ...\n"}
        return {"Status": "Success", "StandardOutputContent": RESULT_MARKER + json.dumps(result) + "\n"}


def fast(action, members, address):
    return node_figures(address, members)


def clock():
    now = [0.0]
    return Clock(now=lambda: now[0], sleep=lambda seconds: now.__setitem__(0, now[0] + seconds)), now


def run(ssm, level="quick", job=JOB, rewait=lambda: None, **options):
    ticking, now = clock()
    said: list[str] = []
    outcome = preflight(SimpleNamespace(ssm=ssm), SETTINGS, job, list(NODES), level, said.append, ticking, rewait, **options)
    return outcome, now[0], said


@pytest.mark.parametrize(("level", "options", "seconds", "reads"), [
    ("quick", {"poll": 1.0}, 240, 240), ("full", {"poll": 1.0}, 900, 900), ("quick", {}, 240, 48)])
def test_a_round_whose_nodes_never_answer_ends_at_its_time_limit_and_stops_the_preflight(level, options, seconds, reads):
    ssm = Ssm(lambda action, members, address: "running")
    outcome, elapsed, _ = run(ssm, level, **options)
    assert (elapsed, ssm.reads) == (seconds, reads * len(NODES)), "each node read once per poll until the limit"
    assert not outcome.passed
    assert outcome.reason == ("the preflight could not run: " + "; ".join(
        f"no preflight result from {node.private_ip}" for node in NODES))


def test_nodes_whose_commands_failed_without_a_result_stop_the_preflight_at_once():
    outcome, elapsed, said = run(Ssm(lambda action, members, address: None))
    assert not outcome.passed and elapsed == 0
    assert outcome.reason.startswith("the preflight could not run: no preflight result from 127.0.0.1; ")
    assert said == [f"preflight verdict: stop ({outcome.reason})"]


def test_a_round_sends_the_job_s_gpus_per_node_image_and_a_delivery_limit():
    ssm = Ssm(fast)
    assert run(ssm)[0].passed
    request = ssm.sent[0]
    assert (request["Parameters"]["gpusPerNode"], request["Parameters"]["image"]) == (["1"], [""])
    assert request["TimeoutSeconds"] == 600
    ssm = Ssm(fast)
    run(ssm, job=Job(**{**JOB.__dict__, "gpus_per_node": None, "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1"}))
    assert (ssm.sent[0]["Parameters"]["gpusPerNode"], ssm.sent[0]["Parameters"]["image"]) == (
        [""], ["123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1"])


def test_every_round_is_judged_against_the_floor_of_the_first_round_s_instance_type():
    """The first round is below the host's floor (NCCL on sockets); the next gives no results. Judged
    without a floor (no type in an empty round) the first round would have passed."""
    def answer(action, members, address):
        return node_figures(address, members, busbw=3.2) if action == "preflight" else None

    ssm = Ssm(answer)
    outcome, _, said = run(ssm)
    assert not outcome.passed
    assert [request["Parameters"]["action"][0] for request in ssm.sent] == ["preflight", "preflight-fabric", "preflight-fabric"]
    assert outcome.reason.startswith("127.0.0.1 and 127.0.0.2; 127.0.0.3 and 127.0.0.4: below the bus-bandwidth floor")
    assert said[0] == "preflight round 1: 127.0.0.1 in 127.0.0.1+127.0.0.2+127.0.0.3+127.0.0.4: busbw 3.2 GB/s, network Socket"


def named_third_node(action, members, address):
    return node_figures(address, members, problems=["GPU gate: GPU 0: Xid 79"] if address == "127.0.0.3" else ())


def test_a_replacement_that_never_answers_is_waited_for_three_hundred_seconds():
    ssm = Ssm(named_third_node, replace_output=None)
    outcome, elapsed, said = run(ssm, poll=1.0)
    replace_reads = ssm.reads - len(NODES)
    assert (replace_reads, elapsed) == (300, 300)
    assert outcome.tries[0]["replaced"] == {"127.0.0.3": "sent"}
    assert not outcome.passed
    assert outcome.reason == ("127.0.0.3 was not replaced (its preflight-replace did not end within 300 s); "
                              "the preflight stops here"), "the breaker did not hold it: the node never answered"


def test_only_a_replacement_the_breaker_held_is_blamed_on_the_breaker():
    ssm = Ssm(named_third_node, replace_output="held\n")
    assert run(ssm)[0].reason == ("the group's replacement breaker (health.maxReplacementsPerHour) held back "
                                  "replacing 127.0.0.3; the preflight stops here")
    ssm = Ssm(named_third_node, replace_output="")
    assert run(ssm)[0].reason == "127.0.0.3 was not replaced (its preflight-replace: failed); the preflight stops here"


def test_the_replacement_s_outcome_is_the_last_line_it_printed_and_a_late_invocation_is_read_again():
    class Late(Ssm):
        def get_command_invocation(self, CommandId, InstanceId):  # noqa: N803
            if self.sent[int(CommandId[2:]) - 1]["Parameters"]["action"] == ["preflight-replace"] and not self.late:
                self.late = True
                raise ClientError({"Error": {"Code": "InvocationDoesNotExist", "Message": "not yet"}}, "GetCommandInvocation")
            return super().get_command_invocation(CommandId, InstanceId)

    ssm = Late(named_third_node, replace_output="WARNING gpucloud.node: breaker 1 of 2\nreplaced\n")
    ssm.late = False
    outcome, _, said = run(ssm, rewait=lambda: None)
    assert ssm.late and outcome.tries[0]["replaced"] == {"127.0.0.3": "replaced"}
    assert outcome.reason == "the group did not get back to 4 nodes in service after the replacement"
    assert "preflight: replacing 127.0.0.3 (i-03): GPU gate: GPU 0: Xid 79 -> replaced" in said


def test_a_refused_read_of_the_replacement_is_not_swallowed():
    class Refusing(Ssm):
        def get_command_invocation(self, CommandId, InstanceId):  # noqa: N803
            if self.sent[int(CommandId[2:]) - 1]["Parameters"]["action"] == ["preflight-replace"]:
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetCommandInvocation")
            return super().get_command_invocation(CommandId, InstanceId)

    with pytest.raises(ClientError):
        run(Refusing(named_third_node))


def test_the_last_result_line_a_node_printed_is_its_result():
    stdout = RESULT_MARKER + '{"node": "first"}\nnoise\n' + RESULT_MARKER + '{"node": "last"}\n'
    assert node_result({"StandardOutputContent": stdout}) == {"node": "last"}


def test_a_figure_line_shows_each_gpu_s_figures_and_problems_only_where_there_are_some():
    recorded = json.loads((FIXTURES / "preflight_nvlink.json").read_text())["runs"][0]["rounds"][0][0]
    assert figure_line(recorded) == ("127.0.0.1 in 127.0.0.1+127.0.0.2: busbw 350.68 GB/s, network Socket, GPUs "
                                     "775.9 TFLOP/s 4225.6 GB/s, 763.1 TFLOP/s 4223.7 GB/s")
    failed = {"node": "a", "set": ["a", "b"], "gpus": [], "problems": ["GPU gate: Xid 79"],
              "set_problems": ["torchrun not found"], "fabric_problems": []}
    assert figure_line(failed) == "a in a+b: busbw None GB/s, network None; GPU gate: Xid 79; torchrun not found"


def test_a_node_whose_command_never_reached_it_does_not_hide_the_others_results():
    """i-01's agent never gets the command (InvocationDoesNotExist at every read): the other
    nodes' results still come back, and the round names only the silent node."""
    class Offline(Ssm):
        def get_command_invocation(self, CommandId, InstanceId):  # noqa: N803
            if InstanceId == "i-01":
                raise ClientError({"Error": {"Code": "InvocationDoesNotExist", "Message": "none"}}, "GetCommandInvocation")
            return super().get_command_invocation(CommandId, InstanceId)

    outcome, elapsed, said = run(Offline(fast))
    assert elapsed == 240 and not outcome.passed
    assert outcome.reason == "the preflight could not run: no preflight result from 127.0.0.1"
    assert [line.split(" in ")[0] for line in said[:-1]] == ["preflight round 1: 127.0.0.2", "preflight round 1: 127.0.0.3",
                                                             "preflight round 1: 127.0.0.4"]
