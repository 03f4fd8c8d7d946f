"""The preflight's search across nodes (gpucloud.ops.preflight), replayed on the rounds recorded on
four H200s (tests/fixtures/gpu/preflight_*.json) and on made-up fleets of up to 16 nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dataclasses import replace

from gpucloud.ops.preflight import MAX_ROUNDS, Search, SetResult, Verdict, busbw_floor, load_floors, next_sets, search, verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"
HOST = "nvidia-h200-x4"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / f"preflight_{name}.json").read_text())


def host_floor(count: int) -> float | None:
    return busbw_floor(load_floors(), HOST, count)


def replay(run: dict):
    return search(run["nodes"], run["rounds"], host_floor)


def test_floors_take_the_entry_for_the_largest_node_count_not_above_the_set():
    floors = load_floors()
    assert busbw_floor(floors, "p5.48xlarge", 1) == 300
    assert busbw_floor(floors, "p5.48xlarge", 16) == 100
    assert busbw_floor(floors, HOST, 3) == 200
    assert busbw_floor(floors, "g5.2xlarge", 2) is None


def test_recorded_nvlink_runs_pass_in_one_round_as_two_by_two_and_four_by_one():
    record = recorded("nvlink")
    assert record["gpus"] == [f"GPU {index}: NVIDIA H200" for index in range(4)]
    for run in record["runs"]:
        state, verdict = replay(run)
        assert verdict.action == "pass" == run["verdict"]["action"]
        assert state.rounds == 1
        assert min(result["busbw_gbps"] for result in run["rounds"][0]) > 300


def test_recorded_sockets_fail_the_fabric_and_name_no_node():
    two_by_two, four_by_one = recorded("sockets")["runs"]
    assert max(result["busbw_gbps"] for run in (two_by_two, four_by_one) for result in run["rounds"][0]) < 5
    state, verdict = replay(two_by_two)
    assert verdict.action == "stop" and not verdict.culprits
    assert verdict.reason == ("127.0.0.1 and 127.0.0.2: below the bus-bandwidth floor, and no set of the job's nodes "
                              "reaches it: the fabric or NCCL's setup (TCP sockets?), not one node")
    state, verdict = replay(four_by_one)
    assert verdict.action == "stop" and state.rounds == 2, "the halves both fail: no node to blame"
    assert verdict.reason.startswith("127.0.0.1 and 127.0.0.2; 127.0.0.3 and 127.0.0.4: below the bus-bandwidth floor")
    assert [sorted({tuple(result["set"]) for result in round_}) for round_ in four_by_one["rounds"]] == [
        [("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")],
        [("127.0.0.1", "127.0.0.2"), ("127.0.0.3", "127.0.0.4")]]


def test_recorded_loaded_gpu_is_named_by_its_own_checks_and_by_bisection_of_the_fabric():
    record = recorded("loaded")
    checked, fabric = record["runs"]
    state, verdict = replay(checked)
    assert (verdict.action, list(verdict.culprits)) == ("replace", [record["loaded_node"]])
    assert "TFLOP/s bf16 matmul, below the H200 floor" in verdict.culprits["127.0.0.3"]
    state, verdict = replay(fabric)
    assert (verdict.action, list(verdict.culprits)) == ("replace", ["127.0.0.3"])
    assert verdict.culprits["127.0.0.3"].startswith("all_reduce with 127.0.0.1 (a node seen fast) below its floor")
    assert state.rounds == 3 and set(state.good) == {"127.0.0.1", "127.0.0.2", "127.0.0.4"}
    assert [sorted(tuple(result["set"]) for result in round_ if result["node"] == result["set"][0])
            for round_ in fabric["rounds"]] == [
        [("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")],
        [("127.0.0.1", "127.0.0.2"), ("127.0.0.3", "127.0.0.4")],
        [("127.0.0.1", "127.0.0.3"), ("127.0.0.2", "127.0.0.4")]]
    assert fabric["verdict"]["culprits"] == dict(verdict.culprits), "the device run decided as the replay does"


def test_launcher_environment_costs_no_bus_bandwidth():
    record = recorded("launcher_overhead")
    assert record["bytes"] == 4 << 30
    assert 0.95 <= record["comparison"]["launch_over_torchrun"] <= 1.05
    assert record["comparison"]["torchrun"] > 300


# ------------------------------------------------------------------------------------------------
# Made-up fleets: a node's figure is its set's slowest member's.


def nodes(count: int) -> list[str]:
    return [f"10.0.0.{index + 1}" for index in range(count)]


def fleet_round(sets, slow=(), slow_links=(), problems=None, set_problems=()):
    """Node results as `gpucloud-node preflight` prints them, for sets run at once."""
    results = []
    for members in sets:
        bad = any(node in slow for node in members) or any(set(link) <= set(members) for link in slow_links)
        for node in members:
            results.append({"node": node, "set": list(members), "busbw_gbps": 3.0 if bad else 350.0, "world_size": 8 * len(members),
                            "problems": list((problems or {}).get(node, [])), "set_problems": list(set_problems)})
    return results


def run_search(count: int, **faults):
    addresses = nodes(count)
    rounds = []
    state, verdict = search(addresses, rounds, host_floor)
    while verdict.action == "test":
        rounds.append(fleet_round(verdict.sets, **faults))
        state, verdict = search(addresses, rounds, host_floor)
    return state, verdict


@pytest.mark.parametrize("count", [3, 4, 5, 8, 13, 16])
def test_one_slow_node_is_named_within_the_round_bound(count):
    slow = nodes(count)[count // 2]
    state, verdict = run_search(count, slow={slow})
    assert (verdict.action, list(verdict.culprits)) == ("replace", [slow])
    assert state.rounds <= MAX_ROUNDS


def test_a_healthy_fleet_passes_in_one_round():
    state, verdict = run_search(16)
    assert verdict.action == "pass" and state.rounds == 1


def test_two_slow_nodes_in_different_halves_are_both_named():
    state, verdict = run_search(8, slow={"10.0.0.2", "10.0.0.7"})
    assert verdict.action == "replace" and set(verdict.culprits) == {"10.0.0.2", "10.0.0.7"}


def test_a_slow_link_between_two_fast_nodes_is_named_and_nothing_replaced():
    state, verdict = run_search(4, slow_links=[("10.0.0.3", "10.0.0.4")])
    assert verdict.action == "stop"
    assert verdict.culprits == {"10.0.0.3<->10.0.0.4": "slow together, each fast with a third node: the path between them"}


def test_a_node_that_fails_its_own_checks_is_named_without_bisection():
    state, verdict = run_search(8, problems={"10.0.0.5": ["GPU gate: GPU 2: ECC errors"]})
    assert (verdict.action, dict(verdict.culprits), state.rounds) == ("replace", {"10.0.0.5": "GPU gate: GPU 2: ECC errors"}, 1)


def test_most_nodes_failing_their_checks_is_no_node_s_fault():
    problems = {node: ["NCCL chose NET/Socket, not the OFI plugin"] for node in nodes(4)[:3]}
    state, verdict = run_search(4, problems=problems)
    assert verdict.action == "stop" and "3 of 4 nodes fail: the fault is common to them" in verdict.reason


def test_a_preflight_that_cannot_run_stops_with_the_reason():
    state, verdict = run_search(4, set_problems=["torchrun not found: no PyTorch on this node"])
    assert verdict.action == "stop" and state.rounds == 1, "no search round is spent on it"
    assert verdict.reason == "the preflight could not run: torchrun not found: no PyTorch on this node"


def test_the_search_gives_up_after_the_round_bound():
    addresses = nodes(16)
    rounds = []
    state, verdict = search(addresses, rounds, host_floor, max_rounds=2)
    while verdict.action == "test":
        rounds.append(fleet_round(verdict.sets, slow={"10.0.0.9"}))
        state, verdict = search(addresses, rounds, host_floor, max_rounds=2)
    assert verdict.action == "stop" and verdict.reason == "no single culprit after 2 rounds"
    assert len(rounds) == 2


def test_a_missing_node_result_fails_its_set():
    result = SetResult.of([{"node": "a", "set": ["a", "b"], "busbw_gbps": 350.0, "world_size": 2, "problems": []}])
    assert result.set_problems == ("no preflight result from b",)
    assert result.passes(100.0) is False


def test_partners_are_distinct_good_nodes_in_one_round():
    state, _ = search(nodes(4), [fleet_round([nodes(4)], slow={"10.0.0.4"}),
                                 fleet_round([nodes(4)[:2], nodes(4)[2:]], slow={"10.0.0.4"})], host_floor)
    assert next_sets(state) == [("10.0.0.1", "10.0.0.3"), ("10.0.0.2", "10.0.0.4")]


@pytest.mark.parametrize(("count", "position"), [(2, 0), (3, 0), (3, 2), (5, 0), (5, 4), (16, 0), (16, 15)])
def test_the_slow_node_is_named_wherever_it_stands(count, position):
    slow = nodes(count)[position]
    state, verdict = run_search(count, slow={slow})
    if count == 2:
        assert verdict.action == "stop", "two nodes that are slow together cannot tell which one is"
        assert "no set of the job's nodes reaches it" in verdict.reason
        return
    assert (verdict.action, list(verdict.culprits)) == ("replace", [slow])
    assert state.rounds <= MAX_ROUNDS


def test_a_named_node_waits_for_the_search_of_the_others_to_end():
    state, verdict = run_search(6, slow={"10.0.0.1", "10.0.0.6"})
    assert verdict.action == "replace" and set(verdict.culprits) == {"10.0.0.1", "10.0.0.6"}


def test_the_default_bound_is_five_rounds():
    pending = Search(tuple(nodes(16)), rounds=5, groups=(tuple(nodes(16)[:4]),))
    assert verdict(pending) == Verdict("stop", reason="no single culprit after 5 rounds")
    assert verdict(replace(pending, rounds=4)).action == "test"


def test_without_a_floor_a_set_passes_on_any_figure_and_fails_without_one():
    measured = SetResult(("a", "b"), 3.0, 16)
    assert measured.passes(None) is True
    assert replace(measured, busbw_gbps=None).passes(None) is False
    assert replace(measured, world_size=1).passes(100.0) is None


def test_one_node_below_its_own_floor_is_named_and_one_gpu_alone_passes():
    slow_alone = [{"node": "10.0.0.1", "set": ["10.0.0.1"], "busbw_gbps": 90.0, "world_size": 8, "problems": []}]
    state, found = search(["10.0.0.1"], [slow_alone], host_floor)
    assert (found.action, found.culprits) == ("replace", {"10.0.0.1": "all_reduce among its own GPUs below its floor: 90.0 GB/s"})
    one_gpu = [{"node": "10.0.0.1", "set": ["10.0.0.1"], "busbw_gbps": 0.0, "world_size": 1, "problems": []}]
    assert search(["10.0.0.1"], [one_gpu], host_floor)[1].action == "pass"


def test_a_lone_node_that_passes_alone_is_still_tested_with_a_partner():
    round_one = fleet_round([nodes(3)], slow={"10.0.0.3"})
    round_two = fleet_round([nodes(3)[:2]]) + fleet_round([nodes(3)[2:]])
    state, found = search(nodes(3), [round_one, round_two], host_floor)
    assert found.action == "test" and found.sets == (("10.0.0.1", "10.0.0.3"),)


def test_a_partner_test_that_timed_out_names_the_suspect_with_the_reason():
    state, _ = search(nodes(4), [fleet_round([nodes(4)], slow={"10.0.0.4"}),
                                 fleet_round([nodes(4)[:2], nodes(4)[2:]], slow={"10.0.0.4"})], host_floor)
    rounds = [fleet_round([nodes(4)], slow={"10.0.0.4"}), fleet_round([nodes(4)[:2], nodes(4)[2:]], slow={"10.0.0.4"}),
              fleet_round([("10.0.0.1", "10.0.0.3")]) + fleet_round([("10.0.0.2", "10.0.0.4")], set_problems=["timed out"])]
    state, found = search(nodes(4), rounds, host_floor)
    assert found.culprits == {"10.0.0.4": "all_reduce with 10.0.0.2 (a node seen fast) below its floor: timed out"}


def test_a_lone_half_waits_for_a_partner_rather_than_running_alone():
    state, _ = search(nodes(3), [fleet_round([nodes(3)], slow={"10.0.0.2"})], host_floor)
    assert next_sets(state) == [("10.0.0.1", "10.0.0.2")]


def test_every_recording_names_its_gpus_and_the_command_that_made_it():
    for name in ("nvlink", "sockets", "loaded", "launcher_overhead"):
        record = recorded(name)
        assert record["gpus"] == [f"GPU {index}: NVIDIA H200" for index in range(4)], name
        assert record["recorded_by"] == "python3 tests/node/gpu/record_preflight.py --out-dir $OUT", name
        assert "error" not in record, name
