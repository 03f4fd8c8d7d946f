"""gpucloud/data/access_calls.json is measured, not kept by hand: each recording test checks its own
entries as it runs (tests/access_recording.py); these check the file as a whole: the declared calls
are exactly tests/access/declared_calls.py's, every measured entry names a test that still measures
it, every node feature and person command was measured, and every AWS operation the node's and the
commands' code calls by name was measured by some test (so a call added without a test shows)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import botocore.session
import gpucloud
from gpucloud.config.node_endpoints import AGENT_CALLS, NODE_FEATURES
from gpucloud.testing.iam_actions import ACTIONS

import access_recording
from declared_calls import declared_calls
from support import ROOT

PACKAGE = Path(gpucloud.__file__).parent
PERSON_COMMANDS = {"person:jobRunner": {"run", "logs", "stop"}, "person:notebookUser": {"connect", "jupyterToken"},
                   "person:deployer": {"capacityBuy"}}


def test_the_declared_calls_are_the_files_and_each_cites_its_page():
    declared = sorted(declared_calls(), key=access_recording.sort_key)
    if access_recording.measuring():
        access_recording.write({}, declared=declared)
    held = [entry for entry in access_recording.recorded() if entry["measuredBy"].startswith("declared:")]
    assert held == declared, f"measure again: {access_recording.COMMAND}"
    assert all(re.search(r"\(.+\), read 2026-11-28$|read 2026-11-28$", entry["measuredBy"]) for entry in declared)


@functools.cache
def markers(module: str) -> dict[str, list[tuple]]:
    """test function -> the (marker, args) of its node_aws_calls and access_calls markers, written
    on it or named by a module-level constant (`SUPERVISOR = pytest.mark.access_calls(...)`)."""
    found: dict[str, list[tuple]] = {}
    body = ast.parse((ROOT / module).read_text()).body
    named = {target.id: node.value for node in body if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    for node in body:
        for decorator in getattr(node, "decorator_list", []):
            decorator = named.get(decorator.id, decorator) if isinstance(decorator, ast.Name) else decorator
            if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) in (
                    "pytest.mark.node_aws_calls", "pytest.mark.access_calls"):
                args = tuple(arg.value for arg in decorator.args)
                found.setdefault(node.name, []).append((ast.unparse(decorator.func).rsplit(".", 1)[1], args))
    return found


def test_every_measured_entry_names_a_test_that_still_measures_its_actor():
    for entry in access_recording.recorded():
        if entry["measuredBy"].startswith("declared:"):
            continue
        module, _, name = entry["measuredBy"].partition("::")
        marked = markers(module).get(name, [])
        if entry["actor"] == "node":
            assert ("node_aws_calls", (entry["feature"],)) in marked, f"{entry['measuredBy']} no longer measures node {entry['feature']}"
        else:
            assert any(kind == "access_calls" and args[0] == entry["actor"] for kind, args in marked), (
                f"{entry['measuredBy']} no longer measures {entry['actor']}")


def test_every_node_feature_and_person_command_was_measured_or_declared():
    features = access_recording.recorded_features()
    assert set(NODE_FEATURES) | set(AGENT_CALLS) <= set(features["node"])
    for actor, commands in PERSON_COMMANDS.items():
        assert commands <= set(features[actor]), actor
    assert access_recording.COMMAND in access_recording.ACCESS_CALLS_PATH.read_text()


def _operations_called(paths) -> set[str]:
    """botocore operation names (CamelCase) that the code calls as client methods, `x.put_parameter(`."""
    names = {botocore.xform_name(operation): operation for operation in {operation for _, operation in ACTIONS}
             | {operation for service in ("s3", "ssm", "ec2", "autoscaling", "logs", "cloudwatch", "ecr", "kms")
                for operation in botocore.session.get_session().get_service_model(service).operation_names}}
    called = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
                called.add(names[node.func.attr])
    return called


def _measured_operations(actors) -> set[str]:
    actions = {entry["action"] for entry in access_recording.recorded() if entry["actor"] in actors}
    return {operation for (_, operation), action in ACTIONS.items() if action.action in actions}


def test_every_aws_operation_node_code_calls_was_measured():
    node_code = [*(PACKAGE / "node").glob("*.py"), PACKAGE / "userdata" / "bootstrap_stub.py"]
    unmeasured = _operations_called(node_code) - _measured_operations({"node"})
    assert not unmeasured, f"node code calls {sorted(unmeasured)} and no node test measured it"


def test_every_aws_operation_the_person_commands_call_was_measured():
    # `gpucloud capacity buy` (ops/capacity.py) is run by whoever deploys (person:deployer).
    person_code = [*(PACKAGE / "ops").glob("*.py"), PACKAGE / "connect.py"]
    unmeasured = _operations_called(person_code) - _measured_operations(set(PERSON_COMMANDS))
    assert not unmeasured, f"the person commands call {sorted(unmeasured)} and no ops test measured it"


def test_a_stack_with_a_block_to_buy_counts_the_buy_command_and_it_was_measured():
    from gpucloud.plan.access import DEPLOYING_PERSON, stack_features
    from support import minimal_config, settings_for

    block = {"offering": {"instanceType": "p5.48xlarge", "count": 2, "durationHours": 96,
                          "startAfter": "2027-02-20", "endBefore": "2027-03-10"}}
    group = {"name": "pretrain", "instanceTypes": ["p5.48xlarge"], "minSize": 2, "maxSize": 2, "spotPercent": 0,
             "capacity": {"capacityBlock": block}}
    settings = settings_for(minimal_config(groups=[group]))

    assert stack_features(settings)["capacityBuy"] == (DEPLOYING_PERSON, ["pretrain"])
    assert "capacityBuy" in access_recording.recorded_features()[DEPLOYING_PERSON]
    held = settings_for(minimal_config(groups=[{**group, "capacity": {"capacityBlock": {"reservationId": "cr-0123456789abcdef0"}}}]))
    assert "capacityBuy" not in stack_features(held)
