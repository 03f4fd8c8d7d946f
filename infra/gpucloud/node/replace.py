"""Having a node with a broken GPU replaced, and a breaker that stops a fleet-wide wave.

On node faults the watch logs one structured line, counts the fault in CloudWatch (namespace
`gpu-cloud/Node`, dimension `AutoScalingGroupName`, metric `NodeFaults`), saves the checkpoint as
on a spot notice, then marks the instance Unhealthy so Auto Scaling replaces it. The node's
`gpucloud run` jobs are stopped by the drain once Auto Scaling holds the instance in its terminate
hook, not here: by then the node is out of service, which is how `gpucloud run` tells a replaced
node from a failed job.

The breaker counts replacements across the group's nodes with the same metric namespace: each
replacement adds 1 to `NodeReplacements`; before replacing, a node sums that metric over the last
hour (GetMetricStatistics). At `maxReplacementsPerHour` or more the node is only marked (metric
`ReplacementsHeld`, which the stack alarms on), so a bad driver or AMI cannot drain the fleet.
CloudWatch takes a minute or two to count a data point, so nodes that fail in the same minute may
pass the breaker together: the limit holds to within the faults of that minute.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from gpucloud.node.commands import CommandRunner
from gpucloud.node.config import NodeConfig
from gpucloud.node.faults import Finding
from gpucloud.node.aws_calls import call_aws
from gpucloud.node.checkpoint_save import save_checkpoint
from gpucloud.node.retry import Backoff

log = logging.getLogger(__name__)
NAMESPACE = "gpu-cloud/Node"


def replacements_last_hour(cloudwatch: Any, group: str, now: datetime.datetime) -> int:
    found = cloudwatch.get_metric_statistics(
        Namespace=NAMESPACE, MetricName="NodeReplacements",
        Dimensions=[{"Name": "AutoScalingGroupName", "Value": group}],
        StartTime=now - datetime.timedelta(hours=1), EndTime=now, Period=3600, Statistics=["Sum"],
    )["Datapoints"]
    return int(sum(point["Sum"] for point in found))


def report_throttling(client_factory: Callable[[str, str], Any], region: str, group: str, gpus: int) -> None:
    """ThrottledGpus in the group's series: sustained throttling is alarmed, never replaced. A
    failed put is logged and the watch goes on (the next interval reports again)."""
    try:
        client_factory("cloudwatch", region).put_metric_data(Namespace=NAMESPACE, MetricData=[{
            "MetricName": "ThrottledGpus", "Dimensions": [{"Name": "AutoScalingGroupName", "Value": group}],
            "Value": gpus, "Unit": "Count",
        }])
    except Exception as error:  # noqa: BLE001 - botocore's errors; reporting must not stop the watch
        log.warning("could not report %d throttled GPU(s): %s", gpus, error)


def replace_node(
    config: NodeConfig,
    instance_id: str,
    region: str,
    group: str,
    faults: Sequence[Finding],
    max_replacements_per_hour: int,
    client_factory: Callable[[str, str], Any],
    run: CommandRunner,
    backoff: Backoff = Backoff(attempts=3),
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.timezone.utc),
) -> str:
    """'replaced' (checkpoint saved, instance marked Unhealthy) or 'held' (the breaker is open)."""
    cloudwatch = client_factory("cloudwatch", region)
    dimensions = [{"Name": "AutoScalingGroupName", "Value": group}]
    log.error("%s", json.dumps({"event": "node-fault", "instance": instance_id, "group": group,
                                "faults": [{"gpu": fault.gpu, "reason": fault.reason} for fault in faults]}))

    def count(metric: str) -> None:
        call_aws(f"PutMetricData {metric}", lambda: cloudwatch.put_metric_data(
            Namespace=NAMESPACE, MetricData=[{"MetricName": metric, "Dimensions": dimensions, "Value": 1, "Unit": "Count"}]
        ), backoff, sleep)

    count("NodeFaults")
    recent = call_aws("GetMetricStatistics", lambda: replacements_last_hour(cloudwatch, group, now()), backoff, sleep)
    if recent >= max_replacements_per_hour:
        count("ReplacementsHeld")
        log.error("breaker open: %d replacement(s) in %s in the last hour (limit %d); %s is only marked",
                  recent, group, max_replacements_per_hour, instance_id)
        return "held"
    save_checkpoint(config, instance_id, region, run, backoff, sleep)
    count("NodeReplacements")
    autoscaling = client_factory("autoscaling", region)
    call_aws("SetInstanceHealth", lambda: autoscaling.set_instance_health(
        InstanceId=instance_id, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
    ), backoff, sleep)
    log.info("marked %s Unhealthy in %s: Auto Scaling replaces it", instance_id, group)
    return "replaced"
