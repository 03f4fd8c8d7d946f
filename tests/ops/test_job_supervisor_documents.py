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
    assert [polls_per_execution(nodes) for nodes in (1, 16, 1000)] == [312, 47, 1]
    assert all(polls_per_execution(nodes) * (30 + 21 * nodes) <= 25000 for nodes in range(1, 800))


def test_the_drained_exit_status_is_the_launcher_s():
    from gpucloud.documents import job_supervisor_states
    from gpucloud.node import launcher

    assert job_supervisor_states.EXIT_DRAINED == launcher.EXIT_DRAINED
