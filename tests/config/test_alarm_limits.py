"""Alarm periods CloudWatch refuses are config errors; the engine refuses them as CloudWatch does."""

from __future__ import annotations

import pulumi_aws as aws
import pytest
from botocore.exceptions import ClientError

from support import minimal_config, settings_for
from gpucloud.config import ConfigError
from gpucloud.limits import alarm_window_problem
from gpucloud.testing import run_program


def step(**changes):
    return {"metricName": "QueueDepth", "namespace": "Jobs", "threshold": 10, "scaleOutBy": 1, **changes}


def scaled_group(*steps):
    return {"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2,
            "scaling": {"stepScaling": list(steps)}}


def problems(values):
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    return error.value.problems


@pytest.mark.parametrize("period", [10, 20, 30, 60, 300, 3600, 86400])
def test_periods_cloudwatch_takes_are_accepted(period):
    settings_for(minimal_config(groups=[scaled_group(step(periodSeconds=period, evaluationPeriods=1))]))


@pytest.mark.parametrize("period", [15, 45, 90, 3601])
def test_other_periods_are_refused_naming_the_key(period):
    found = problems(minimal_config(groups=[scaled_group(step(periodSeconds=period))]))
    assert found == [("gpu-cloud:groups[0].scaling.stepScaling[0].periodSeconds",
                      f"{period} s is not a period CloudWatch takes (10, 20, 30 or a multiple of 60)")]


def test_a_window_over_a_day_with_periods_under_an_hour_is_refused():
    found = problems(minimal_config(groups=[scaled_group(step(periodSeconds=1800, evaluationPeriods=100))]))
    assert found == [("gpu-cloud:groups[0].scaling.stepScaling[0]",
                      ("periodSeconds x evaluationPeriods: 100 periods of 1800 s make 180000 s, above the "
                       "86400 s CloudWatch allows an alarm whose period is under an hour"))]


def test_a_day_of_short_periods_and_a_week_of_hourly_ones_are_the_limits():
    assert alarm_window_problem(1800, 48) is None
    assert alarm_window_problem(1800, 49)
    assert alarm_window_problem(3600, 168) is None
    assert "604800 s" in alarm_window_problem(3600, 169)
    assert alarm_window_problem(10, 8640) is None
    assert alarm_window_problem(10, 8641)


def test_the_engine_refuses_an_alarm_cloudwatch_would_refuse(account):
    def program():
        aws.cloudwatch.MetricAlarm(
            "slow", comparison_operator="GreaterThanThreshold", evaluation_periods=2, metric_name="CPUUtilization",
            namespace="AWS/EC2", period=90, statistic="Average", threshold=80,
        )

    with pytest.raises(ClientError, match="90 s is not a period CloudWatch takes"):
        run_program(program, account)
    assert account.client("cloudwatch").describe_alarms()["MetricAlarms"] == []


def test_an_alarm_gets_the_arn_cloudwatch_gives_it(account):
    def program():
        aws.cloudwatch.MetricAlarm(
            "busy", name="gpu-busy", comparison_operator="GreaterThanThreshold", evaluation_periods=2,
            metric_name="CPUUtilization", namespace="AWS/EC2", period=60, statistic="Average", threshold=80,
        )

    deployment = run_program(program, account)

    [alarm] = account.client("cloudwatch").describe_alarms(AlarmNames=["gpu-busy"])["MetricAlarms"]
    assert deployment.named("busy").outputs["arn"] == alarm["AlarmArn"]
