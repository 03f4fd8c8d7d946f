"""GPU alarms, the alerts topic, the dashboard, the cost budget and idle shutdown, checked in moto."""

from __future__ import annotations

import json

import pytest

from gpucloud.testing import budget_subscribers
from support import deployed_alone, minimal_config, settings_for


@pytest.fixture(scope="module")
def demo():
    """Deployed once for the module on its own account: every test here only reads it."""
    values = minimal_config(
        monitoring={"temperatureThresholdC": 80, "idleUtilizationPercent": 3, "idleMinutes": 30},
        budget={"monthlyUsd": 2500},
        groups=[
            {"name": "workers", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "idleShutdown": {"minutes": 45}},
            {"name": "trainers", "instanceTypes": ["p4d.24xlarge"], "maxSize": 2},
        ],
    )
    with deployed_alone(settings_for(values)) as deployment:
        yield deployment


def alarms_of(deployment, group: str) -> dict[str, dict]:
    alarms = deployment.client("cloudwatch").describe_alarms()["MetricAlarms"]
    return {
        alarm["AlarmName"]: alarm
        for alarm in alarms
        if {"Name": "AutoScalingGroupName", "Value": f"gpu-cloud-demo-{group}"}
        in alarm.get("Dimensions", []) + [d for m in alarm.get("Metrics", []) for d in m.get("MetricStat", {}).get("Metric", {}).get("Dimensions", [])]
    }


def test_alerts_topic_is_encrypted_and_mails_the_owner(demo):
    sns = demo.client("sns")
    topic = demo.outputs["alertsTopicArn"]
    attributes = sns.get_topic_attributes(TopicArn=topic)["Attributes"]
    assert attributes["KmsMasterKeyId"] == demo.outputs["kmsKeyArn"]
    policy = json.loads(attributes["Policy"])
    assert policy["Statement"][0]["Principal"]["Service"] == ["cloudwatch.amazonaws.com", "budgets.amazonaws.com"]
    [subscription] = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "ml-team@example.com")


@pytest.mark.parametrize("group", ["workers", "trainers"])
def test_each_group_has_temperature_memory_and_idle_alarms_to_the_topic(demo, group):
    alarms = list(alarms_of(demo, group).values())
    topic = demo.outputs["alertsTopicArn"]
    hot = [a for a in alarms if a.get("MetricName") == "nvidia_smi_temperature_gpu"]
    assert len(hot) == 1 and hot[0]["Threshold"] == 80 and hot[0]["ComparisonOperator"] == "GreaterThanThreshold"
    memory = [a for a in alarms if a.get("Metrics")]
    assert len(memory) == 1 and memory[0]["Threshold"] == 95
    assert any(m.get("Expression") == "100 * used / total" for m in memory[0]["Metrics"])
    idle = [a for a in alarms if a.get("MetricName") == "nvidia_smi_utilization_gpu" and topic in a["AlarmActions"]]
    assert len(idle) == 1
    assert idle[0]["Threshold"] == 3 and idle[0]["Period"] * idle[0]["EvaluationPeriods"] == 30 * 60
    for alarm in hot + memory + idle:
        assert topic in alarm["AlarmActions"]


def test_dashboard_shows_gpu_metrics_of_every_group(demo):
    body = json.loads(demo.client("cloudwatch").get_dashboard(DashboardName="gpu-cloud-demo")["DashboardBody"])
    metrics = {tuple(widget["properties"]["metrics"][0]) for widget in body["widgets"]}
    for group in ("workers", "trainers"):
        for metric in ("nvidia_smi_utilization_gpu", "nvidia_smi_memory_used", "nvidia_smi_temperature_gpu", "nvidia_smi_power_draw"):
            assert ("CWAgent", metric, "AutoScalingGroupName", f"gpu-cloud-demo-{group}") in metrics


def test_budget_filters_on_the_project_tag_and_alerts_at_80_100_and_forecast(demo):
    budgets = demo.client("budgets")
    account_id = demo.account.account_id
    [budget] = budgets.describe_budgets(AccountId=account_id)["Budgets"]
    assert budget["BudgetName"] == "gpu-cloud-demo-monthly"
    assert budget["BudgetLimit"] == {"Amount": "2500.00", "Unit": "USD"}
    assert budget["TimeUnit"] == "MONTHLY" and budget["BudgetType"] == "COST"
    assert budget["CostFilters"] == {"TagKeyValue": ["user:Project$demo"]}
    notifications = budgets.describe_notifications_for_budget(AccountId=account_id, BudgetName=budget["BudgetName"])["Notifications"]
    assert sorted((n["NotificationType"], n["Threshold"]) for n in notifications) == [("ACTUAL", 80.0), ("ACTUAL", 100.0), ("FORECASTED", 100.0)]
    subscribers_by_notification = budget_subscribers(demo.account, budget["BudgetName"])
    assert len(subscribers_by_notification) == 3
    for subscribers in subscribers_by_notification.values():
        assert {(s["SubscriptionType"], s["Address"]) for s in subscribers} == {
            ("EMAIL", "ml-team@example.com"),
            ("SNS", demo.outputs["alertsTopicArn"]),
        }


def test_idle_shutdown_sets_the_group_to_zero_when_its_gpus_idle(demo):
    autoscaling = demo.client("autoscaling")
    policies = autoscaling.describe_policies(AutoScalingGroupName="gpu-cloud-demo-workers")["ScalingPolicies"]
    [shutdown] = [p for p in policies if p.get("AdjustmentType") == "ExactCapacity"]
    assert shutdown["StepAdjustments"] == [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": 0}]
    triggers = [a for a in alarms_of(demo, "workers").values() if shutdown["PolicyARN"] in a["AlarmActions"]]
    assert len(triggers) == 1 and triggers[0]["Period"] * triggers[0]["EvaluationPeriods"] == 45 * 60
    assert not [p for p in autoscaling.describe_policies(AutoScalingGroupName="gpu-cloud-demo-trainers")["ScalingPolicies"]
                if p.get("AdjustmentType") == "ExactCapacity"]


def test_idle_shutdown_needs_a_zero_minimum():
    from gpucloud.config import ConfigError

    values = minimal_config(groups=[{"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 2, "idleShutdown": {}}])
    with pytest.raises(ConfigError, match=r"gpu-cloud:groups\[0\]: idleShutdown scales the group to zero, which needs minSize: 0"):
        settings_for(values)
