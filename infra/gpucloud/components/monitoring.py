"""GpuMonitoring: the project's alerts topic, GPU alarms per group, a GPU dashboard, and the
alert manager of the project's Prometheus workspace sending to the topic."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.components.autoscaling import GPU_METRICS_NAMESPACE, GPU_UTILIZATION_METRIC
from gpucloud.documents import alerts_topic_policy
from gpucloud.naming import NODE_METRICS_NAMESPACE, alerts_topic_name
from gpucloud.observability.alerting import alert_manager_definition

GPU_TEMPERATURE_METRIC = "nvidia_smi_temperature_gpu"
GPU_MEMORY_USED_METRIC = "nvidia_smi_memory_used"
GPU_MEMORY_TOTAL_METRIC = "nvidia_smi_memory_total"
GPU_POWER_METRIC = "nvidia_smi_power_draw"
ALARM_PERIOD_SECONDS = 300


@dataclass(frozen=True)
class GpuMonitoringArgs:
    project: str
    """What the names AWS wants unique are built from: the project, or for one of several stacks of a
    project in one account, the stack's name base (`gpucloud.naming.name_base`, as ProjectEnvironment passes)."""
    account_id: str
    """The deploying account's id, for the ARNs its policies name."""
    region: str
    """The region it is deployed in."""
    owner_email: str
    """Who the alerts topic e-mails (a subscription to confirm)."""
    kms_key_arn: pulumi.Input[str]
    """The customer-managed key the alerts topic is encrypted with."""
    group_names: Sequence[str]
    """Auto Scaling group names; the CloudWatch agent aggregates GPU metrics per group."""
    temperature_threshold_c: int = 85
    """A GPU above this temperature (°C) raises an alarm."""
    memory_saturation_percent: float = 95
    """GPU memory used above this share (%) raises an alarm."""
    idle_utilization_percent: float = 5
    """A group whose average GPU utilisation stays under this share (%) for `idle_minutes` is idle."""
    idle_minutes: int = 60
    """How long a group must stay idle before its idle alarm fires."""
    dashboard: bool = True
    """A CloudWatch dashboard with one row of GPU widgets per group."""
    prometheus_workspace_id: pulumi.Input[str] | None = None
    """The id of the project's Prometheus workspace (with `prometheus_workspace_arn`)."""
    prometheus_workspace_arn: pulumi.Input[str] | None = None
    """The project's Prometheus workspace: its alert manager sends to the topic, and the topic
    policy lets that workspace (and no other) publish."""
    manage_alert_manager: bool = True
    """False: an existing workspace's alert manager definition is left as it is (none is declared)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""


def _by_group(group_name: str) -> dict[str, str]:
    return {"AutoScalingGroupName": group_name}


def dashboard_body(region: str, group_names: Sequence[str]) -> str:
    """One row of GPU widgets per group: utilisation, memory, temperature, power."""
    widgets = []
    for row, group in enumerate(group_names):
        for column, (title, metric, stat) in enumerate(
            (
                ("GPU utilisation %", GPU_UTILIZATION_METRIC, "Average"),
                ("GPU memory used MiB", GPU_MEMORY_USED_METRIC, "Average"),
                ("GPU temperature °C", GPU_TEMPERATURE_METRIC, "Maximum"),
                ("GPU power W", GPU_POWER_METRIC, "Average"),
            )
        ):
            widgets.append(
                {
                    "type": "metric",
                    "x": column * 6,
                    "y": row * 6,
                    "width": 6,
                    "height": 6,
                    "properties": {
                        "title": f"{group}: {title}",
                        "region": region,
                        "stat": stat,
                        "period": 60,
                        "metrics": [[GPU_METRICS_NAMESPACE, metric, "AutoScalingGroupName", group]],
                    },
                }
            )
    return json.dumps({"widgets": widgets})


class GpuMonitoring(pulumi.ComponentResource):
    """Alarms on GPU temperature, GPU memory saturation and idle GPUs, all to one SNS topic."""

    topic_arn: pulumi.Output[str]
    """The project's alerts topic (owner subscribed by e-mail; budgets publish here too)."""
    idle_alarm_arns: dict[str, pulumi.Output[str]]
    """Per group, the idle alarm (other components hang scale-to-zero actions on it)."""
    dashboard_name: pulumi.Output[str] | None
    """The CloudWatch dashboard, when enabled."""

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:GpuMonitoring", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.topic = aws.sns.Topic(
            f"{name}-alerts",
            name=alerts_topic_name(args.project),
            kms_master_key_id=args.kms_key_arn,
            tags={**args.tags, "Name": alerts_topic_name(args.project)},
            opts=child,
        )
        topic_policy = aws.sns.TopicPolicy(
            f"{name}-alerts-policy",
            arn=self.topic.arn,
            policy=pulumi.Output.all(self.topic.arn, args.prometheus_workspace_arn).apply(
                lambda values: json.dumps(alerts_topic_policy(values[0], args.account_id, values[1]))
            ),
            opts=pulumi.ResourceOptions(parent=self.topic),
        )
        self.alert_manager = None
        if args.prometheus_workspace_id is not None and args.manage_alert_manager:
            self.alert_manager = aws.amp.AlertManagerDefinition(
                f"{name}-prometheus-alerts",
                workspace_id=args.prometheus_workspace_id,
                definition=self.topic.arn.apply(lambda arn: alert_manager_definition(arn, args.region)),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[topic_policy]),
            )
        aws.sns.TopicSubscription(
            f"{name}-owner-email",
            topic=self.topic.arn,
            protocol="email",
            endpoint=args.owner_email,
            opts=pulumi.ResourceOptions(parent=self.topic),
        )
        notify = [self.topic.arn]
        self.alarms: list[aws.cloudwatch.MetricAlarm] = []
        self.idle_alarm_arns = {}
        for group in args.group_names:
            for metric, what in (
                ("NodeFaults", "a node reported a GPU fault (Xid, missing GPU, failed row remap) and asked to be replaced"),
                ("ReplacementsHeld", "the replacement breaker is open: a faulty node stays in service, marked only"),
                ("ThrottledGpus", "a GPU has been thermal or power throttled for health.throttleMinutes (not replaced)"),
            ):
                self.alarms.append(
                    aws.cloudwatch.MetricAlarm(
                        f"{name}-{group}-{metric.lower()}",
                        alarm_description=f"{group}: {what}",
                        namespace=NODE_METRICS_NAMESPACE,
                        metric_name=metric,
                        dimensions=_by_group(group),
                        statistic="Sum",
                        period=300,
                        evaluation_periods=1,
                        threshold=1,
                        comparison_operator="GreaterThanOrEqualToThreshold",
                        treat_missing_data="notBreaching",
                        alarm_actions=notify,
                        tags=dict(args.tags),
                        opts=child,
                    )
                )
            self.alarms.append(
                aws.cloudwatch.MetricAlarm(
                    f"{name}-{group}-gpu-hot",
                    alarm_description=f"{group}: a GPU is above {args.temperature_threshold_c} °C",
                    namespace=GPU_METRICS_NAMESPACE,
                    metric_name=GPU_TEMPERATURE_METRIC,
                    dimensions=_by_group(group),
                    statistic="Maximum",
                    period=60,
                    evaluation_periods=3,
                    threshold=args.temperature_threshold_c,
                    comparison_operator="GreaterThanThreshold",
                    treat_missing_data="notBreaching",
                    alarm_actions=notify,
                    ok_actions=notify,
                    tags=dict(args.tags),
                    opts=child,
                )
            )
            self.alarms.append(
                aws.cloudwatch.MetricAlarm(
                    f"{name}-{group}-gpu-memory-full",
                    alarm_description=f"{group}: GPU memory above {args.memory_saturation_percent}% used",
                    metric_queries=[
                        {
                            "id": "used",
                            "metric": {
                                "namespace": GPU_METRICS_NAMESPACE,
                                "metric_name": GPU_MEMORY_USED_METRIC,
                                "dimensions": _by_group(group),
                                "stat": "Maximum",
                                "period": ALARM_PERIOD_SECONDS,
                            },
                        },
                        {
                            "id": "total",
                            "metric": {
                                "namespace": GPU_METRICS_NAMESPACE,
                                "metric_name": GPU_MEMORY_TOTAL_METRIC,
                                "dimensions": _by_group(group),
                                "stat": "Maximum",
                                "period": ALARM_PERIOD_SECONDS,
                            },
                        },
                        {"id": "saturation", "expression": "100 * used / total", "label": "GPU memory used %", "return_data": True},
                    ],
                    evaluation_periods=3,
                    threshold=args.memory_saturation_percent,
                    comparison_operator="GreaterThanThreshold",
                    treat_missing_data="notBreaching",
                    alarm_actions=notify,
                    tags=dict(args.tags),
                    opts=child,
                )
            )
            idle = aws.cloudwatch.MetricAlarm(
                f"{name}-{group}-gpu-idle",
                alarm_description=(
                    f"{group}: average GPU utilisation under {args.idle_utilization_percent}% "
                    f"for {args.idle_minutes} minutes"
                ),
                namespace=GPU_METRICS_NAMESPACE,
                metric_name=GPU_UTILIZATION_METRIC,
                dimensions=_by_group(group),
                statistic="Average",
                period=ALARM_PERIOD_SECONDS,
                evaluation_periods=max(1, args.idle_minutes * 60 // ALARM_PERIOD_SECONDS),
                threshold=args.idle_utilization_percent,
                comparison_operator="LessThanThreshold",
                treat_missing_data="notBreaching",
                alarm_actions=notify,
                tags=dict(args.tags),
                opts=child,
            )
            self.alarms.append(idle)
            self.idle_alarm_arns[group] = idle.arn
        self.dashboard = None
        if args.dashboard:
            self.dashboard = aws.cloudwatch.Dashboard(
                f"{name}-dashboard",
                dashboard_name=f"gpu-cloud-{args.project}",
                dashboard_body=dashboard_body(args.region, args.group_names),
                opts=child,
            )
        self.topic_arn = self.topic.arn
        self.dashboard_name = self.dashboard.dashboard_name if self.dashboard else None
        self.register_outputs({"topicArn": self.topic_arn, "dashboardName": self.dashboard_name})
