"""EventBridge rules and targets on the default bus (the job supervisor's node-left rule)."""

from __future__ import annotations

import json

from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource

TARGETS_NEEDING_A_ROLE = (":states:", ":kinesis:", ":ecs:", ":ssm:")
"""Targets EventBridge reaches only through a role given as RoleArn: Step Functions state
machines among them (EventBridge user guide, "Amazon EventBridge targets" and "Using
identity-based policies for Amazon EventBridge"; read 2026-11-28). The model's name, id and
length rules are checked on every call (`Account.client`)."""


@resource("aws:cloudwatch/eventRule:EventRule")
def create_rule(account: Account, request: ResourceRequest) -> Created:
    """The pattern must be a JSON object (EventBridge user guide, "Amazon EventBridge event
    patterns"); moto keeps whatever text it is given."""
    inputs = request.inputs
    name = request.physical_name()
    pattern = inputs.get("eventPattern")
    if pattern is not None:
        try:
            parsed = json.loads(pattern)
        except ValueError as error:
            raise refused("PutRule", "InvalidEventPatternException", f"Event pattern is not valid JSON: {error}") from None
        if not isinstance(parsed, dict) or not parsed:
            raise refused("PutRule", "InvalidEventPatternException", "Event pattern must be a non-empty JSON object")
    arn = account.client("events").put_rule(**drop_none({
        "Name": name, "EventPattern": pattern, "ScheduleExpression": inputs.get("scheduleExpression"),
        "Description": inputs.get("description"), "State": inputs.get("state") or "ENABLED",
        "Tags": aws_tags(inputs.get("tags")) or None}))["RuleArn"]
    return Created(id=name, outputs={"arn": arn, "name": name})


@resource("aws:cloudwatch/eventTarget:EventTarget")
def put_target(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    target_arn, role = inputs["arn"], inputs.get("roleArn")
    if any(kind in target_arn for kind in TARGETS_NEEDING_A_ROLE) and not role:
        raise refused("PutTargets", "ValidationException", f"RoleArn is required for target {target_arn}")
    if role:
        account.client("iam").get_role(RoleName=role.rsplit("/", 1)[-1])
    target_id = inputs.get("targetId") or request.physical_name("targetId")
    answer = account.client("events").put_targets(Rule=inputs["rule"], Targets=[drop_none({
        "Id": target_id, "Arn": target_arn, "RoleArn": role, "Input": inputs.get("input")})])
    if answer.get("FailedEntryCount"):
        raise refused("PutTargets", answer["FailedEntries"][0].get("ErrorCode", "ValidationException"),
                      answer["FailedEntries"][0].get("ErrorMessage", "target refused"))
    return Created(id=f"{inputs['rule']}-{target_id}", outputs={"targetId": target_id})
