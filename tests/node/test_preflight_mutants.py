"""The fabric preflight's decisions at their edges, where the mutation runner found them untested:
one node's verdict (node/preflight.py: a figure at its floor, which sets have a fabric to judge,
a wrong sum, an EFA type with one device, fi_info that fails, the time limits) and the search
across nodes (node/preflight_search.py: a set at its floor, when most nodes are to blame, whom a
suspect is paired with, what a culprit's reason says, the output the supervisor can read)."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import botocore
import pytest

from gpucloud.node.commands import CommandResult
from gpucloud.node.launcher import decode_command, encode_command
from gpucloud.node.preflight import (
    Preflight,
    PreflightSpec,
    fabric_problem,
    load_floors,
    local_problems,
    network_problem,
    report,
    worker_argv,
    worker_status_problem,
)
from gpucloud.node.preflight_search import (
    EXIT_BELOW_FLOOR,
    STDOUT_LIMIT,
    SetResult,
    decide,
    next_sets,
    search,
)

HOST = "nvidia-h200-x4"
"""The recording host: its floor is 200 GB/s for two or three nodes, 250 for one or four."""
NODES = ("10.0.1.11", "10.0.1.12")


def set_result(busbw: float | None, world: int | None, nodes: int = 2, kind: str = HOST) -> dict:
    return {"set": [f"10.0.1.{index}" for index in range(nodes)], "instance_type": kind, "busbw_gbps": busbw,
            "world_size": world}


# ------------------------------------------------------------------------------------------------
# One node (node/preflight.py)


def test_a_set_at_its_floor_passes_and_just_below_it_fails():
    floors = load_floors()
    assert fabric_problem(set_result(200.0, 4), floors) is None
    assert fabric_problem(set_result(199.9, 4), floors) == ("all_reduce bus bandwidth 199.9 GB/s across 2 node(s) is "
                                                            "below the nvidia-h200-x4 floor of 200 GB/s")


def test_two_ranks_have_a_fabric_to_judge_and_one_rank_has_none():
    floors = load_floors()
    assert fabric_problem(set_result(3.2, 2), floors) is not None, "two nodes of one GPU each"
    assert fabric_problem(set_result(0.0, 1, nodes=1), floors) is None, "one GPU alone moves nothing over a fabric"
    assert fabric_problem(set_result(None, 2), floors) is None, "no figure: the set's problem says why"


def gpu(value: float, key: str = "matmul_tflops", name: str = "NVIDIA H200", rank: int = 0) -> dict:
    return {"local_rank": rank, "gpu": name, key: value}


def test_a_gpu_at_its_model_s_floor_passes():
    floors = load_floors()
    assert local_problems([gpu(450.0), gpu(2800.0, "copy_gbps")], floors) == []
    assert len(local_problems([gpu(449.9), gpu(2799.9, "copy_gbps")], floors)) == 2


def test_a_gpu_of_a_model_without_floors_does_not_stop_the_others_being_judged():
    problems = local_problems([gpu(1.0, name="NVIDIA Made Up"), gpu(100.0, rank=1)], load_floors())
    assert [problem.split(":")[0] for problem in problems] == ["GPU 1 (NVIDIA H200)"]


def test_sockets_fail_a_type_with_a_single_efa_device():
    assert "NET/Socket" in network_problem("Socket", 1, 2)


def test_each_level_s_time_limits_the_torchrun_step_and_leaves_the_worker_ten_seconds_less():
    """The worker's NCCL timeout ends before `timeout` kills it, so a hang is reported by the worker."""
    spec = PreflightSpec("j", NODES, 29500)
    quick = worker_argv(spec, Path("out"), Path("w.py"))
    full = worker_argv(PreflightSpec("j", NODES, 29500, level="full"), Path("out"), Path("w.py"))
    assert (quick[:4], quick[-2:]) == (["timeout", "-k", "10", "100"], ["--timeout-s", "90"])
    assert (full[:4], full[-2:]) == (["timeout", "-k", "10", "600"], ["--timeout-s", "590"])
    assert "within 600 s" in worker_status_problem(124, "full")


class Launch:
    def __init__(self, ranks: list[dict]) -> None:
        self.ranks = ranks

    def __call__(self, argv, environment) -> int:
        out = Path(argv[argv.index("--out") + 1])
        for item in self.ranks:
            (out / f"rank-{item['rank']}.json").write_text(json.dumps(item))
        return 0


def rank(index: int, **figures) -> dict:
    return {"rank": index, "local_rank": index, "world_size": 4, "gpu": "NVIDIA H200", "matmul_tflops": 700.0,
            "copy_gbps": 4000.0, "seconds": 2.0, **figures}


def run_preflight(tmp_path, ranks, checks=("local", "fabric"), kind=HOST, run=None) -> dict:
    spec = PreflightSpec("j", ("127.0.0.1", "127.0.0.2"), 29500, checks=checks, instance_type=kind)
    return Preflight(spec, "127.0.0.1", tmp_path, lambda: type("Report", (), {"problems": []})(),
                     run or (lambda argv, timeout_s, env=None: pytest.fail("no fi_info on a type without EFA")),
                     Launch(ranks), load_floors())()


def sweep(busbw: float) -> list[dict]:
    return [{"bytes": 1 << 30, "busbw_gbps": busbw}]


def test_a_wrong_all_reduce_sum_fails_the_set_and_the_node_exits_3(tmp_path, capsys):
    result = run_preflight(tmp_path, [rank(0, correct=True, sweep=sweep(350.0)), rank(1, correct=False, sweep=sweep(350.0))])
    assert result["set_problems"] == ["all_reduce gave a wrong sum"] and result["correct"] is False
    assert not result["ok"] and result["problems"] == []
    assert report(result, {}, tmp_path, tmp_path / "readings.prom") == 3


def test_a_local_round_without_an_all_reduce_is_not_a_wrong_sum(tmp_path):
    result = run_preflight(tmp_path, [rank(0), rank(1)], checks=("local",))
    assert result["ok"] and result["set_problems"] == [] and result["correct"] is True


def test_fi_info_gets_thirty_seconds_and_a_failing_fi_info_fails_the_node(tmp_path):
    limits = []

    def hung(argv, timeout_s, env=None):
        limits.append(timeout_s)
        return CommandResult(tuple(argv), None, timed_out=True)

    result = run_preflight(tmp_path, [rank(0, correct=True, sweep=sweep(350.0))], kind="p5.48xlarge", run=hung)
    assert limits == [30.0]
    assert result["problems"][0] == "EFA: /opt/amazon/efa/bin/fi_info did not answer within 30 s"
    assert result["efa_devices"] is None and not result["ok"]


def test_the_node_s_problems_are_logged_and_unwritable_readings_do_not_change_its_verdict(tmp_path, caplog, capsys):
    result = {"job": "j", "level": "quick", "ok": False, "set": ["a", "b"], "gpus": [], "busbw_gbps": 3.1,
              "problems": ["GPU gate: Xid 79"], "set_problems": ["all_reduce gave a wrong sum"],
              "fabric_problems": ["below the floor"]}
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    with caplog.at_level(logging.WARNING, logger="gpucloud.node.preflight"):
        assert report(result, {}, tmp_path, blocked / "readings.prom") == 1
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith(f"could not write the preflight readings to {blocked / 'readings.prom'}")
    assert messages[1:] == ["preflight: GPU gate: Xid 79", "preflight: all_reduce gave a wrong sum",
                            "preflight: below the floor"]
    assert capsys.readouterr().out.startswith("GPUCLOUD-PREFLIGHT {")


# ------------------------------------------------------------------------------------------------
# Across nodes (node/preflight_search.py)


def nodes(count: int) -> list[str]:
    return [f"10.0.0.{index + 1}" for index in range(count)]


def host_floor(count: int) -> float | None:
    from gpucloud.node.preflight import busbw_floor

    return busbw_floor(load_floors(), HOST, count)


def fleet_round(sets, slow=(), problems=None, busbw=None):
    results = []
    for members in sets:
        figure = busbw if busbw is not None else (3.0 if any(node in slow for node in members) else 350.0)
        results += [{"node": node, "set": list(members), "busbw_gbps": figure, "world_size": len(members),
                     "problems": list((problems or {}).get(node, []))} for node in members]
    return results


def test_a_set_exactly_at_its_floor_passes():
    assert SetResult(("a", "b"), 200.0, 2).passes(200.0) is True
    assert SetResult(("a", "b"), 199.99, 2).passes(200.0) is False


@pytest.mark.parametrize(("count", "failing", "action"), [(2, 2, "stop"), (3, 1, "replace"), (3, 2, "stop"),
                                                           (4, 2, "replace"), (4, 3, "stop"), (5, 2, "replace"),
                                                           (5, 3, "stop")])
def test_more_than_half_the_nodes_failing_their_own_checks_is_no_node_s_fault(count, failing, action):
    problems = {node: ["NCCL chose NET/Socket, not the OFI plugin"] for node in nodes(count)[:failing]}
    _, found = search(nodes(count), [fleet_round([nodes(count)], problems=problems)], host_floor)
    assert found.action == action
    if action == "stop":
        assert found.reason.startswith(f"{failing} of {count} nodes fail: the fault is common to them")
    else:
        assert set(found.culprits) == set(nodes(count)[:failing])


def test_with_no_node_seen_fast_a_suspect_is_paired_with_a_lone_suspect_of_another_group_once():
    """Three nodes below the floor, then the pair of the first two too: the third, never tested
    with another node, is the first one's partner, and nobody is in two sets of one round."""
    addresses = nodes(3)
    rounds = [fleet_round([addresses], busbw=3.0), fleet_round([addresses[:2]], busbw=3.0)]
    state, found = search(addresses, rounds, host_floor)
    assert state.groups == (("10.0.0.1", "10.0.0.2"), ("10.0.0.3",)) and state.good == ()
    assert next_sets(state) == [("10.0.0.3", "10.0.0.1")]
    assert found.action == "test" and found.sets == (("10.0.0.3", "10.0.0.1"),)


def test_culprits_are_replaced_while_a_pair_nobody_can_partner_waits():
    """Both halves miss the floor and the second half's nodes fail their own checks (NCCL on
    sockets): those two are replaced, rather than stopping as if no node were to blame."""
    addresses = nodes(4)
    rounds = [fleet_round([addresses], busbw=3.0),
              fleet_round([addresses[:2], addresses[2:]], busbw=3.0,
                          problems={node: ["NCCL chose NET/Socket"] for node in addresses[2:]})]
    state, found = search(addresses, rounds, host_floor)
    assert state.groups == (("10.0.0.1", "10.0.0.2"),) and next_sets(state) == []
    assert (found.action, set(found.culprits)) == ("replace", {"10.0.0.3", "10.0.0.4"})


def ids(count: int) -> list[str]:
    return [f"i-{index + 1}" for index in range(count)]


def test_a_culprit_found_from_exit_statuses_alone_points_to_the_job_record_for_its_figures():
    """The supervisor's search has only exit statuses: the reason it sends to preflight-replace
    says where the figures are, not that there are none."""
    slow = "i-3"
    rounds = [[f"{instance}={EXIT_BELOW_FLOOR}" for instance in ids(3)],
              ["i-1=0", "i-2=0"]]
    answer = decide(nodes(3), ids(3), rounds, encode=encode_command)
    assert answer["action"] == "replace" and [item["instanceId"] for item in answer["replace"]] == [slow]
    why = ("all_reduce with 10.0.0.1, 10.0.0.2 (nodes seen fast) below its floor: each node's figures are in the "
           "job record")
    assert answer["culprits"] == {"10.0.0.3": why}
    assert list(decode_command(answer["replace"][0]["commandB64"])) == ["--reason", why]


def test_a_set_with_no_figure_and_no_problem_says_so_in_its_culprit_s_reason():
    alone = [{"node": "10.0.0.1", "set": ["10.0.0.1"], "busbw_gbps": None, "world_size": 8, "problems": []}]
    _, found = search(["10.0.0.1"], [alone], host_floor)
    assert found.culprits == {"10.0.0.1": "all_reduce among its own GPUs below its floor: no figure"}


def test_the_verdict_limit_is_what_get_command_invocation_returns_of_stdout():
    """Run Command keeps the first 24,000 characters (botocore's SSM model: StandardOutputContent max)."""
    model = Path(botocore.__file__).parent / "data" / "ssm" / "2014-11-06" / "service-2.json.gz"
    shapes = json.loads(gzip.decompress(model.read_bytes()))["shapes"]
    assert STDOUT_LIMIT == shapes["StandardOutputContent"]["max"] == 24000


def test_a_round_of_which_no_node_answered_stops_the_search_with_the_reason():
    """Every node's command failed or ran past the round's limit: no result to group by set."""
    state, found = search(nodes(2), [[]], host_floor)
    assert (found.action, state.rounds) == ("stop", 1)
    assert found.reason == "the preflight could not run: no preflight result from 10.0.0.1; no preflight result from 10.0.0.2"


def test_a_half_of_which_no_node_answered_fails_as_its_set():
    addresses = nodes(4)
    rounds = [fleet_round([addresses], busbw=3.0), fleet_round([addresses[:2]])]
    state, found = search(addresses, rounds, host_floor)
    assert state.good == ("10.0.0.1", "10.0.0.2")
    assert state.failed[-1] == (("10.0.0.3", "10.0.0.4"), "no preflight result from 10.0.0.3; no preflight result from 10.0.0.4")
    assert found.sets == (("10.0.0.1", "10.0.0.3"), ("10.0.0.2", "10.0.0.4"))
