"""CloudWatch metric alarms."""

from __future__ import annotations

from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, resource


@resource("aws:cloudwatch/metricAlarm:MetricAlarm")
def put_metric_alarm(account: Account, request: ResourceRequest) -> Created:
    cloudwatch = account.client("cloudwatch")
    inputs = request.inputs
    name = request.physical_name()
    cloudwatch.put_metric_alarm(
        **drop_none(
            {
                "AlarmName": name,
                "AlarmDescription": inputs.get("alarmDescription"),
                "Namespace": inputs.get("namespace"),
                "MetricName": inputs.get("metricName"),
                "Dimensions": [{"Name": key, "Value": value} for key, value in (inputs.get("dimensions") or {}).items()],
                "Statistic": inputs.get("statistic"),
                "ExtendedStatistic": inputs.get("extendedStatistic"),
                "Period": inputs.get("period"),
                "EvaluationPeriods": inputs["evaluationPeriods"],
                "DatapointsToAlarm": inputs.get("datapointsToAlarm"),
                "Threshold": inputs.get("threshold"),
                "ComparisonOperator": inputs["comparisonOperator"],
                "TreatMissingData": inputs.get("treatMissingData"),
                "ActionsEnabled": inputs.get("actionsEnabled", True),
                "AlarmActions": inputs.get("alarmActions"),
                "OKActions": inputs.get("okActions"),
                "InsufficientDataActions": inputs.get("insufficientDataActions"),
                "Tags": aws_tags(inputs.get("tags")),
            }
        )
    )
    alarm = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]
    return Created(id=name, outputs={"arn": alarm["AlarmArn"]})
