"""GpuAutoscaling: scaling policies, their alarms and scheduled actions for one group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.config import IdleShutdown, ScalingConfig

GPU_METRICS_NAMESPACE = "CWAgent"
GPU_UTILIZATION_METRIC = "nvidia_smi_utilization_gpu"
"""Published by the CloudWatch agent's `nvidia_gpu` section, aggregated per Auto Scaling group."""
IDLE_PERIOD_SECONDS = 300


def _dimensions(dimensions: Mapping[str, str]) -> list[dict]:
    return [{"name": name, "value": value} for name, value in dimensions.items()]


@dataclass(frozen=True)
class GpuAutoscalingArgs:
    group_name: pulumi.Input[str]
    scaling: ScalingConfig
    idle_shutdown: IdleShutdown | None = None
    """Scale to zero (exact capacity 0) once GPUs stay idle; the group's minimum must be 0."""
    tags: Mapping[str, str] = field(default_factory=dict)
    alarm_actions: tuple[pulumi.Input[str], ...] = ()
    """Extra alarm targets (e.g. the project's SNS topic) besides the scaling policies."""


class GpuAutoscaling(pulumi.ComponentResource):
    """Target tracking, step scale-out, schedules and GPU-idle scale-in for an Auto Scaling group."""

    policy_arns: pulumi.Output[list[str]]
    """ARNs of the scaling policies."""
    alarm_arns: pulumi.Output[list[str]]
    """ARNs of the alarms that drive step policies."""

    def __init__(self, name: str, args: GpuAutoscalingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:GpuAutoscaling", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        scaling = args.scaling
        self.policies: list[aws.autoscaling.Policy] = []
        self.alarms: list[aws.cloudwatch.MetricAlarm] = []
        self.schedules: list[aws.autoscaling.Schedule] = []

        if scaling.target_tracking:
            tracking = scaling.target_tracking
            self.policies.append(
                aws.autoscaling.Policy(
                    f"{name}-target-tracking",
                    autoscaling_group_name=args.group_name,
                    policy_type="TargetTrackingScaling",
                    target_tracking_configuration={
                        "customized_metric_specification": {
                            "metric_name": tracking.metric_name,
                            "namespace": tracking.namespace,
                            "statistic": tracking.statistic,
                            "metric_dimensions": _dimensions(tracking.dimensions),
                        },
                        "target_value": tracking.target_value,
                        "disable_scale_in": tracking.disable_scale_in,
                    },
                    opts=child,
                )
            )

        for index, step in enumerate(scaling.step_scaling):
            policy = aws.autoscaling.Policy(
                f"{name}-step-out-{index}",
                autoscaling_group_name=args.group_name,
                policy_type="StepScaling",
                adjustment_type="ChangeInCapacity",
                metric_aggregation_type=step.statistic if step.statistic in ("Average", "Minimum", "Maximum") else "Average",
                estimated_instance_warmup=step.cooldown_seconds,
                step_adjustments=[{"metric_interval_lower_bound": "0", "scaling_adjustment": step.scale_out_by}],
                opts=child,
            )
            self.policies.append(policy)
            self.alarms.append(
                aws.cloudwatch.MetricAlarm(
                    f"{name}-step-out-{index}-alarm",
                    alarm_description=f"scale out by {step.scale_out_by} when {step.metric_name} >= {step.threshold}",
                    namespace=step.namespace,
                    metric_name=step.metric_name,
                    dimensions=dict(step.dimensions),
                    statistic=step.statistic,
                    period=step.period_seconds,
                    evaluation_periods=step.evaluation_periods,
                    threshold=step.threshold,
                    comparison_operator="GreaterThanOrEqualToThreshold",
                    treat_missing_data="notBreaching",
                    alarm_actions=[policy.arn, *args.alarm_actions],
                    tags=dict(args.tags),
                    opts=child,
                )
            )

        if scaling.gpu_idle_scale_in:
            idle = scaling.gpu_idle_scale_in
            self._scale_in_when_idle(
                f"{name}-gpu-idle",
                args,
                adjustment_type="ChangeInCapacity",
                adjustment=-idle.scale_in_by,
                utilization_percent=idle.utilization_percent,
                minutes=idle.minutes,
                description=f"scale in by {idle.scale_in_by}",
            )
        if args.idle_shutdown:
            self._scale_in_when_idle(
                f"{name}-idle-shutdown",
                args,
                adjustment_type="ExactCapacity",
                adjustment=0,
                utilization_percent=args.idle_shutdown.utilization_percent,
                minutes=args.idle_shutdown.minutes,
                description="scale to zero",
            )

        for schedule in scaling.schedules:
            self.schedules.append(
                aws.autoscaling.Schedule(
                    f"{name}-{schedule.name}",
                    autoscaling_group_name=args.group_name,
                    scheduled_action_name=schedule.name,
                    recurrence=schedule.recurrence,
                    time_zone=schedule.time_zone,
                    min_size=schedule.min_size if schedule.min_size is not None else -1,
                    max_size=schedule.max_size if schedule.max_size is not None else -1,
                    desired_capacity=schedule.desired_capacity if schedule.desired_capacity is not None else -1,
                    opts=child,
                )
            )

        self.policy_arns = pulumi.Output.all(*[policy.arn for policy in self.policies])
        self.alarm_arns = pulumi.Output.all(*[alarm.arn for alarm in self.alarms])
        self.register_outputs({"policyArns": self.policy_arns, "alarmArns": self.alarm_arns})

    def _scale_in_when_idle(
        self,
        name: str,
        args: GpuAutoscalingArgs,
        *,
        adjustment_type: str,
        adjustment: int,
        utilization_percent: float,
        minutes: int,
        description: str,
    ) -> None:
        """A step policy fired by the group's average GPU utilisation staying under a threshold."""
        child = pulumi.ResourceOptions(parent=self)
        policy = aws.autoscaling.Policy(
            f"{name}-in",
            autoscaling_group_name=args.group_name,
            policy_type="StepScaling",
            adjustment_type=adjustment_type,
            metric_aggregation_type="Average",
            step_adjustments=[{"metric_interval_upper_bound": "0", "scaling_adjustment": adjustment}],
            opts=child,
        )
        self.policies.append(policy)
        self.alarms.append(
            aws.cloudwatch.MetricAlarm(
                f"{name}-alarm",
                alarm_description=(
                    f"{description} while average GPU utilisation stays under {utilization_percent}% "
                    f"for {minutes} minutes"
                ),
                namespace=GPU_METRICS_NAMESPACE,
                metric_name=GPU_UTILIZATION_METRIC,
                dimensions={"AutoScalingGroupName": args.group_name},
                statistic="Average",
                period=IDLE_PERIOD_SECONDS,
                evaluation_periods=max(1, minutes * 60 // IDLE_PERIOD_SECONDS),
                threshold=utilization_percent,
                comparison_operator="LessThanThreshold",
                treat_missing_data="notBreaching",
                alarm_actions=[policy.arn, *args.alarm_actions],
                tags=dict(args.tags),
                opts=child,
            )
        )
