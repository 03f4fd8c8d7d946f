"""Auto Scaling lifecycle: the boot gate (CONTINUE or ABANDON) and the drain on termination.

boto3 is imported only when a client is built, so `check` keeps working on hosts without it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucloud.node import boot_phases
from gpucloud.node.commands import CommandRunner, run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.job_drain import drain_budget_s, stop_jobs
from gpucloud.node.nvidia import HealthReport
from gpucloud.node.prepull import bound_for_pool
from gpucloud.node.retry import Backoff, retry

CONTINUE = "CONTINUE"
ABANDON = "ABANDON"
TERMINATED = "Terminated"

ClientFactory = Callable[[str, str], Any]
Sleep = Callable[[float], None]

_TRANSIENT_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalError",
        "RequestTimeout",
    }
)

log = logging.getLogger("gpucloud.node.lifecycle")


class LifecycleError(RuntimeError):
    """Auto Scaling (or the metadata service) could not be reached or refused a call."""


def boto3_client(service: str, region: str) -> Any:
    import boto3

    return boto3.client(service, region_name=region)


def is_transient_aws_error(error: Exception) -> bool:
    """Throttling, 5xx and connection failures are worth retrying; validation errors are not."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _TRANSIENT_CODES or status >= 500
    return isinstance(error, BotoCoreError)


def call_aws(what: str, operation: Callable[[], Any], backoff: Backoff, sleep: Sleep) -> Any:
    """One AWS call with retries on transient errors; any other failure is a LifecycleError
    (a ClientError stays reachable as its __cause__)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return retry(operation, what=what, backoff=backoff, retryable=is_transient_aws_error, sleep=sleep)
    except (ClientError, BotoCoreError) as error:
        raise LifecycleError(f"{what}: {error}") from error


def identify(config: NodeConfig, metadata: InstanceMetadata) -> tuple[str, str]:
    """This instance's id and region from metadata. The instance runs where metadata says, so a
    different region in the node config is only a warning; the config's region serves when
    metadata cannot tell."""
    try:
        instance_id = metadata.instance_id()
    except MetadataError as error:
        raise LifecycleError(f"cannot identify this instance: {error}") from error
    try:
        region = metadata.region()
    except MetadataError as error:
        if not config.region:
            raise LifecycleError(f"cannot tell this instance's region: {error}") from error
        log.warning("region unreadable from metadata (%s); using %s from the node config", error, config.region)
        return instance_id, config.region
    if config.region and config.region != region:
        log.warning("node config names region %s, but this instance runs in %s; using %s", config.region, region, region)
    return instance_id, region


def check_until_healthy(run_check: Callable[[], HealthReport], backoff: Backoff, sleep: Sleep) -> HealthReport:
    """A node just booted may still be loading its driver or starting the fabric manager:
    check again, with growing pauses, before calling it unhealthy."""
    delays = backoff.delays()
    while True:
        report = run_check()
        delay = next(delays, None)
        if report.healthy or delay is None:
            return report
        log.warning("not healthy yet (%s); checking again in %g s", "; ".join(report.problems), delay)
        sleep(delay)


def gate(
    config: NodeConfig,
    metadata: InstanceMetadata,
    run_check: Callable[[], HealthReport],
    client_factory: ClientFactory = boto3_client,
    backoff: Backoff = Backoff(),
    sleep: Sleep = time.sleep,
    prepare_for_pool: Callable[[], object] | None = None,
) -> int:
    """The gate below, recorded as the node's gate phase (`boot_phases`). `prepare_for_pool` runs
    on a healthy node bound for the warm pool before the hook is completed (`prepull`)."""
    with boot_phases.timed("gate"):
        return _gate(config, metadata, run_check, client_factory, backoff, sleep, prepare_for_pool)


def _gate(
    config: NodeConfig,
    metadata: InstanceMetadata,
    run_check: Callable[[], HealthReport],
    client_factory: ClientFactory,
    backoff: Backoff,
    sleep: Sleep,
    prepare_for_pool: Callable[[], object] | None,
) -> int:
    """Check the node, then let Auto Scaling put it in service (CONTINUE) or replace it (ABANDON).
    Returns 0 when healthy, 1 when not.

    Without a pending launch action (no hook configured, or a reboot long after launch) an
    unhealthy node is marked Unhealthy instead, so Auto Scaling replaces it rather than use it.
    """
    instance_id, region = identify(config, metadata)
    boot_checks = Backoff(config.boot_check_attempts, config.boot_check_retry_s, max_s=60.0)
    report = check_until_healthy(run_check, boot_checks, sleep)
    for line in report.actions:
        log.info("%s", line)
    for note in report.notes:
        log.warning("not checked: %s", note)
    for problem in report.problems:
        log.warning("unhealthy: %s", problem)
    if report.healthy:
        log.info("healthy: %d GPU(s)", len(report.gpus))
    verdict = 0 if report.healthy else 1

    autoscaling = client_factory("autoscaling", region)
    group = find_group_name(metadata, autoscaling, instance_id, backoff, sleep)
    if group is None:
        log.warning("%s is not in an Auto Scaling group; nothing to report", instance_id)
        return verdict
    hook = config.launch_hook_name
    if hook and _lifecycle_hook(autoscaling, group, hook, backoff, sleep):
        if report.healthy and prepare_for_pool is not None and bound_for_pool(_target_state(metadata)):
            prepare_for_pool()
        result = CONTINUE if report.healthy else ABANDON
        if complete_lifecycle_action(autoscaling, group, hook, instance_id, result, backoff, sleep):
            return verdict
    elif hook:
        log.warning("launch hook %s does not exist on %s", hook, group)
    if not report.healthy:
        call_aws(
            "SetInstanceHealth",
            lambda: autoscaling.set_instance_health(
                InstanceId=instance_id, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
            ),
            backoff,
            sleep,
        )
        log.info("marked %s Unhealthy in %s", instance_id, group)
    return verdict


def _target_state(metadata: InstanceMetadata) -> str | None:
    try:
        return metadata.target_lifecycle_state()
    except MetadataError as error:
        log.info("target lifecycle state unreadable (%s): not bound for a warm pool", error)
        return None


def heartbeat(
    config: NodeConfig,
    metadata: InstanceMetadata,
    client_factory: ClientFactory = boto3_client,
    backoff: Backoff = Backoff(),
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Keep the launch action pending while the node prepares: waiting for the persistent volume
    and the data disk alone may outlast the hook's timeout, whose default result is ABANDON.
    Beats every third of that timeout until the action is no longer pending (the gate completed
    it) or launch_heartbeat_limit_s has passed; then the hook's own timeout ABANDONs a node that
    never got ready."""
    instance_id, region = identify(config, metadata)
    hook_name = config.launch_hook_name
    autoscaling = client_factory("autoscaling", region)
    group = find_group_name(metadata, autoscaling, instance_id, backoff, sleep) if hook_name else None
    hook = _lifecycle_hook(autoscaling, group, hook_name, backoff, sleep) if group and hook_name else None
    if hook is None:
        log.info("no launch hook holds %s; nothing to keep alive", instance_id)
        return 0
    interval = hook["HeartbeatTimeout"] / 3
    deadline = clock() + config.launch_heartbeat_limit_s
    while clock() < deadline:
        try:
            call_aws(
                "RecordLifecycleActionHeartbeat",
                lambda: autoscaling.record_lifecycle_action_heartbeat(
                    LifecycleHookName=hook_name, AutoScalingGroupName=group, InstanceId=instance_id
                ),
                backoff,
                sleep,
            )
        except LifecycleError as error:
            if _is_validation_error(error):
                log.info("launch action of %s is no longer pending: %s", instance_id, error)
                return 0
            log.warning("heartbeat failed; trying again at the next beat: %s", error)
        sleep(interval)
    log.warning(
        "still preparing after %g s: no more heartbeats, so the launch hook's timeout decides",
        config.launch_heartbeat_limit_s,
    )
    return 0


def drain(
    config: NodeConfig,
    metadata: InstanceMetadata,
    run: CommandRunner = run_command,
    client_factory: ClientFactory = boto3_client,
    backoff: Backoff = Backoff(attempts=3),
    sleep: Sleep = time.sleep,
    max_polls: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Poll for a spot interruption notice or an Auto Scaling termination; on the first notice
    stop the node's jobs (their launchers sync their checkpoints) and save a checkpoint, all within
    the notice's time (`job_drain.drain_budget_s`), then complete the terminate hook so the
    instance goes without waiting out the hook's timeout. Returns 0 once done, or after max_polls
    polls (for tests)."""
    instance_id, region = identify(config, metadata)
    log.info("watching %s for spot interruption and scale-in", instance_id)
    checkpointed = False
    polls = 0
    while max_polls is None or polls < max_polls:
        polls += 1
        try:
            spot, target = metadata.spot_instance_action(), metadata.target_lifecycle_state()
        except MetadataError as error:
            log.warning("metadata poll failed, will poll again: %s", error)
            spot, target = None, None
        if spot is not None or target == TERMINATED:
            if not checkpointed:
                log.info("termination notice: spot=%s, target lifecycle state=%s", spot, target)
                deadline = clock() + drain_budget_s(spot is not None, config.poll_interval_s)
                stop_jobs(min(config.checkpoint_timeout_s, deadline - clock()), run)
                save_checkpoint(config, instance_id, region, run, backoff, sleep, deadline=deadline, clock=clock)
                checkpointed = True
            if target == TERMINATED:
                autoscaling = client_factory("autoscaling", region)
                _complete_terminate_hook(config, metadata, instance_id, autoscaling, backoff, sleep)
                return 0
            if not config.terminate_hook_name:
                log.info("checkpoint done and no terminate hook to complete")
                return 0
        sleep(config.poll_interval_s)
    return 0


def checkpoint_uri(config: NodeConfig, instance_id: str) -> str | None:
    """s3://<bucket>/<write prefix>/checkpoints/<group>/<instance id>/, or None without a bucket."""
    if not config.checkpoint_bucket:
        return None
    prefix = (config.checkpoint_prefix or "").strip("/")
    parts = [part for part in (prefix, "checkpoints", config.group_name, instance_id) if part]
    return f"s3://{config.checkpoint_bucket}/{'/'.join(parts)}/"


def checkpoint_argv(config: NodeConfig, instance_id: str, region: str) -> list[str] | None:
    """The configured checkpoint command, else the agent's own S3 sync of the checkpoint dir
    (boto3, so the node needs no AWS CLI), run as a child so that its time limit holds."""
    if config.checkpoint_command:
        return list(config.checkpoint_command)
    uri = checkpoint_uri(config, instance_id)
    if uri is None:
        return None
    return [sys.executable, "-m", "gpucloud.node", "sync-checkpoint", "--region", region, config.checkpoint_dir, uri]


def sync_to_s3(directory: Path, uri: str, s3: Any, exclude: frozenset[str] = frozenset()) -> int:
    """Upload each file under directory whose copy under uri is missing, of another size or
    older (S3 keeps whole seconds), as `aws s3 sync` decides; returns how many were uploaded.
    Paths in exclude (relative, with /) are left alone on both sides."""
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    stored = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            stored[item["Key"]] = (item["Size"], item["LastModified"].timestamp())
    uploaded = 0
    for path in sorted(path for path in directory.rglob("*") if path.is_file()):
        if path.relative_to(directory).as_posix() in exclude:
            continue
        key = prefix + path.relative_to(directory).as_posix()
        size, modified = stored.get(key, (None, 0.0))
        if size == path.stat().st_size and modified >= int(path.stat().st_mtime):
            continue
        s3.upload_file(str(path), bucket, key)
        uploaded += 1
    return uploaded


def save_checkpoint(
    config: NodeConfig,
    instance_id: str,
    region: str,
    run: CommandRunner,
    backoff: Backoff,
    sleep: Sleep,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Run the checkpoint command with bounded retries, none of them past deadline (a clock()
    value); True once it succeeded. The command also gets GPUCLOUD_INSTANCE_ID,
    GPUCLOUD_CHECKPOINT_DIR and GPUCLOUD_CHECKPOINT_URI."""
    argv = checkpoint_argv(config, instance_id, region)
    if argv is None:
        log.warning("no checkpoint bucket or command configured; nothing saved")
        return False
    if not config.checkpoint_command and not Path(config.checkpoint_dir).is_dir():
        log.info("no checkpoint directory %s; nothing to save", config.checkpoint_dir)
        return True
    environment = dict(
        os.environ,
        GPUCLOUD_INSTANCE_ID=instance_id,
        GPUCLOUD_CHECKPOINT_DIR=config.checkpoint_dir,
        GPUCLOUD_CHECKPOINT_URI=checkpoint_uri(config, instance_id) or "",
    )
    delays = backoff.delays()
    for attempt in range(1, backoff.attempts + 1):
        timeout = config.checkpoint_timeout_s if deadline is None else min(config.checkpoint_timeout_s, deadline - clock())
        if timeout < 1:
            log.error("no time left for checkpoint attempt %d; releasing the instance", attempt)
            return False
        log.info("checkpoint attempt %d of %d: %s", attempt, backoff.attempts, " ".join(argv))
        result = run(argv, timeout, environment)
        for line in (result.stdout + result.stderr).splitlines():
            log.info("checkpoint: %s", line)
        if result.ok:
            log.info("checkpoint saved")
            return True
        log.warning("checkpoint failed: %s", result.describe_failure(timeout))
        delay = next(delays, None)
        if delay is not None:
            sleep(delay if deadline is None else max(0.0, min(delay, deadline - clock())))
    log.error("checkpoint failed %d times; releasing the instance anyway", backoff.attempts)
    return False


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
        if not _is_validation_error(error):
            raise
        log.info("no pending %s action for %s: %s", hook, instance_id, error)
        return False
    log.info("completed lifecycle hook %s of %s with %s", hook, group, result)
    return True


def _is_validation_error(error: LifecycleError) -> bool:
    """Auto Scaling's answer when no lifecycle action is pending for the instance."""
    return getattr(error.__cause__, "response", {}).get("Error", {}).get("Code") == "ValidationError"


def _lifecycle_hook(autoscaling: Any, group: str, hook: str, backoff: Backoff, sleep: Sleep) -> dict | None:
    response = call_aws(
        "DescribeLifecycleHooks",
        lambda: autoscaling.describe_lifecycle_hooks(AutoScalingGroupName=group, LifecycleHookNames=[hook]),
        backoff,
        sleep,
    )
    return next((item for item in response.get("LifecycleHooks", []) if item.get("LifecycleHookName") == hook), None)


def _complete_terminate_hook(
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
