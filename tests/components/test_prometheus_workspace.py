"""monitoring.prometheus and .grafana on the llm-infer example: the AMP workspace, its rules, where
its alerts go, the node's right to write to it, the node's collector pointed at it, and Grafana
reading it, looked at through boto3."""

from __future__ import annotations

import json
import shutil
import subprocess

import pulumi_aws as aws
import pytest
import yaml
from botocore.exceptions import ClientError

from support import STACKS, deploy, minimal_config, node_configs, settings_for
from gpucloud.config import ConfigError, load_stack_file
from gpucloud.observability import rule_file_text
from gpucloud.testing import moto_account, run_program


@pytest.fixture(scope="module")
def llm_infer():
    settings = load_stack_file(STACKS / "Pulumi.llm-infer.yaml")
    with moto_account(settings.region) as account:
        yield settings, deploy(settings, account), account


def workspace_of(deployment):
    [workspace] = deployment.of_type("aws:amp/workspace:Workspace")
    return workspace


def test_the_workspace_is_encrypted_with_the_project_key_and_logs_to_an_encrypted_group(llm_infer):
    settings, deployment, account = llm_infer
    workspace = workspace_of(deployment)
    found = account.client("amp").describe_workspace(workspaceId=workspace.id)["workspace"]

    assert found["alias"] == "gpu-cloud-llm-infer" and found["status"]["statusCode"] == "ACTIVE"
    assert workspace.inputs["kmsKeyArn"] == deployment.outputs["kmsKeyArn"]
    logging = account.client("amp").describe_logging_configuration(workspaceId=workspace.id)["loggingConfiguration"]
    [group] = account.client("logs").describe_log_groups(logGroupNamePrefix="/gpu-cloud-aps/llm-infer/")["logGroups"]
    assert logging["logGroupArn"] == f"{group['arn'].removesuffix(':*')}:*"
    assert group["kmsKeyId"] == deployment.outputs["kmsKeyArn"] and group["retentionInDays"] == 30
    assert deployment.outputs["prometheusRemoteWriteUrl"] == (
        f"https://aps-workspaces.us-east-1.amazonaws.com/workspaces/{workspace.id}/api/v1/remote_write")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool comes with Debian's prometheus (.ci/setup)")
def test_the_rules_namespace_holds_the_stacks_rules_and_promtool_accepts_them(llm_infer, tmp_path):
    settings, deployment, account = llm_infer
    [namespace] = account.client("amp").list_rule_groups_namespaces(workspaceId=workspace_of(deployment).id)["ruleGroupsNamespaces"]
    data = account.client("amp").describe_rule_groups_namespace(
        workspaceId=workspace_of(deployment).id, name=namespace["name"])["ruleGroupsNamespace"]["data"]

    assert data.decode() == rule_file_text(settings)
    (tmp_path / "rules.yml").write_bytes(data)
    checked = subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_node_role_may_only_remote_write_to_the_workspace(llm_infer):
    settings, deployment, account = llm_infer
    role = deployment.outputs["instanceRoleArn"].rsplit("/", 1)[1]
    document = account.client("iam").get_role_policy(RoleName=role, PolicyName="gpu-cloud-node-prometheus")["PolicyDocument"]

    assert document["Statement"] == [{"Sid": "RemoteWriteToProjectWorkspace", "Effect": "Allow",
                                      "Action": "aps:RemoteWrite", "Resource": workspace_of(deployment).outputs["arn"]}]
    others = account.client("iam").list_role_policies(RoleName=role)["PolicyNames"]
    for name in others:
        text = json.dumps(account.client("iam").get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
        assert "aps:" not in text or name == "gpu-cloud-node-prometheus"


def test_every_node_collector_writes_to_the_workspace(llm_infer):
    settings, deployment, account = llm_infer
    configs = node_configs(account)
    assert {config["prometheus_remote_write_url"] for config in configs} == {deployment.outputs["prometheusRemoteWriteUrl"]}
    assert {config["prometheus_scrape_interval_s"] for config in configs} == {30}


def test_only_this_workspace_may_publish_alerts_to_the_topic(llm_infer):
    settings, deployment, account = llm_infer
    topic = deployment.outputs["alertsTopicArn"]
    policy = json.loads(account.client("sns").get_topic_attributes(TopicArn=topic)["Attributes"]["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == "ProjectPrometheusWorkspacePublishes"]

    assert statement["Principal"] == {"Service": "aps.amazonaws.com"}
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": account.account_id},
                                      "ArnEquals": {"aws:SourceArn": workspace_of(deployment).outputs["arn"]}}


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool comes with Debian's prometheus-alertmanager (.ci/setup)")
def test_alerts_go_to_the_project_topic_in_a_configuration_amtool_accepts(llm_infer, tmp_path):
    settings, deployment, account = llm_infer
    [definition] = deployment.of_type("aws:amp/alertManagerDefinition:AlertManagerDefinition")
    inner = yaml.safe_load(definition.inputs["definition"])["alertmanager_config"]

    assert yaml.safe_load(inner)["receivers"] == [{"name": "project-topic", "sns_configs": [
        {"topic_arn": deployment.outputs["alertsTopicArn"], "sigv4": {"region": "us-east-1"}}]}]
    (tmp_path / "alertmanager.yml").write_text(inner)
    checked = subprocess.run(["amtool", "check-config", str(tmp_path / "alertmanager.yml")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert definition.id == workspace_of(deployment).id and not definition.validated


def test_grafana_queries_the_workspace_with_its_own_role_and_gets_both_dashboards(llm_infer):
    settings, deployment, account = llm_infer
    [role] = [r for r in deployment.of_type("aws:iam/role:Role") if r.inputs["name"].endswith("-grafana")]
    document = account.client("iam").get_role_policy(RoleName=role.inputs["name"], PolicyName="gpu-cloud-grafana-prometheus")
    [statement] = document["PolicyDocument"]["Statement"]
    assert statement["Resource"] == workspace_of(deployment).outputs["arn"]
    assert sorted(statement["Action"]) == ["aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics"]
    [source] = deployment.of_type("grafana:oss/dataSource:DataSource")
    assert source.inputs["url"] == deployment.outputs["prometheusRemoteWriteUrl"].removesuffix("api/v1/remote_write")
    assert sorted(json.loads(d.inputs["configJson"])["title"] for d in deployment.of_type("grafana:oss/dashboard:Dashboard")) == [
        "gpu-cloud llm-infer: GPU fleet", "gpu-cloud llm-infer: GPU node"]


def test_the_engine_refuses_a_second_rules_namespace_of_one_name_as_amp_does(llm_infer):
    """CreateRuleGroupsNamespace answers ConflictException for a name the workspace holds (moto replaces it)."""
    settings, deployment, account = llm_infer
    workspace = workspace_of(deployment).id
    [namespace] = account.client("amp").list_rule_groups_namespaces(workspaceId=workspace)["ruleGroupsNamespaces"]

    with pytest.raises(ClientError, match=f"ConflictException.*{workspace} already has a rule groups namespace gpu-cloud"):
        run_program(lambda: aws.amp.RuleGroupNamespace("again", name="gpu-cloud", workspace_id=workspace,
                                                       data=rule_file_text(settings)), account)
    [kept] = account.client("amp").list_rule_groups_namespaces(workspaceId=workspace)["ruleGroupsNamespaces"]
    assert kept["arn"] == namespace["arn"] and kept["createdAt"] == namespace["createdAt"]


def test_the_engine_refuses_a_second_alert_manager_definition_as_amp_does(llm_infer):
    """A workspace holds one definition: CreateAlertManagerDefinition answers ConflictException."""
    settings, deployment, account = llm_infer
    workspace = workspace_of(deployment).id
    [definition] = deployment.of_type("aws:amp/alertManagerDefinition:AlertManagerDefinition")

    with pytest.raises(ClientError, match=f"ConflictException.*{workspace} already has an alert manager definition"):
        run_program(lambda: aws.amp.AlertManagerDefinition("again", workspace_id=workspace,
                                                           definition=definition.inputs["definition"]), account)


def test_leaving_the_alert_manager_alone_needs_an_existing_workspace():
    values = minimal_config(monitoring={"prometheus": {"enabled": True, "manageAlertManager": False}})
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:monitoring.prometheus.manageAlertManager"
    assert "workspaceId" in reason
