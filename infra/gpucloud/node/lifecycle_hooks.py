"""Auto Scaling lifecycle hooks as the node sees them: its group, a hook's settings, and completing
a pending lifecycle action."""

from __future__ import annotations

import logging
from typing import Any

from gpucloud.node.aws_calls import LifecycleError, Sleep, call_aws
from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.retry import Backoff

CONTINUE = "CONTINUE"
ABANDON = "ABANDON"

log = logging.getLogger("gpucloud.node.lifecycle")


def find_group_name(
    metadata: InstanceMetadata, autoscaling: Any, instance_id: str, backoff: Backoff, sleep: Sleep
) -> str | None:
    """The instance's group: its aws:autoscaling:groupName tag when metadata exposes tags,
    else DescribeAutoScalingInstances."""
    try:
        tagged = metadata.autoscaling_group_tag()
    except MetadataError as error:
        log.info("group tag unreadable from metadata (%s); asking Auto Scaling", error)
        tagged = None
    if tagged:
        return tagged.strip()
    response = call_aws(
        "DescribeAutoScalingInstances",
        lambda: autoscaling.describe_auto_scaling_instances(InstanceIds=[instance_id]),
        backoff,
        sleep,
    )
    instances = response.get("AutoScalingInstances", [])
    return instances[0]["AutoScalingGroupName"] if instances else None


def complete_lifecycle_action(
    autoscaling: Any, group: str, hook: str, instance_id: str, result: str, backoff: Backoff, sleep: Sleep
) -> bool:
    """Complete the hook; False when Auto Scaling holds no pending action for this instance."""
    try:
        call_aws(
            f"CompleteLifecycleAction {hook} {result}",
            lambda: autoscaling.complete_lifecycle_action(
                LifecycleHookName=hook,
                AutoScalingGroupName=group,
                LifecycleActionResult=result,
                InstanceId=instance_id,
            ),
            backoff,
            sleep,
        )
    except LifecycleError as error:
        if not no_pending_action(error):
            raise
        log.info("no pending %s action for %s: %s", hook, instance_id, error)
        return False
    log.info("completed lifecycle hook %s of %s with %s", hook, group, result)
    return True


def no_pending_action(error: LifecycleError) -> bool:
    """Auto Scaling's answer when no lifecycle action is pending for the instance."""
    return getattr(error.__cause__, "response", {}).get("Error", {}).get("Code") == "ValidationError"


def lifecycle_hook(autoscaling: Any, group: str, hook: str, backoff: Backoff, sleep: Sleep) -> dict | None:
    response = call_aws(
        "DescribeLifecycleHooks",
        lambda: autoscaling.describe_lifecycle_hooks(AutoScalingGroupName=group, LifecycleHookNames=[hook]),
        backoff,
        sleep,
    )
    return next((item for item in response.get("LifecycleHooks", []) if item.get("LifecycleHookName") == hook), None)


def complete_terminate_hook(
    config: NodeConfig,
    metadata: InstanceMetadata,
    instance_id: str,
    autoscaling: Any,
    backoff: Backoff,
    sleep: Sleep,
) -> None:
    hook = config.terminate_hook_name
    if not hook:
        log.info("no terminate hook configured; Auto Scaling proceeds on its own")
        return
    group = find_group_name(metadata, autoscaling, instance_id, backoff, sleep)
    if group is None:
        raise LifecycleError(f"{instance_id} is not in an Auto Scaling group")
    complete_lifecycle_action(autoscaling, group, hook, instance_id, CONTINUE, backoff, sleep)
