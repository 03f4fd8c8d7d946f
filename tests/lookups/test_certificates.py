"""The ACM certificate an HTTPS endpoint names (`certificateArn`): described by the program
(DescribeCertificate by ARN), recorded by `account snapshot`, not checked offline without facts."""

from __future__ import annotations

import datetime

import boto3
import pytest
from moto import mock_aws

from gpucloud.config import ConfigError
from gpucloud.lookups.pulumi_aws import describe_certificate
from gpucloud.plan import plan_stack
from gpucloud.plan.named_snapshot import read_named
from gpucloud.testing.facts import AccountFacts
from support import minimal_config, settings_for

ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0123abcd-0123-abcd-0123-0123456789ab"
KEY = "gpu-cloud:groups[0].endpoint.certificateArn"
NOW = datetime.datetime.now(datetime.timezone.utc)


def https_stack(arn: str = ARN):
    endpoint = {"port": 8000, "protocol": "HTTPS", "certificateArn": arn, "allowedCidrs": ["10.20.0.0/16"]}
    group = {"name": "servers", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 4, "endpoint": endpoint,
             "services": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000,
                                          "healthCheck": {"path": "/health"}}]}}
    return settings_for(minimal_config(groups=[group]))


def facts(*certificates: dict) -> AccountFacts:
    return AccountFacts.model_validate({"serviceLinkedRoles": ["autoscaling.amazonaws.com"],
                                        "certificates": list(certificates)})


def issued(**changes) -> dict:
    return {"arn": ARN, "status": "ISSUED", "domain": "infer.example.com", "region": "us-east-1",
            "notAfter": (NOW + datetime.timedelta(days=200)).isoformat(), **changes}


def problems(settings, account_facts=None) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as error:
        plan_stack(settings, facts=account_facts)
    return error.value.problems


def test_a_missing_certificate_stops_the_plan_naming_its_key():
    [(key, reason)] = problems(https_stack(), facts())
    assert key == KEY
    assert reason.startswith(f"certificate {ARN} does not exist (ACM DescribeCertificate: ResourceNotFoundException)")


@pytest.mark.parametrize(("changes", "words"), [
    ({"status": "PENDING_VALIDATION"}, "is PENDING_VALIDATION, not ISSUED"),
    ({"notAfter": (NOW - datetime.timedelta(days=1)).isoformat()}, "expired on"),
])
def test_a_certificate_a_listener_cannot_serve_stops_the_plan(changes, words):
    [(key, reason)] = problems(https_stack(), facts(issued(**changes)))
    assert key == KEY and words in reason and "infer.example.com" in reason


def test_a_certificate_of_another_region_stops_the_plan_without_a_lookup():
    other = ARN.replace("us-east-1", "eu-west-1")
    [(key, reason)] = problems(https_stack(other))
    assert key == KEY and "is in eu-west-1, the stack's load balancer in us-east-1" in reason


def test_an_issued_certificate_the_facts_list_plans_clean_and_one_expiring_soon_warns():
    plan = plan_stack(https_stack(), facts=facts(issued()))
    assert not [f for f in plan.findings if "certificate" in f.message and f.rule == "program-warning"]
    [listener] = [r for r in plan.resources if r.type == "aws:lb/listener:Listener"]
    assert listener.inputs["certificateArn"] == ARN

    soon = plan_stack(https_stack(), facts=facts(issued(notAfter=(NOW + datetime.timedelta(days=10)).isoformat())))
    [line] = [f for f in soon.findings if "expires on" in f.message]
    assert line.severity == "warning" and ARN in line.message


def test_without_facts_the_certificate_is_one_not_checked_line_and_the_listener_is_planned():
    plan = plan_stack(https_stack())
    [line] = [f for f in plan.findings if "certificates not checked" in f.message]
    assert line.severity == "warning" and ARN in line.message
    [listener] = [r for r in plan.resources if r.type == "aws:lb/listener:Listener"]
    assert listener.inputs["protocol"] == "HTTPS"


@pytest.fixture
def acm(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield boto3.client("acm", region_name="us-east-1")


def test_the_program_describes_the_certificate_by_its_arn(acm):
    arn = acm.request_certificate(DomainName="infer.example.com")["CertificateArn"]

    found = describe_certificate(arn)
    missing = describe_certificate(ARN.replace("0123abcd", "9999abcd"))

    assert (found.exists, found.status, found.domain, found.region) == (True, "PENDING_VALIDATION",
                                                                        "infer.example.com", "us-east-1")
    assert found.not_after is not None
    assert missing.exists is False


def test_the_snapshot_records_status_expiry_domain_and_region_of_those_that_exist(acm):
    arn = acm.request_certificate(DomainName="infer.example.com")["CertificateArn"]
    settings = https_stack(arn)
    gone = https_stack(ARN).config.model_dump(by_alias=True, exclude_none=True)

    [recorded] = read_named(settings, boto3.Session(region_name="us-east-1"))["certificates"]
    assert read_named(settings_for(gone), boto3.Session(region_name="us-east-1"))["certificates"] == []

    assert {key: recorded[key] for key in ("arn", "status", "domain", "region")} == {
        "arn": arn, "status": "PENDING_VALIDATION", "domain": "infer.example.com", "region": "us-east-1"}
    assert AccountFacts.model_validate({"certificates": [recorded]}).certificates[0].not_after is not None
