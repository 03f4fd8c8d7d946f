"""The job supervisor's definition and access documents as pure functions of a stack's values:
Step Functions takes the definition (moto's ASL parser, as testing/handlers/sfn.py applies it),
every transition names a state of its own scope, and the roles reach the stack's own resources
only."""

from __future__ import annotations

import pytest

from gpucloud.documents.job_supervisor import supervisor_definition, supervisor_definition_content
from gpucloud.documents.job_supervisor_access import (
    events_role_policy,
    events_trust_policy,
    supervised_job_statements,
    supervisor_role_policy,
    supervisor_trust_policy,
)
from gpucloud.documents.job_supervisor_continuation import node_left_pattern, polls_per_execution
from gpucloud.documents.job_supervisor_preflight import BASE64_INPUT_LIMIT, MAX_ROUNDS, decide_argv, search_rounds
from gpucloud.documents.jobs import job_runner_policy
from gpucloud.testing.handlers.sfn import check_definition

TOPIC = "arn:aws:sns:us-east-1:123456789012:gpu-cloud-demo-alerts"
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234"
STACKS = {"with a write prefix": ("demo-data", "runs/jobs/"), "without": (None, None)}


def definition(bucket, prefix, preflight=True):
    return supervisor_definition(document_name="gpu-cloud-demo-run", log_group_name="/gpu-cloud/demo/jobs",
                                 topic_arn=TOPIC, bucket=bucket, jobs_prefix=prefix, preflight=preflight)


def transitions(state: dict) -> list[str]:
    targets = [state[key] for key in ("Next", "Default") if key in state]
    targets += [choice["Next"] for choice in state.get("Choices", [])]
    targets += [catch["Next"] for catch in state.get("Catch", [])]
    return targets


def scopes(machine: dict):
    """Each States scope (the machine, each Map's processor) with its start."""
    yield machine["StartAt"], machine["States"]
    for state in machine["States"].values():
        if state["Type"] == "Map":
            yield from scopes(state["ItemProcessor"])


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("preflight", [True, False])
def test_step_functions_takes_the_definition_and_every_state_is_reached(stack, preflight):
    bucket, prefix = STACKS[stack]
    check_definition(supervisor_definition_content(document_name="gpu-cloud-demo-run", log_group_name="/l",
                                                   topic_arn=TOPIC, bucket=bucket, jobs_prefix=prefix,
                                                   preflight=preflight))
    for start, states in scopes(definition(bucket, prefix, preflight)):
        reached, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name not in reached:
                assert name in states, f"{name} is not a state of its scope"
                reached.add(name)
                todo += transitions(states[name])
        assert reached == set(states), f"never reached: {set(states) - reached}"


@pytest.mark.parametrize(("bucket", "prefix"), [(None, None), ("demo-data", None), (None, "runs/jobs/")])
def test_without_a_bucket_and_a_write_prefix_there_is_no_record_marker_or_node_left_branch(bucket, prefix):
    states = definition(bucket, prefix)["States"]
    assert not {"Record", "Mark", "Forget", "ListMarkers", "EachMarker"} & set(states)
    assert states["Start"]["Choices"][0]["Next"] == "NoJobOnGroup"
    assert [name for _, scope in scopes(definition(bucket, prefix)) for name, state in scope.items()
            if ":s3:" in state.get("Resource", "")] == [], "nothing written to S3, the preflight's figures included"


def calls_aws(state: dict) -> bool:
    return state["Type"] == "Task" or (state["Type"] == "Map" and any(
        calls_aws(inner) for inner in state["ItemProcessor"]["States"].values()))


@pytest.mark.parametrize("stack", STACKS)
def test_every_aws_error_of_the_supervisor_ends_the_job_through_its_topic(stack):
    """An error that no Catch takes fails the execution at once: the topic never hears of the job's
    end and a group raised for a job that never started stays raised."""
    states = definition(*STACKS[stack])["States"]
    uncaught = [name for name, state in states.items() if calls_aws(state)
                and not any("States.ALL" in catch["ErrorEquals"] for catch in state.get("Catch", []))]
    assert uncaught == []


def test_every_command_the_supervisor_runs_on_the_nodes_keeps_its_output_in_the_job_log_group():
    sends = [state for _, scope in scopes(definition("demo-data", "runs/jobs/")) for state in scope.values()
             if state.get("Resource", "").endswith(":ssm:sendCommand")
             and state["Parameters"].get("Parameters", {}).get("action") != ["launch-stop"]]
    assert len(sends) == 5  # launch, the preflight's level, decide, a fabric round's sets, replace
    assert all(send["Parameters"]["CloudWatchOutputConfig"] == {
        "CloudWatchLogGroupName": "/gpu-cloud/demo/jobs", "CloudWatchOutputEnabled": True} for send in sends)


def role(bucket="demo-data", prefix="runs/jobs/"):
    return supervisor_role_policy(partition="aws", region="us-east-1", account_id="123456789012", name_base="demo",
                                  machine_name="gpu-cloud-demo-jobs", document_name="gpu-cloud-demo-run",
                                  group_names=["gpu-cloud-demo-trainers"], topic_arn=TOPIC, key_arn=KEY,
                                  bucket=bucket, jobs_prefix=prefix)


def test_the_supervisor_role_reaches_the_stack_s_own_resources_only():
    by_sid = {statement["Sid"]: statement for statement in role()["Statement"]}
    on_star = {action for statement in by_sid.values() if statement["Resource"] == "*"
               for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])}
    assert on_star == {"autoscaling:DescribeAutoScalingGroups", "ec2:DescribeInstances", "ssm:CancelCommand",
                       "ssm:GetCommandInvocation", "logs:CreateLogDelivery", "logs:DeleteLogDelivery",
                       "logs:DescribeLogGroups", "logs:DescribeResourcePolicies", "logs:GetLogDelivery",
                       "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"}
    assert by_sid["ScaleStackGroups"]["Resource"] == [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpu-cloud-demo-trainers"]
    assert by_sid["SendJobDocumentToStackInstances"]["Condition"] == {
        "StringEquals": {"ssm:resourceTag/gpu-cloud:stack": "demo"}}
    assert by_sid["NotifyStackTopic"]["Resource"] == TOPIC
    assert by_sid["AttemptRecordsUnderJobsPrefix"]["Resource"] == "arn:aws:s3:::demo-data/runs/jobs/*"
    assert by_sid["GroupMarkers"]["Resource"] == "arn:aws:s3:::demo-data/runs/jobs/groups/*"
    assert (by_sid["FindGroupMarkers"]["Resource"], by_sid["FindGroupMarkers"]["Condition"]) == (
        "arn:aws:s3:::demo-data", {"StringLike": {"s3:prefix": "runs/jobs/groups/*"}})
    assert by_sid["ContinueOwnExecutions"]["Resource"] == "arn:aws:states:us-east-1:123456789012:stateMachine:gpu-cloud-demo-jobs"
    assert all(kms["Resource"] == KEY and "kms:ViaService" in kms["Condition"]["StringEquals"]
               for kms in by_sid.values() if str(kms["Action"]).startswith("['kms:") or str(kms["Action"]).startswith("kms:"))
    for bucket, prefix in ((None, None), ("demo-data", None), (None, "runs/jobs/")):
        assert not {"AttemptRecordsUnderJobsPrefix", "GroupMarkers", "FindGroupMarkers"} & {
            statement["Sid"] for statement in role(bucket, prefix)["Statement"]}


def test_step_functions_and_eventbridge_assume_their_roles_for_this_machine_and_rule_only():
    [trust] = supervisor_trust_policy(partition="aws", region="us-east-1", account_id="123456789012",
                                      name="gpu-cloud-demo-jobs")["Statement"]
    assert trust["Principal"] == {"Service": "states.amazonaws.com"} and trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {"aws:SourceArn": "arn:aws:states:us-east-1:123456789012:stateMachine:gpu-cloud-demo-jobs"}}
    rule = "arn:aws:events:us-east-1:123456789012:rule/gpu-cloud-demo-jobs-node-left"
    [events] = events_trust_policy(account_id="123456789012", rule_arn=rule)["Statement"]
    assert events["Principal"] == {"Service": "events.amazonaws.com"} and events["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"}, "ArnEquals": {"aws:SourceArn": rule}}
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:gpu-cloud-demo-jobs"
    assert events_role_policy(machine)["Statement"] == [
        {"Sid": "StartJobSupervisor", "Effect": "Allow", "Action": "states:StartExecution", "Resource": machine}]


def test_the_team_policy_starts_follows_and_stops_the_stack_s_executions_only():
    policy = job_runner_policy(partition="aws", region="us-east-1", account_id="123456789012", name_base="demo",
                               document_name="gpu-cloud-demo-run", log_group_name="/gpu-cloud/demo/jobs",
                               group_names=["gpu-cloud-demo-trainers"], key_arn=KEY, supervisor_name="gpu-cloud-demo-jobs")
    states = [statement for statement in policy["Statement"] if "states:" in str(statement["Action"])]
    assert states == supervised_job_statements(partition="aws", region="us-east-1", account_id="123456789012",
                                               machine_name="gpu-cloud-demo-jobs")
    assert {action for statement in states for action in statement["Action"]} == {
        "states:DescribeExecution", "states:ListExecutions", "states:StartExecution", "states:StopExecution"}
    assert all(resource.split(":")[6].split("/")[0] == "gpu-cloud-demo-jobs"
               for statement in states for resource in statement["Resource"])


def test_the_node_left_rule_matches_the_stack_s_groups_and_polls_fit_the_history_quota():
    assert node_left_pattern(["b", "a"])["detail"] == {"AutoScalingGroupName": ["a", "b"]}
    # 20,000 of the 25,000 events at 40 + 24 per node and poll (measured 30 + 21): 312 polls of one
    # node (5.2 h at the default 60 s), 47 of sixteen.
    assert [polls_per_execution(nodes) for nodes in (1, 5, 16, 1000)] == [312, 125, 47, 1]
    assert all(polls_per_execution(nodes) * (30 + 21 * nodes) <= 25000 for nodes in range(1, 800))


def test_the_drained_exit_status_is_the_launcher_s():
    from gpucloud.documents import job_supervisor_states
    from gpucloud.node import launcher

    assert job_supervisor_states.EXIT_DRAINED == launcher.EXIT_DRAINED


def test_the_decide_step_s_input_holds_the_rounds_the_supervisor_allows_at_any_node_count():
    """Every node tested in every round, each at a three-digit exit status (a step of the node's
    preflight that timed out exits 124), fits States.Base64Encode, and one round more would not
    (a search past it ends `preflight-failed` instead of an uncaught States.Runtime)."""
    from gpucloud.node.preflight import EXIT_TIMEOUT
    from gpucloud.node.preflight_search import MAX_ROUNDS as SEARCH_ROUNDS

    for nodes in range(1, 200):
        ids = [f"i-{index:017x}" for index in range(nodes)]

        def length(rounds: int) -> int:
            return len(decide_argv(ids, [[f"{instance}={EXIT_TIMEOUT}" for instance in ids]] * rounds))

        fitting = search_rounds(nodes)
        assert length(fitting) <= BASE64_INPUT_LIMIT, f"{fitting} rounds of {nodes} nodes"
        assert fitting == MAX_ROUNDS or length(fitting + 1) > BASE64_INPUT_LIMIT, f"{nodes} nodes hold more"
    assert [search_rounds(nodes) for nodes in (60, 61, 191, 192)] == [5, 4, 1, 0]
    assert search_rounds(1) == SEARCH_ROUNDS, "a small job's search has every round the node's search asks for"
