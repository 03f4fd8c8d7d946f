"""monitoring.prometheus and monitoring.grafana: off by default, refused where they could not work."""

from __future__ import annotations

import pytest

from support import minimal_config, settings_for
from gpucloud.config import ConfigError


PROMETHEUS_AND = {"prometheus": {"enabled": True}}


def problems(values):
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    return error.value.problems


def test_prometheus_and_grafana_are_off_unless_asked_for():
    monitoring = settings_for(minimal_config()).config.monitoring
    assert not monitoring.prometheus.enabled and not monitoring.grafana.enabled
    assert monitoring.prometheus.scrape_interval_seconds == 30


def test_grafana_without_prometheus_is_refused_naming_the_key():
    [(key, why)] = problems(minimal_config(monitoring={"grafana": {"enabled": True}}))
    assert key == "gpu-cloud:monitoring" and "grafana.enabled needs prometheus.enabled" in why


@pytest.mark.parametrize("workspace_id", ["ws-1234", "arn:aws:aps:us-east-1:123456789012:workspace/ws-1", "WS-0123ABCD-0123-4567-89ab-0123456789ab"])
def test_a_workspace_id_that_is_not_one_is_refused(workspace_id):
    [(key, why)] = problems(minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": workspace_id}}))
    assert key == "gpu-cloud:monitoring.prometheus.workspaceId" and "expected an Amazon Managed Service for Prometheus workspace id" in why


@pytest.mark.parametrize(("key", "value"), [("scrapeIntervalSeconds", 5), ("scrapeIntervalSeconds", 301), ("logRetentionDays", 10)])
def test_scrape_interval_and_log_retention_outside_what_works_are_refused(key, value):
    [(named, _why)] = problems(minimal_config(monitoring={"prometheus": {"enabled": True, key: value}}))
    assert named == f"gpu-cloud:monitoring.prometheus.{key}"


def test_endpoints_only_with_prometheus_needs_the_aps_workspaces_endpoint():
    endpoints = ["autoscaling", "ec2", "monitoring", "ssm", "ssmmessages", "ec2messages", "logs"]
    network = {"egress": "endpointsOnly", "interfaceEndpoints": endpoints}
    settings_for(minimal_config(network=network))

    [(key, why)] = problems(minimal_config(network=network, monitoring={"prometheus": {"enabled": True}}))

    assert key == "gpu-cloud:network.interfaceEndpoints" and why.startswith(
        "lacks aps-workspaces (monitoring.prometheus: RemoteWrite), which the nodes call")
    settings_for(minimal_config(network={**network, "interfaceEndpoints": [*endpoints, "aps-workspaces"]},
                                monitoring={"prometheus": {"enabled": True}}))


SAML = {"metadataUrl": "https://idp.example.com/saml/metadata.xml", "adminRoleValues": ["ml-platform"],
        "editorRoleValues": ["ml-serving"]}


def test_a_saml_workspace_needs_the_identity_provider_or_nobody_could_sign_in():
    [(key, why)] = problems(minimal_config(monitoring={**PROMETHEUS_AND, "grafana": {"enabled": True, "authentication": "SAML"}}))
    assert key == "gpu-cloud:monitoring.grafana" and "nobody can sign in" in why

    grafana = settings_for(minimal_config(monitoring={
        **PROMETHEUS_AND, "grafana": {"enabled": True, "authentication": "SAML", "saml": SAML}})).config.monitoring.grafana
    assert grafana.saml.role_assertion == "role"


@pytest.mark.parametrize(("saml", "key"), [
    ({**SAML, "metadataUrl": "http://idp.example.com/metadata"}, "metadataUrl"),
    ({**SAML, "adminRoleValues": []}, "adminRoleValues"),
    ({**SAML, "editorRoleValues": [""]}, "editorRoleValues[0]"),
])
def test_saml_settings_aws_refuses_are_refused_naming_the_key(saml, key):
    [(named, _why)] = problems(minimal_config(monitoring={
        **PROMETHEUS_AND, "grafana": {"enabled": True, "authentication": "SAML", "saml": saml}}))
    assert named == f"gpu-cloud:monitoring.grafana.saml.{key}"


def test_saml_settings_beside_identity_center_are_refused():
    [(key, why)] = problems(minimal_config(monitoring={**PROMETHEUS_AND, "grafana": {"enabled": True, "saml": SAML}}))
    assert key == "gpu-cloud:monitoring.grafana" and "authentication is AWS_SSO" in why

