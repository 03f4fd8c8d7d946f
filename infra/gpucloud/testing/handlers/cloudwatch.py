"""CloudWatch metric alarms."""

from __future__ import annotations

from gpucloud.limits import alarm_window_problem
from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource


@resource("aws:cloudwatch/metricAlarm:MetricAlarm")
def put_metric_alarm(account: Account, request: ResourceRequest) -> Created:
    cloudwatch = account.client("cloudwatch")
    inputs = request.inputs
    name = request.physical_name()
    for period in [inputs.get("period")] + [query["metric"]["period"] for query in inputs.get("metricQueries", [])
                                             if query.get("metric")]:
        problem = period is not None and alarm_window_problem(period, inputs["evaluationPeriods"])
        if problem:
            raise refused("PutMetricAlarm", "ValidationError", f"alarm {name}: {problem}")
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
                "Metrics": [_metric_query(query) for query in inputs.get("metricQueries", [])],
                "AlarmActions": inputs.get("alarmActions"),
                "OKActions": inputs.get("okActions"),
                "InsufficientDataActions": inputs.get("insufficientDataActions"),
                "Tags": aws_tags(inputs.get("tags")),
            }
        )
    )
    # The ARN AWS gives an alarm (Service Authorization Reference, Amazon CloudWatch, resource type
    # "alarm": arn:${Partition}:cloudwatch:${Region}:${Account}:alarm:${AlarmName}), without a
    # DescribeAlarms after every PutMetricAlarm; tests read the alarm back from moto.
    return Created(id=name, outputs={"arn": account.arn("cloudwatch", f"alarm:{name}")})


def _metric_query(query: dict) -> dict:
    metric = query.get("metric")
    return drop_none(
        {
            "Id": query["id"],
            "Expression": query.get("expression"),
            "Label": query.get("label"),
            "ReturnData": query.get("returnData"),
            "Period": query.get("period"),
            "MetricStat": drop_none(
                {
                    "Metric": drop_none(
                        {
                            "Namespace": metric.get("namespace"),
                            "MetricName": metric["metricName"],
                            "Dimensions": [{"Name": k, "Value": v} for k, v in (metric.get("dimensions") or {}).items()],
                        }
                    ),
                    "Period": metric["period"],
                    "Stat": metric["stat"],
                    "Unit": metric.get("unit"),
                }
            )
            if metric
            else None,
        }
    )


@resource("aws:cloudwatch/dashboard:Dashboard")
def put_dashboard(account: Account, request: ResourceRequest) -> Created:
    name = request.inputs["dashboardName"]
    account.client("cloudwatch").put_dashboard(DashboardName=name, DashboardBody=request.inputs["dashboardBody"])
    arn = account.client("cloudwatch").get_dashboard(DashboardName=name)["DashboardArn"]
    return Created(id=name, outputs={"dashboardArn": arn})
