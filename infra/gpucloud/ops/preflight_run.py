"""The fabric preflight over SSM Run Command: rounds of the job document's preflight actions on sets
of a group's in-service nodes, the search of ops/preflight.py between rounds, the culprit marked
Unhealthy, and a new set of nodes tested again, from the user's machine: `gpucloud preflight`
(acceptance of new capacity). The job supervisor runs the same search in AWS before a job's ranks
start (documents/job_supervisor_preflight.py), from the nodes' exit statuses (each node judges
the set's bus bandwidth against its type's floor itself).

A culprit is replaced by sending it `preflight-replace`: the node marks itself Unhealthy through the
watch's own path (node/replace.py), within the group's `maxReplacementsPerHour` breaker, so the
team's policy needs no SetInstanceHealth and a bad fabric cannot drain the fleet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.node.launcher import encode_command
from gpucloud.node.preflight import RESULT_MARKER
from gpucloud.ops.job_records import Clients, Clock, Job, JobError
from gpucloud.ops.nodes import Node
from gpucloud.ops.preflight import MAX_ROUNDS, busbw_floor, load_floors, search

LEVELS = {"quick": "preflight", "full": "preflight-full"}
"""`--preflight` level -> the job document's action of a first round; later rounds send `preflight-fabric`."""
TERMINAL = frozenset({"Success", "Failed", "Cancelled", "TimedOut"})
ROUND_TIMEOUT_S = {"quick": 240.0, "full": 900.0}
"""A round's SSM delivery and the node's own limits (node/preflight.py TIMEOUTS_S) with room to spare."""
MAX_REPLACEMENTS = 2
"""New node sets tested after replacing culprits before the preflight gives up."""
REPLACE_TIMEOUT_S = 300.0
"""How long a culprit's preflight-replace may take (its checkpoint save included) before it counts as not done."""


@dataclass
class PreflightOutcome:
    nodes: list[Node]
    """The nodes that passed (the job's set), or those of the last try."""
    passed: bool
    reason: str = ""
    tries: list[dict[str, Any]] = field(default_factory=list)
    """Per try: its nodes, each round's node results, the verdict and the replacements."""


def _parameters(job: Job, action: str, members: Sequence[Node]) -> dict[str, list[str]]:
    return {"action": [action], "job": [job.job_id], "nodes": [",".join(node.private_ip for node in members)],
            "port": [str(job.port)], "gpusPerNode": [str(job.gpus_per_node or "")], "image": [job.image or ""],
            "attempt": ["0"], "checkpointUri": [""], "commandB64": [""]}


def _send(clients: Clients, settings: StackSettings, members: Sequence[Node], parameters: Mapping[str, list[str]],
          comment: str) -> str:
    from gpucloud.naming import job_document_name, job_log_group_name

    return clients.ssm.send_command(
        InstanceIds=[node.instance_id for node in members], DocumentName=job_document_name(settings.name_base),
        Parameters=dict(parameters), Comment=comment, TimeoutSeconds=600,
        CloudWatchOutputConfig={"CloudWatchLogGroupName": job_log_group_name(settings.name_base),
                                "CloudWatchOutputEnabled": True},
    )["Command"]["CommandId"]


def node_result(invocation: Mapping[str, Any]) -> dict[str, Any] | None:
    """The node's JSON result: the last RESULT_MARKER line of its stdout."""
    lines = [line for line in invocation.get("StandardOutputContent", "").splitlines() if line.startswith(RESULT_MARKER)]
    return json.loads(lines[-1][len(RESULT_MARKER):]) if lines else None


def _wait(clients: Clients, sent: Mapping[str, Sequence[Node]], clock: Clock, timeout: float, poll: float) -> list[dict]:
    """Every node's result once its invocation ended (a node without one is left out: its set fails)."""
    from botocore.exceptions import ClientError

    deadline = clock.now() + timeout
    pending = {(command, node.instance_id) for command, members in sent.items() for node in members}
    results: list[dict] = []
    while pending and clock.now() < deadline:
        for command, instance in sorted(pending):
            try:
                invocation = clients.ssm.get_command_invocation(CommandId=command, InstanceId=instance)
            except ClientError as error:
                if error.response["Error"]["Code"] != "InvocationDoesNotExist":
                    raise
                continue
            if invocation["Status"] in TERMINAL:
                pending.discard((command, instance))
                found = node_result(invocation)
                results += [found] if found else []
        if pending:
            clock.sleep(poll)
    return results


def run_round(clients: Clients, settings: StackSettings, job: Job, sets: Sequence[Sequence[Node]], action: str,
              clock: Clock, timeout: float, poll: float) -> list[dict]:
    """Send one round (each set its own command, all at once) and collect the node results."""
    sent = {_send(clients, settings, members, _parameters(job, action, members),
                  f"gpucloud job {job.job_id} {action}"): list(members) for members in sets}
    return _wait(clients, sent, clock, timeout, poll)


def replace_culprits(clients: Clients, settings: StackSettings, job: Job, culprits: Mapping[str, Node],
                     reasons: Mapping[str, str], clock: Clock, poll: float) -> dict[str, str]:
    """Send `preflight-replace` to each culprit; its stdout says replaced or held (the breaker)."""
    outcomes = {}
    for address, node in culprits.items():
        parameters = {"action": ["preflight-replace"], "job": [job.job_id],
                      "commandB64": [encode_command(["--reason", reasons[address][:400]])]}
        command = _send(clients, settings, [node], parameters, f"gpucloud job {job.job_id} preflight-replace")
        outcomes[address] = "sent"
        deadline = clock.now() + REPLACE_TIMEOUT_S
        while clock.now() < deadline:
            invocation = _invocation(clients, command, node.instance_id)
            if invocation.get("Status") in TERMINAL:
                outcomes[address] = (invocation.get("StandardOutputContent", "").strip().splitlines() or ["failed"])[-1]
                break
            clock.sleep(poll)
    return outcomes


def _invocation(clients: Clients, command: str, instance: str) -> Mapping[str, Any]:
    from botocore.exceptions import ClientError

    try:
        return clients.ssm.get_command_invocation(CommandId=command, InstanceId=instance)
    except ClientError as error:
        if error.response["Error"]["Code"] == "InvocationDoesNotExist":
            return {}
        raise


def try_nodes(clients: Clients, settings: StackSettings, job: Job, nodes: Sequence[Node], level: str, clock: Clock,
               poll: float = 5.0, max_rounds: int = MAX_ROUNDS) -> dict[str, Any]:
    """Rounds on one set of nodes until the search's verdict: pass, replace (with culprits) or stop."""
    by_address = {node.private_ip: node for node in nodes}
    floors = load_floors()
    rounds: list[list[dict]] = []
    state, verdict = search(list(by_address), rounds, lambda count: None, max_rounds)
    while verdict.action == "test":
        action = LEVELS[level] if not rounds else "preflight-fabric"
        sets = [[by_address[address] for address in members] for members in verdict.sets]
        rounds.append(run_round(clients, settings, job, sets, action, clock, ROUND_TIMEOUT_S[level], poll))
        kinds = {result.get("instance_type", "") for result in rounds[0]}
        kind = kinds.pop() if len(kinds) == 1 else ""
        state, verdict = search(list(by_address), rounds, lambda count: busbw_floor(floors, kind, count), max_rounds)
    return {"nodes": [node.private_ip for node in nodes], "rounds": rounds,
            "verdict": {"action": verdict.action, "culprits": dict(verdict.culprits), "reason": verdict.reason}}


def preflight(clients: Clients, settings: StackSettings, job: Job, nodes: list[Node], level: str,
              say: Callable[[str], None], clock: Clock, rewait: Callable[[], list[Node] | None],
              poll: float = 5.0, max_replacements: int = MAX_REPLACEMENTS) -> PreflightOutcome:
    """Test the nodes; replace what the search names and test the new set, up to `max_replacements` times.
    `rewait()` waits for the group to have N nodes in service again (None: it did not)."""
    outcome = PreflightOutcome(nodes, False)
    for replacement in range(max_replacements + 1):
        tried = try_nodes(clients, settings, job, outcome.nodes, level, clock, poll)
        outcome.tries.append(tried)
        verdict = tried["verdict"]
        for line in figures(tried):
            say(line)
        if verdict["action"] == "pass":
            outcome.passed = True
            return outcome
        if verdict["action"] == "stop":
            outcome.reason = verdict["reason"]
            return outcome
        by_address = {node.private_ip: node for node in outcome.nodes}
        named = {address: by_address[address] for address in verdict["culprits"] if address in by_address}
        if replacement == max_replacements:
            break
        tried["replaced"] = replace_culprits(clients, settings, job, named, verdict["culprits"], clock, poll)
        say("preflight: replacing " + ", ".join(f"{address} ({node.instance_id}): {verdict['culprits'][address]} -> "
                                                 f"{tried['replaced'][address]}" for address, node in named.items()))
        if any(result != "replaced" for result in tried["replaced"].values()):
            outcome.reason = not_replaced(tried["replaced"]) + "; the preflight stops here"
            return outcome
        new = rewait()
        if new is None:
            outcome.reason = f"the group did not get back to {job.nodes} nodes in service after the replacement"
            return outcome
        outcome.nodes = new
    outcome.reason = f"the preflight still names a culprit after {max_replacements} replacement(s)"
    return outcome


def not_replaced(outcomes: Mapping[str, str]) -> str:
    """Why the culprits are still there: the breaker held them ("held"), or their preflight-replace
    did not end in time ("sent") or ended without replacing (its last line)."""
    held = [address for address, result in outcomes.items() if result == "held"]
    reasons = [f"the group's replacement breaker (health.maxReplacementsPerHour) held back replacing {', '.join(held)}"] if held else []
    for address, result in outcomes.items():
        if result == "sent":
            reasons.append(f"{address} was not replaced (its preflight-replace did not end within {REPLACE_TIMEOUT_S:g} s)")
        elif result not in ("held", "replaced"):
            reasons.append(f"{address} was not replaced (its preflight-replace: {result})")
    return "; ".join(reasons)


def figures(tried: Mapping[str, Any]) -> list[str]:
    """One line per round set: its nodes, bus bandwidth and any problem; then the verdict."""
    lines = [f"preflight round {number + 1}: {figure_line(result)}"
             for number, node_results in enumerate(tried["rounds"]) for result in node_results]
    verdict = tried["verdict"]
    lines.append(f"preflight verdict: {verdict['action']}" + (f" ({verdict['reason']})" if verdict["reason"] else "")
                 + "".join(f"; {name}: {why}" for name, why in verdict["culprits"].items()))
    return lines


def figure_line(result: Mapping[str, Any]) -> str:
    """One node's result: its set, bus bandwidth, network, each GPU's figures and any problem."""
    gpus = ", ".join(f"{gpu['matmul_tflops']:g} TFLOP/s {gpu['copy_gbps']:g} GB/s" for gpu in result.get("gpus", [])
                     if gpu.get("matmul_tflops") is not None)
    problems = [*result.get("problems", []), *result.get("set_problems", []), *result.get("fabric_problems", [])]
    return (f"{result['node']} in {'+'.join(result['set'])}: busbw {result.get('busbw_gbps')} GB/s, network "
            f"{result.get('network')}" + (f", GPUs {gpus}" if gpus else "") + (f"; {'; '.join(problems)}" if problems else ""))


def require_pass(outcome: PreflightOutcome) -> list[Node]:
    if not outcome.passed:
        raise JobError(f"preflight failed: {outcome.reason}")
    return outcome.nodes
