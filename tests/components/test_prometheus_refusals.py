"""What AMP refuses or cannot deliver, which moto accepts, refused by the engine; a stack with an
existing workspace, or none; the workspace component on its own in a team's program; and a team's
program that leaves out the Prometheus rules or the Grafana dashboards."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest
import yaml
from botocore.exceptions import ClientError

from support import deploy, minimal_config, node_configs, settings_for
from gpucloud.components import ProjectEnvironment, ProjectEnvironmentArgs, PrometheusWorkspace, PrometheusWorkspaceArgs
from gpucloud.config import ConfigError
from gpucloud.documents import alerts_topic_policy, key_policy
from gpucloud.lookups import resolve_stack
from gpucloud.lookups.pulumi_aws import PulumiAwsLookups
from gpucloud.testing import moto_account, run_program


def test_a_stack_without_prometheus_creates_no_workspace_and_no_collector_target(account):
    deployment = deploy(settings_for(minimal_config()), account)
    assert deployment.of_type("aws:amp/workspace:Workspace") == []
    assert {config.get("prometheus_remote_write_url") for config in node_configs(account)} == {None}


def test_an_existing_workspace_gets_the_rules_and_no_second_workspace(account):
    existing = account.client("amp").create_workspace(alias="shared")["workspaceId"]
    deployment = deploy(settings_for(minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": existing}})), account)

    assert deployment.of_type("aws:amp/workspace:Workspace") == []
    assert [w["workspaceId"] for w in account.client("amp").list_workspaces()["workspaces"]] == [existing]
    assert account.client("amp").list_rule_groups_namespaces(workspaceId=existing)["ruleGroupsNamespaces"]
    assert existing in {config["prometheus_remote_write_url"].split("/")[4] for config in node_configs(account)}


def test_a_workspace_id_the_account_lacks_is_a_config_error_before_any_resource(account):
    missing = "ws-00000000-0000-0000-0000-000000000000"
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": missing}})), account)
    assert error.value.problems == [("gpu-cloud:monitoring.prometheus.workspaceId", f"{missing} does not exist in us-east-1")]
    assert account.client("kms").list_keys()["Keys"] == []


def key_without_aps(account) -> str:
    root = f"arn:aws:iam::{account.account_id}:root"
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": root}, "Action": ["kms:Describe*", "kms:Put*", "kms:Enable*"], "Resource": "*"},
        {"Effect": "Allow", "Principal": {"AWS": root}, "Action": ["kms:CreateGrant", "kms:DescribeKey"], "Resource": "*",
         "Condition": {"StringEquals": {"kms:ViaService": "ec2.us-east-1.amazonaws.com"}}},
    ]}
    return account.client("kms").create_key(Policy=json.dumps(policy))["KeyMetadata"]["Arn"]


def test_the_engine_refuses_a_workspace_key_amp_may_not_use(account):
    """moto creates it; AMP cannot, since it calls KMS through aps.<region> as the creator."""
    key = key_without_aps(account)
    with pytest.raises(ClientError, match="AccessDeniedException.*aps.us-east-1.amazonaws.com"):
        run_program(lambda: aws.amp.Workspace("workspace", kms_key_arn=key), account)


def test_the_engine_refuses_alerts_to_a_topic_amp_may_not_publish_to(account):
    workspace = account.client("amp").create_workspace(alias="w")
    topic = account.client("sns").create_topic(Name="alerts")["TopicArn"]
    account.client("sns").set_topic_attributes(TopicArn=topic, AttributeName="Policy",
                                               AttributeValue=json.dumps(alerts_topic_policy(topic, account.account_id)))
    definition = yaml.safe_dump({"alertmanager_config": yaml.safe_dump({
        "route": {"receiver": "r"}, "receivers": [{"name": "r", "sns_configs": [{"topic_arn": topic, "sigv4": {"region": "us-east-1"}}]}]})})

    with pytest.raises(ClientError, match="does not let aps.amazonaws.com publish"):
        run_program(lambda: aws.amp.AlertManagerDefinition("alerts", workspace_id=workspace["workspaceId"], definition=definition), account)

    account.client("sns").set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps(
        alerts_topic_policy(topic, account.account_id, workspace["arn"])))
    run_program(lambda: aws.amp.AlertManagerDefinition("alerts", workspace_id=workspace["workspaceId"], definition=definition), account)


def test_the_component_builds_on_its_own_for_a_teams_program(account):
    """What a team that runs its own Prometheus stack but wants the workspace does."""
    role = account.client("iam").create_role(RoleName="team-node", AssumeRolePolicyDocument="{}")["Role"]["RoleName"]
    policy = key_policy("aws", account.account_id, "us-east-1", [], log_groups=["/gpu-cloud-aps/team/"], prometheus=True)
    key = account.client("kms").create_key(Policy=json.dumps(policy))["KeyMetadata"]["Arn"]

    deployment = run_program(lambda: PrometheusWorkspace("team", PrometheusWorkspaceArgs(
        name_base="team", region="us-east-1", kms_key_arn=key, node_role_name=role,
        rules=yaml.safe_dump({"groups": [{"name": "team", "rules": [{"record": "team:up", "expr": "up"}]}]}),
    )), account)

    assert [r.type for r in deployment.resources if r.type.startswith("aws:amp/")] == [
        "aws:amp/workspace:Workspace", "aws:amp/ruleGroupNamespace:RuleGroupNamespace"]


def test_a_saml_workspace_gets_its_identity_provider_and_role_groups(account):
    saml = {"metadataUrl": "https://idp.example.com/saml/metadata.xml", "adminRoleValues": ["ml-platform"],
            "editorRoleValues": ["ml-serving", "ml-research"]}
    deployment = deploy(settings_for(minimal_config(monitoring={
        "prometheus": {"enabled": True}, "grafana": {"enabled": True, "authentication": "SAML", "saml": saml}})), account)

    [workspace] = deployment.of_type("aws:grafana/workspace:Workspace")
    [configured] = deployment.of_type("aws:grafana/workspaceSamlConfiguration:WorkspaceSamlConfiguration")
    assert workspace.inputs["authenticationProviders"] == ["SAML"]
    assert configured.inputs["workspaceId"] == workspace.id
    assert (configured.inputs["idpMetadataUrl"], configured.inputs["adminRoleValues"], configured.inputs["editorRoleValues"],
            configured.inputs["roleAssertion"]) == (saml["metadataUrl"], ["ml-platform"], ["ml-serving", "ml-research"], "role")


def test_managed_grafana_in_a_region_without_it_is_a_config_error_before_any_resource():
    """botocore's endpoint data has no Managed Grafana in us-west-1 (it has AMP there); moto would take both."""
    with moto_account("us-west-1") as west:
        with pytest.raises(ConfigError) as error:
            deploy(settings_for(minimal_config(monitoring={"prometheus": {"enabled": True}, "grafana": {"enabled": True}}),
                                region="us-west-1"), west)
        assert west.client("kms").list_keys()["Keys"] == []
    [reason] = [reason for key, reason in error.value.problems if key.startswith("gpu-cloud:monitoring")]
    assert dict(error.value.problems)["gpu-cloud:monitoring.grafana.enabled"] == reason
    assert reason.startswith("Amazon Managed Grafana has no endpoint in us-west-1 (botocore ") and "us-east-1" in reason


@pytest.mark.parametrize("given, missing", [({}, "prometheus_rules"), ({"prometheus_rules": "groups: []\n"}, "grafana_dashboards")])
def test_an_environment_missing_its_monitoring_files_declares_nothing(account, given, missing):
    """An importing team's program that leaves out what Prometheus or Grafana need is stopped
    before the environment declares any resource, not halfway through."""
    settings = settings_for(minimal_config(monitoring={"prometheus": {"enabled": True}, "grafana": {"enabled": True}}))
    refusals: list[str] = []

    def program():
        resolved = resolve_stack(settings, PulumiAwsLookups())
        try:
            ProjectEnvironment("demo", ProjectEnvironmentArgs(stack=resolved, **given))
        except ValueError as error:
            refusals.append(str(error))

    deployment = run_program(program, account, stack="demo")

    assert len(refusals) == 1 and f"pass {missing}" in refusals[0]
    assert deployment.resources == []
