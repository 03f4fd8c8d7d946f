"""An inference endpoint the stack declares internet-facing: where the config allows it, what the
engine builds (public subnets, scheme, the declared tag), the policies over it, and the engine
refusing an internet-facing load balancer in subnets that cannot be reached."""

from __future__ import annotations

from dataclasses import replace

import pytest
from botocore.exceptions import ClientError

from gpucloud.plan.findings import check_policies
from gpucloud.pricing.estimate import estimate_stack
from gpucloud.testing.handlers.elbv2 import create_load_balancer
from gpucloud.testing.registry import ResourceRequest
from gpucloud.testing import moto_account
from gpucloud.testing.external_seed import seed_certificate
from support import deploy, private_subnets, settings_for
from test_inference_endpoint import problems_of, serving_config

CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0123abcd-0123-abcd-0123-0123456789ab"
FACING = {"internetFacing": True, "protocol": "HTTPS", "certificateArn": CERTIFICATE,
          "allowedCidrs": ["198.51.100.0/24"], "allowedSecurityGroupIds": []}
LOAD_BALANCER_POLICIES = ("load-balancer-internal", "load-balancer-tls-when-internet-facing", "no-world-open-ingress")


@pytest.mark.parametrize(("endpoint", "network", "key", "words"), [
    ({"protocol": "HTTP", "certificateArn": None}, {}, "groups[0].endpoint", "needs protocol: HTTPS"),
    ({}, {"subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]},
     "groups[0].endpoint.internetFacing", "subnetIds of your own VPC"),
    ({}, {"egress": "endpointsOnly"}, "network.egress", "no internet gateway"),
    ({}, {"cidr": "10.64.0.0/22"}, "network.cidr", "/28 public subnets"),
    ({"allowedCidrs": ["0.0.0.0/0"]}, {}, "groups[0].endpoint.allowedCidrs", "whole internet"),
])
def test_internet_facing_is_refused_where_it_cannot_be_public_or_private(endpoint, network, key, words):
    values = serving_config({**FACING, **endpoint})
    if network:
        values["network"] = network
    message = problems_of(values)
    assert f"gpu-cloud:{key}" in message and words in message


@pytest.fixture(scope="module")
def facing():

    with moto_account("us-east-1") as account:
        # ELB looks the certificate up in ACM (CertificateNotFound otherwise), and the program
        # takes only an issued one (a requested one waits for validation).
        seed_certificate(account, CERTIFICATE, "infer.example.com")
        yield deploy(settings_for(serving_config(FACING)), account), account, CERTIFICATE


def test_the_engine_puts_a_declared_internet_facing_alb_in_the_public_subnets_behind_https(facing):
    deployment, account, certificate = facing
    elbv2, ec2 = account.client("elbv2"), account.client("ec2")
    [balancer] = elbv2.describe_load_balancers()["LoadBalancers"]
    assert balancer["Scheme"] == "internet-facing"
    placed = [zone["SubnetId"] for zone in balancer["AvailabilityZones"]]
    roles = {subnet["AvailabilityZone"]: {tag["Key"]: tag["Value"] for tag in subnet["Tags"]}["gpu-cloud:subnet"]
             for subnet in ec2.describe_subnets(SubnetIds=placed)["Subnets"]}
    # One zone's public subnet holds the (single) NAT gateway; the other exists for the load balancer.
    assert sorted(roles.values()) == ["nat", "public"] and len(roles) == 2
    tags = {tag["Key"]: tag["Value"] for tag in elbv2.describe_tags(
        ResourceArns=[balancer["LoadBalancerArn"]])["TagDescriptions"][0]["Tags"]}
    assert tags["gpu-cloud:internet-facing"] == "declared"
    [listener] = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])["Listeners"]
    assert (listener["Port"], listener["Protocol"]) == (443, "HTTPS")
    assert listener["Certificates"] == [{"CertificateArn": certificate}]
    flagged = [v for v in check_policies(deployment.resources) if v.policy_name in LOAD_BALANCER_POLICIES]
    assert flagged == []


def test_an_http_listener_on_the_declared_load_balancer_still_fails_the_tls_policy(facing):
    deployment, _, _ = facing
    resources = [replace(r, inputs={**r.inputs, "protocol": "HTTP", "port": 80, "certificateArn": None})
                 if r.type == "aws:lb/listener:Listener" else r for r in deployment.resources]
    flagged = {v.policy_name for v in check_policies(resources)}
    assert "load-balancer-tls-when-internet-facing" in flagged
    assert "load-balancer-internal" not in flagged


@pytest.mark.parametrize(("egress", "code", "words"), [
    ("none", "InvalidSubnet", "has no internet gateway"),
    ("nat", "InvalidSubnet", "route no 0.0.0.0/0 to an internet gateway"),
])
def test_the_engine_refuses_an_internet_facing_load_balancer_in_private_subnets(egress, code, words):

    with moto_account("us-east-1") as account:
        subnets = private_subnets(account.client("ec2"), "10.30.0.0/16", "ab", egress=egress)
        request = ResourceRequest("aws:lb/loadBalancer:LoadBalancer", "lb",
                                  {"name": "facing", "loadBalancerType": "application", "subnets": subnets})
        with pytest.raises(ClientError) as error:
            create_load_balancer(account, request)
        assert error.value.response["Error"]["Code"] == code and words in str(error.value)
        create_load_balancer(account, ResourceRequest(request.type, request.name, {**request.inputs, "internal": True}))
        public = private_subnets(account.client("ec2"), "10.31.0.0/16", "ab", egress="igw")
        made = create_load_balancer(account, ResourceRequest(request.type, "public", {**request.inputs, "name": "open",
                                                                                      "subnets": public}))
        assert made.outputs["internal"] is False


def test_the_estimate_prices_the_public_addresses_of_an_internet_facing_endpoint():
    facing = estimate_stack(settings_for(serving_config(FACING)).config, "us-east-1")
    internal = estimate_stack(settings_for(serving_config()).config, "us-east-1")
    [line] = [line for line in facing.lines if "internet-facing endpoint public IPv4" in line.resource]
    assert line.quantity.desired == pytest.approx(2 * 730)
    assert not [line for line in internal.lines if "internet-facing" in line.resource]
