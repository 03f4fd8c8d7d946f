"""The fabric preflight's search across a job's nodes: pass, the sets to test next, the node (or
link) to replace, or a stop with the reason. Pure functions of the nodes' results, standard library
only, so it runs in two places: `gpucloud preflight` (ops/preflight.py re-exports it) and the job
supervisor's `preflight-decide` step on the job's first node (node/preflight_command.py), which
replays the rounds from each node's exit status (`decide`).

A round tests sets of nodes at once, each set its own all_reduce. The first round is every node of
the job, with each node's own checks. A node whose own checks fail is named at once. When the set
misses its bus-bandwidth floor, the search bisects: a failing group is split in halves, then each
node of a failing pair is tested with a node already seen good (a different one each, in the same
round), which names the slow node; a pair that is slow together while each is fast with a third
node names the link between them. When every set down to pairs fails and none passes, the fault is
the fabric or NCCL's setup, not one node, and the search stops; it stops too after `max_rounds`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

MAX_ROUNDS = 5
"""A first round, up to three halvings (16 nodes) and a round of partner tests."""
EXIT_NODE_PROBLEM = 1
"""`gpucloud-node preflight`'s exit status when the node's own checks failed (GPU gate, EFA, NCCL's
network, its GPUs' matmul or copy)."""
EXIT_BELOW_FLOOR = 2
"""Its exit status when its own checks passed and the set's all_reduce missed its floor."""
EXIT_NOT_RUN = 3
"""Its exit status when the set's test could not run (no torchrun, a timeout, a wrong sum)."""


@dataclass(frozen=True)
class SetResult:
    """One set's all_reduce, and what each of its nodes found on itself."""

    nodes: tuple[str, ...]
    busbw_gbps: float | None
    world_size: int | None
    node_problems: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    set_problems: tuple[str, ...] = ()
    judged: bool | None = None
    """The nodes' own verdict on the set's bandwidth against its floor, where only their exit
    statuses came back (`of_statuses`); None: judge `busbw_gbps` here."""

    @classmethod
    def of(cls, results: Sequence[Mapping[str, Any]]) -> SetResult:
        """From the set's node results (missing nodes' results count as a set problem)."""
        nodes = tuple(results[0]["set"])
        seen = {result["node"] for result in results}
        bandwidths = [result["busbw_gbps"] for result in results if result.get("busbw_gbps") is not None]
        set_problems = sorted({problem for result in results for problem in result.get("set_problems", [])})
        set_problems += [f"no preflight result from {node}" for node in nodes if node not in seen]
        worlds = [result["world_size"] for result in results if result.get("world_size")]
        return cls(nodes, min(bandwidths) if bandwidths else None, worlds[0] if worlds else None,
                   {result["node"]: tuple(result["problems"]) for result in results if result["problems"]},
                   tuple(set_problems))

    @classmethod
    def of_statuses(cls, nodes: Sequence[str], codes: Mapping[str, int | None]) -> SetResult:
        """From each node's exit status alone (EXIT_*; None: no status came back). Every node of a
        set judges the same all_reduce figure against the same floor, so one EXIT_BELOW_FLOOR
        fails the set."""
        own = "its own checks failed (exit 1; its figures are in the job record)"
        set_problems = [f"the preflight could not run on {node} (exit 3: its output says why)"
                        for node in nodes if codes.get(node) == EXIT_NOT_RUN]
        set_problems += [f"no preflight result from {node} (exit {codes.get(node)})" for node in nodes
                         if codes.get(node) not in (0, EXIT_NODE_PROBLEM, EXIT_BELOW_FLOOR, EXIT_NOT_RUN)]
        return cls(tuple(nodes), None, None, {node: (own,) for node in nodes if codes.get(node) == EXIT_NODE_PROBLEM},
                   tuple(set_problems), judged=all(codes.get(node) != EXIT_BELOW_FLOOR for node in nodes))

    @classmethod
    def silent(cls, nodes: Sequence[str]) -> SetResult:
        """A set the search asked for from which no node's result came back (every command failed
        or ran past the round's limit): it fails, as a set with a node missing does."""
        return cls(tuple(nodes), None, None, {}, tuple(f"no preflight result from {node}" for node in nodes))

    def passes(self, floor: float | None) -> bool | None:
        """True or False against the floor; None when a one-rank set has no fabric to judge."""
        if self.set_problems:
            return False
        if self.world_size == 1:
            return None
        if self.judged is not None:
            return self.judged
        if floor is None:
            return self.busbw_gbps is not None
        return self.busbw_gbps is not None and self.busbw_gbps >= floor


@dataclass(frozen=True)
class Search:
    """Where the search stands after the rounds so far."""

    nodes: tuple[str, ...]
    rounds: int = 0
    good: tuple[str, ...] = ()
    groups: tuple[tuple[str, ...], ...] = ()
    """Sets that missed their floor and are split next; a one-node group waits for a good partner."""
    culprits: Mapping[str, str] = field(default_factory=dict)
    """Node (or `a<->b` link) -> why."""
    failed: tuple[tuple[tuple[str, ...], str], ...] = ()
    """Every set that missed its floor so far, with its figure."""
    passed: bool = False
    stopped: str | None = None


@dataclass(frozen=True)
class Verdict:
    action: str
    """pass, test (the sets of the next round), replace (the culprits), or stop (the reason)."""
    sets: tuple[tuple[str, ...], ...] = ()
    culprits: Mapping[str, str] = field(default_factory=dict)
    reason: str = ""


def _halves(group: tuple[str, ...]) -> list[tuple[str, ...]]:
    middle = (len(group) + 1) // 2
    return [group[:middle], group[middle:]]


def next_sets(search: Search) -> list[tuple[str, ...]]:
    """The sets of the next round: every node first; then halves of each failing group of three or
    more; then each suspect with a good node, one each (with no good node yet, with another
    suspect left alone so far). A lone half with nobody to pair waits a round."""
    if search.rounds == 0:
        return [search.nodes]
    partners = [node for node in search.nodes if node in search.good]
    lone = [group[0] for group in search.groups if len(group) == 1]
    sets: list[tuple[str, ...]] = []
    used: set[str] = set()

    def pair(suspect: str, group: tuple[str, ...]) -> None:
        if suspect in used:
            return
        others = [node for node in lone if node not in used and node not in group]
        partner = partners.pop(0) if partners else (others[0] if others else None)
        if partner is not None:
            sets.append((partner, suspect))
            used.update((partner, suspect))

    for group in search.groups:
        if len(group) > 2:
            for half in _halves(group):
                if len(half) > 1:
                    sets.append(half)
                    used.update(half)
                else:
                    pair(half[0], group)
        else:
            for suspect in group:
                pair(suspect, group)
    return sets


def advance(search: Search, results: Sequence[SetResult], floor_of) -> Search:
    """The search after one round's results; `floor_of(node_count)` gives a set's busbw floor."""
    culprits = dict(search.culprits)
    for result in results:
        for node, problems in result.node_problems.items():
            culprits[node] = problems[0]
    if search.rounds == 0 and culprits:
        return _checked(replace(search, rounds=1, culprits=culprits))
    if search.rounds == 0 and results[0].set_problems:
        return replace(search, rounds=1, stopped="the preflight could not run: " + "; ".join(results[0].set_problems))
    good = list(search.good)
    failed = list(search.failed)
    failing: list[tuple[str, ...]] = []
    lone: list[tuple[str, ...]] = []
    for result in results:
        verdict = result.passes(floor_of(len(result.nodes)))
        if len(result.nodes) == 1 and verdict is False:
            culprits[result.nodes[0]] = f"all_reduce among its own GPUs below its floor: {_figure(result)}"
        elif len(result.nodes) == 1 and search.rounds > 0:
            lone.append(result.nodes)  # its own GPUs are fine; between nodes it is still untested
        elif verdict or (verdict is None and search.rounds == 0):
            good += [node for node in result.nodes if node not in good]
        else:
            failing.append(result.nodes)
            failed.append((result.nodes, _figure(result)))
    _infer(failed, good, culprits)
    tested = {node for result in results for node in result.nodes}
    groups = [suspects for nodes in failing
              if (suspects := tuple(node for node in nodes if node not in good and node not in culprits))]
    groups += lone + [(node,) for group in search.groups for node in group
                      if node not in tested and node not in good and node not in culprits]
    searched = replace(search, rounds=search.rounds + 1, good=tuple(good), groups=tuple(groups), culprits=culprits,
                       failed=tuple(failed))
    if search.rounds == 0 and not failing and not culprits:
        return replace(searched, passed=True)
    return _checked(searched)


def _infer(failed: Sequence[tuple[tuple[str, ...], str]], good: Sequence[str], culprits: dict[str, str]) -> None:
    """A failed set whose other nodes were all seen fast names its last node; a failed pair of two
    nodes each seen fast elsewhere names the link between them. Newest sets first: the smallest."""
    for nodes, figure in reversed(failed):
        unknown = [node for node in nodes if node not in good]
        others = [node for node in nodes if node in good]
        if len(unknown) == 1 and unknown[0] not in culprits:
            seen = f"{others[0]} (a node seen fast)" if len(others) == 1 else f"{', '.join(others)} (nodes seen fast)"
            culprits[unknown[0]] = f"all_reduce with {seen} below its floor: {figure}"
        elif not unknown and len(nodes) == 2:
            culprits[f"{nodes[0]}<->{nodes[1]}"] = "slow together, each fast with a third node: the path between them"


def _figure(result: SetResult) -> str:
    if result.set_problems:
        return "; ".join(result.set_problems)
    if result.busbw_gbps is None and result.judged is False:
        return "each node's figures are in the job record"
    return f"{result.busbw_gbps} GB/s" if result.busbw_gbps is not None else "no figure"


def _checked(search: Search) -> Search:
    """Stops for what no replacement can fix: most nodes named, or nothing seen good while halves fail."""
    if len([name for name in search.culprits if "<->" not in name]) > max(1, len(search.nodes) // 2):
        return replace(search, stopped=(f"{len(search.culprits)} of {len(search.nodes)} nodes fail: the fault is "
                                        "common to them (image, NCCL or EFA setup, the fabric), not one node"))
    return search


def verdict(search: Search, max_rounds: int = MAX_ROUNDS) -> Verdict:
    """What to do now."""
    if search.stopped:
        return Verdict("stop", reason=search.stopped)
    if search.passed:
        return Verdict("pass")
    if search.culprits and (not search.groups or not next_sets(search)):
        nodes = {name: why for name, why in search.culprits.items() if "<->" not in name}
        if not nodes:
            return Verdict("stop", culprits=dict(search.culprits), reason="slow link " + "; ".join(
                f"{name}: {why}" for name, why in search.culprits.items()) + " (no node to replace)")
        return Verdict("replace", culprits=dict(search.culprits))
    sets = next_sets(search)
    if not sets:
        return Verdict("stop", reason="; ".join(" and ".join(group) for group in search.groups) + ": below the "
                       "bus-bandwidth floor, and no set of the job's nodes reaches it: the fabric or NCCL's setup "
                       "(TCP sockets?), not one node")
    if search.rounds >= max_rounds:
        return Verdict("stop", reason=f"no single culprit after {max_rounds} rounds")
    return Verdict("test", sets=tuple(sets))


def search(nodes: Sequence[str], rounds: Sequence[Sequence[Mapping[str, Any]]], floor_of,
           max_rounds: int = MAX_ROUNDS) -> tuple[Search, Verdict]:
    """Replay recorded rounds (each a list of node results) and say what comes next. A set the
    search asked for of which no node answered fails (`SetResult.silent`)."""
    state = Search(tuple(nodes))
    for node_results in rounds:
        by_set: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
        for result in node_results:
            by_set.setdefault(tuple(result["set"]), []).append(result)
        answered = {result["node"] for result in node_results}
        silent = [SetResult.silent(members) for members in next_sets(state) if not answered & set(members)]
        state = advance(state, [SetResult.of(results) for results in by_set.values()] + silent, floor_of)
    return state, verdict(state, max_rounds)


STDOUT_LIMIT = 24000
"""Run Command returns the first 24,000 characters of a command's stdout in GetCommandInvocation's
`StandardOutputContent` (SSM API reference, GetCommandInvocation; read 2026-11-28): the supervisor
reads `decide`'s answer there, so it must fit."""


def replay_statuses(nodes: Sequence[str], instance_ids: Sequence[str], rounds: Sequence[Sequence[str]],
                    max_rounds: int = MAX_ROUNDS) -> tuple[Search, Verdict]:
    """The search over rounds the job supervisor ran, each a list of `<instance id>=<exit status>`
    of the nodes it tested: a round's sets are the ones the search asked for (every node first), so
    the statuses alone replay it."""
    address = dict(zip(instance_ids, nodes))
    state = Search(tuple(nodes))
    for statuses in rounds:
        codes: dict[str, int | None] = {}
        for item in statuses:
            instance, _, code = item.rpartition("=")
            codes[address.get(instance, instance)] = int(code) if code.lstrip("-").isdigit() else None
        sets = next_sets(state)
        state = advance(state, [SetResult.of_statuses(members, codes) for members in sets], lambda count: None)
    return state, verdict(state, max_rounds)


def decide(nodes: Sequence[str], instance_ids: Sequence[str], rounds: Sequence[Sequence[str]],
           encode=None, max_rounds: int = MAX_ROUNDS) -> dict[str, Any]:
    """The supervisor's next step as JSON-ready data: `action` (pass, test, replace or stop), the
    `sets` of the next round (instance ids and the `nodes` parameter of each), the culprits to
    `replace` (each with the `commandB64` of its preflight-replace: `encode(argv)`) and the
    `reason` of a stop; `culprits` names every node or link found slow."""
    ids = dict(zip(nodes, instance_ids))
    _, found = replay_statuses(nodes, instance_ids, rounds, max_rounds)
    answer: dict[str, Any] = {"action": found.action, "reason": found.reason[:2000],
                              "culprits": {name: why[:400] for name, why in found.culprits.items()}, "sets": [],
                              "replace": []}
    if found.action == "test":
        answer["sets"] = [{"instanceIds": [ids[node] for node in members], "nodes": ",".join(members)}
                          for members in found.sets]
    if found.action == "replace":
        answer["replace"] = [
            {"instanceId": ids[node], "node": node,
             "commandB64": encode(["--reason", why[:400]]) if encode else ""}
            for node, why in found.culprits.items() if node in ids]
    return answer
