"""`preflight-decide`, the job supervisor's search on the job's first node: the rounds replayed from
each node's exit status alone (node/preflight_search.py), the verdict the supervisor parses, and
the exit status a node's preflight result gives (node/preflight.py)."""

from __future__ import annotations

import json

import pytest

from gpucloud.node.launcher import decode_command, encode_command
from gpucloud.node.preflight import node_exit_status
from gpucloud.node.preflight_command import decision
from gpucloud.node.preflight_search import EXIT_BELOW_FLOOR, EXIT_NOT_RUN, STDOUT_LIMIT, SetResult, decide, replay_statuses

NODES = ("10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4")
IDS = ("i-1", "i-2", "i-3", "i-4")


def statuses(codes: dict[str, int]) -> list[str]:
    return [f"{instance}={code}" for instance, code in codes.items()]


def slow_set(members, slow="i-4") -> dict[str, int]:
    return {instance: EXIT_BELOW_FLOOR if slow in members and len(members) > 1 else 0 for instance in members}


def play(slow: str = "i-4") -> list[dict]:
    """Decide, send the sets it asks for (each slow when it holds `slow`), until it stops asking."""
    rounds: list[list[str]] = []
    answers = []
    while True:
        answer = decide(NODES, IDS, rounds, encode=encode_command)
        answers.append(answer)
        if answer["action"] != "test" and rounds:
            return answers
        sets = [item["instanceIds"] for item in answer["sets"]] if rounds else [list(IDS)]
        rounds.append([item for members in sets for item in statuses(slow_set(members, slow))])


@pytest.mark.parametrize("slow", IDS)
def test_the_slow_node_is_named_from_exit_statuses_alone_wherever_it_stands(slow):
    answers = play(slow)

    last = answers[-1]
    address = NODES[IDS.index(slow)]
    assert last["action"] == "replace" and [item["instanceId"] for item in last["replace"]] == [slow]
    [item] = last["replace"]
    assert item["node"] == address and decode_command(item["commandB64"])[0] == "--reason"
    assert "below its floor" in last["culprits"][address] and len(answers) <= 4


def test_each_test_round_names_its_sets_by_instance_id_and_nodes_parameter():
    first = decide(NODES, IDS, [statuses({instance: EXIT_BELOW_FLOOR for instance in IDS})])
    assert first["action"] == "test"
    assert first["sets"] == [{"instanceIds": ["i-1", "i-2"], "nodes": "10.0.1.1,10.0.1.2"},
                             {"instanceIds": ["i-3", "i-4"], "nodes": "10.0.1.3,10.0.1.4"}]


def test_a_passing_round_passes_and_a_set_that_could_not_run_stops():
    assert decide(NODES, IDS, [statuses({instance: 0 for instance in IDS})])["action"] == "pass"
    stopped = decide(NODES, IDS, [statuses({"i-1": EXIT_NOT_RUN, "i-2": 0, "i-3": 0, "i-4": 0})])
    assert stopped["action"] == "stop" and "could not run on 10.0.1.1" in stopped["reason"]


def test_a_node_without_a_status_fails_its_set():
    result = SetResult.of_statuses(NODES[:2], {"10.0.1.1": 0, "10.0.1.2": -1})
    assert result.passes(None) is False and result.set_problems == ("no preflight result from 10.0.1.2 (exit -1)",)


def test_a_node_failing_its_own_checks_is_named_in_the_first_round():
    answer = decide(NODES, IDS, [statuses({"i-1": 0, "i-2": 1, "i-3": 0, "i-4": 0})], encode=encode_command)
    assert answer["action"] == "replace" and [item["instanceId"] for item in answer["replace"]] == ["i-2"]


def test_the_replay_uses_the_sets_the_search_asked_for():
    state, verdict = replay_statuses(NODES, IDS, [statuses({instance: EXIT_BELOW_FLOOR for instance in IDS}),
                                                  statuses(slow_set(["i-1", "i-2"]) | slow_set(["i-3", "i-4"]))])
    assert state.good == ("10.0.1.1", "10.0.1.2") and verdict.action == "test"


def test_the_verdict_is_json_without_a_trailing_newline_and_fits_the_output_the_supervisor_reads():
    options = encode_command(["--instance-ids", json.dumps(list(IDS)), "--rounds", json.dumps([
        statuses({instance: 0 for instance in IDS})])])
    text = decision(",".join(NODES), options)
    assert json.loads(text)["action"] == "pass" and not text.endswith("\n") and len(text) <= STDOUT_LIMIT


@pytest.mark.parametrize(("result", "status"), [
    ({"problems": ["GPU gate: Xid 79"], "set_problems": ["torchrun not found"], "fabric_problems": ["below"]}, 1),
    ({"problems": [], "set_problems": ["torchrun not found"], "fabric_problems": ["below"]}, 3),
    ({"problems": [], "set_problems": [], "fabric_problems": ["below"]}, 2),
    ({"problems": [], "set_problems": [], "fabric_problems": []}, 0),
])
def test_a_node_s_exit_status_says_its_own_problem_first_then_the_set_s(result, status):
    assert node_exit_status(result) == status


@pytest.mark.parametrize("nodes", [1, 4, 16, 64, 70, 100, 128])
def test_the_rounds_the_supervisor_sends_fit_base64encode_and_one_more_would_not(nodes):
    """The decide step's argv as the supervisor builds it (JsonToString of JSON text, so each id
    quoted twice over) with every node tested in every round at the longest status, a three-digit
    exit status (`=124`, a step that timed out)."""
    from gpucloud.documents.job_supervisor_preflight import BASE64_INPUT_LIMIT, MAX_ROUNDS, search_rounds
    from gpucloud.node.preflight_search import MAX_ROUNDS as SEARCH_ROUNDS

    def argv_length(rounds: int) -> int:
        ids = [f"i-{index:017x}" for index in range(nodes)]
        text = ",".join(json.dumps([f"{instance}=124" for instance in ids], separators=(",", ":")) for _ in range(rounds))
        return len(json.dumps(["--instance-ids", json.dumps(ids, separators=(",", ":")), "--rounds", f"[{text}]"],
                              separators=(",", ":")))

    fitting = search_rounds(nodes)
    assert MAX_ROUNDS == SEARCH_ROUNDS
    assert argv_length(fitting) <= BASE64_INPUT_LIMIT
    assert fitting == MAX_ROUNDS or argv_length(fitting + 1) > BASE64_INPUT_LIMIT
