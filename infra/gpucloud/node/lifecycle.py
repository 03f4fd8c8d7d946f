"""Auto Scaling lifecycle: the boot gate (CONTINUE or ABANDON), the heartbeat that keeps the launch
action pending, and the drain on termination.

The AWS calls they make are `aws_calls`, the hooks they complete `lifecycle_hooks`, the checkpoint
the drain saves `checkpoint_save`; their names are importable from here as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from gpucloud.node import boot_phases
from gpucloud.node.aws_calls import ClientFactory, LifecycleError, Sleep, boto3_client, call_aws, identify
from gpucloud.node.checkpoint_save import (  # noqa: F401 (checkpoint_argv, checkpoint_uri: importable from here)
    checkpoint_argv,
    checkpoint_uri,
    save_checkpoint,
)
from gpucloud.node.commands import CommandRunner, run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.job_drain import drain_budget_s, stop_jobs
from gpucloud.node.lifecycle_hooks import (
    ABANDON,
    CONTINUE,
    complete_lifecycle_action,
    complete_terminate_hook,
    find_group_name,
    lifecycle_hook,
    no_pending_action,
)
from gpucloud.node.nvidia import HealthReport
from gpucloud.node.prepull import bound_for_pool
from gpucloud.node.retry import Backoff

TERMINATED = "Terminated"

log = logging.getLogger("gpucloud.node.lifecycle")


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
    if hook and lifecycle_hook(autoscaling, group, hook, backoff, sleep):
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
    hook = lifecycle_hook(autoscaling, group, hook_name, backoff, sleep) if group and hook_name else None
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
            if no_pending_action(error):
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
                complete_terminate_hook(config, metadata, instance_id, autoscaling, backoff, sleep)
                return 0
            if not config.terminate_hook_name:
                log.info("checkpoint done and no terminate hook to complete")
                return 0
        sleep(config.poll_interval_s)
    return 0
