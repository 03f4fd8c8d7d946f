"""A group's inference endpoint: config rules, what the engine builds (ELBv2 state read back with
boto3), the load balancer policies, and the estimate's load balancer lines."""

from __future__ import annotations

import json

import pytest

from gpucloud.config import ConfigError
from gpucloud.naming import elb_name
from gpucloud.policy.model import PlannedResource
from gpucloud.policy.rules.load_balancers import (
    LISTENER,
    LOAD_BALANCER,
    validate_internet_facing_load_balancer_uses_tls,
    validate_load_balancer_internal,
)
from gpucloud.pricing.estimate import estimate_stack
from gpucloud.testing import moto_account
from support import deploy, minimal_config, settings_for

CONTAINER = {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000, "healthCheck": {"path": "/health"}}
ENDPOINT = {"port": 8000, "allowedCidrs": ["10.20.0.0/16"], "allowedSecurityGroupIds": ["sg-0123456789abcdef0"],
            "slowStartSeconds": 300, "deregistrationDelaySeconds": 600, "requestsPerTarget": 40}


def serving_config(endpoint=None, **group_changes):
    group = {"name": "servers", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 4,
             "services": {"containers": [CONTAINER]}, "endpoint": {**ENDPOINT, **(endpoint or {})}, **group_changes}
    return minimal_config(groups=[group])


def problems_of(values) -> str:
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    return str(error.value)


@pytest.mark.parametrize(("endpoint", "key", "words"), [
    ({"slowStartSeconds": 10}, "groups[0].endpoint.slowStartSeconds", "neither 0"),
    ({"deregistrationDelaySeconds": 4000}, "groups[0].endpoint.deregistrationDelaySeconds", "3600"),
    ({"protocol": "HTTPS"}, "groups[0].endpoint", "certificateArn"),
    ({"healthCheckTimeoutSeconds": 20, "healthCheckIntervalSeconds": 10}, "groups[0].endpoint", "shorter"),
    ({"allowedCidrs": [], "allowedSecurityGroupIds": []}, "groups[0].endpoint", "admits nobody"),
    ({"port": 9000}, "groups[0].endpoint.port", "served by no container"),
    ({"internetFacing": True}, "groups[0].endpoint", "needs protocol: HTTPS"),
])
def test_endpoint_settings_aws_refuses_are_config_errors_naming_the_key(endpoint, key, words):
    message = problems_of(serving_config(endpoint))
    assert f"stacks/Pulumi.demo.yaml): gpu-cloud:{key}" in message.replace("(stacks", "stacks") or key in message
    assert words in message


def test_an_endpoint_needs_two_zones():
    message = problems_of({**serving_config(), "network": {"zones": 1}})
    assert "gpu-cloud:network.zones" in message and "two zones" in message


def test_names_fit_the_32_characters_elastic_load_balancing_takes():
    name = elb_name("a" * 40, "b" * 24, "lb")
    assert len(name) == 32 and not name.startswith("internal-") and not name.endswith("-")


@pytest.fixture(scope="module")
def deployed():

    with moto_account("us-east-1") as account:
        # A security group a caller names must exist (AWS refuses the rule otherwise): here, CIDRs only.
        yield deploy(settings_for(serving_config({"allowedSecurityGroupIds": []})), account), account


def test_the_engine_builds_an_internal_alb_attached_to_the_group_and_scaling_on_requests(deployed):
    _, account = deployed
    elbv2, autoscaling, ec2 = (account.client(name) for name in ("elbv2", "autoscaling", "ec2"))
    [balancer] = elbv2.describe_load_balancers()["LoadBalancers"]
    assert balancer["Scheme"] == "internal" and balancer["Type"] == "application"
    assert len({zone["ZoneName"] for zone in balancer["AvailabilityZones"]}) == 2
    attributes = {a["Key"]: a["Value"] for a in elbv2.describe_load_balancer_attributes(
        LoadBalancerArn=balancer["LoadBalancerArn"])["Attributes"]}
    assert attributes["access_logs.s3.enabled"] == "true" and attributes["access_logs.s3.prefix"] == "endpoint"
    [group] = elbv2.describe_target_groups()["TargetGroups"]
    assert (group["Port"], group["HealthCheckPath"], group["HealthCheckIntervalSeconds"]) == (8000, "/health", 15)
    target_attributes = {a["Key"]: a["Value"] for a in elbv2.describe_target_group_attributes(
        TargetGroupArn=group["TargetGroupArn"])["Attributes"]}
    assert target_attributes["slow_start.duration_seconds"] == "300"
    assert target_attributes["deregistration_delay.timeout_seconds"] == "600"
    [listener] = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])["Listeners"]
    assert (listener["Port"], listener["Protocol"]) == (80, "HTTP")
    assert listener["DefaultActions"][0]["TargetGroupArn"] == group["TargetGroupArn"]
    asg = "gpu-cloud-demo-servers"
    attached = autoscaling.describe_load_balancer_target_groups(AutoScalingGroupName=asg)["LoadBalancerTargetGroups"]
    assert [found["LoadBalancerTargetGroupARN"] for found in attached] == [group["TargetGroupArn"]]
    [policy] = [p for p in autoscaling.describe_policies(AutoScalingGroupName=asg)["ScalingPolicies"]
                if p["PolicyType"] == "TargetTrackingScaling"]
    predefined = policy["TargetTrackingConfiguration"]["PredefinedMetricSpecification"]
    assert predefined["PredefinedMetricType"] == "ALBRequestCountPerTarget"
    assert predefined["ResourceLabel"].endswith(group["TargetGroupArn"].split(":")[-1])
    [lb_group_id] = balancer["SecurityGroups"]
    [lb_sg] = ec2.describe_security_groups(GroupIds=[lb_group_id])["SecurityGroups"]
    sources = {(r["FromPort"], r.get("CidrIpv4") or r.get("ReferencedGroupInfo", {}).get("GroupId"))
               for r in ec2.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [lb_group_id]}])[
                   "SecurityGroupRules"] if not r["IsEgress"]}
    assert sources == {(80, "10.20.0.0/16")}
    node_rules = [r for r in ec2.describe_security_group_rules()["SecurityGroupRules"]
                  if not r["IsEgress"] and r.get("ReferencedGroupInfo", {}).get("GroupId") == lb_sg["GroupId"]]
    assert [(r["FromPort"], r["ToPort"]) for r in node_rules] == [(8000, 8000)]


def test_the_access_log_bucket_is_sse_s3_and_writable_by_the_regions_elb_account(deployed):
    _, account = deployed
    s3 = account.client("s3")
    [bucket] = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("gpu-cloud-lb-")]
    [rule] = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # The engine keeps bucket policies itself (Account.bucket_policies), having checked them.
    assert "arn:aws:iam::127311923021:root" in json.dumps(account.bucket_policies[bucket])


def test_an_undeclared_internet_facing_load_balancer_is_refused():
    found = []
    validate_load_balancer_internal(LOAD_BALANCER, {"internal": False, "tags": {}}, found.append)
    validate_load_balancer_internal(LOAD_BALANCER, {"internal": True, "tags": {}}, found.append)
    validate_load_balancer_internal(LOAD_BALANCER, {"tags": {"gpu-cloud:internet-facing": "declared"}}, found.append)
    assert len(found) == 1 and "internet-facing" in found[0]


def test_plain_http_on_an_internet_facing_load_balancer_is_refused():
    balancer = PlannedResource(urn="urn:lb", type=LOAD_BALANCER, name="lb",
                               props={"internal": False, "arn": "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/app/x/1"})
    http = PlannedResource(urn="urn:http", type=LISTENER, name="http",
                           props={"protocol": "HTTP", "loadBalancerArn": balancer.props["arn"]})
    https = PlannedResource(urn="urn:https", type=LISTENER, name="https",
                            props={"protocol": "HTTPS", "loadBalancerArn": balancer.props["arn"]})
    found = []
    validate_internet_facing_load_balancer_uses_tls([balancer, http, https], lambda message, urn: found.append(urn))
    assert found == ["urn:http"]


def test_the_estimate_prices_the_load_balancer_hours_and_assumed_lcus():
    estimate = estimate_stack(settings_for(serving_config()).config, "us-east-1")
    lines = {line.resource: line for line in estimate.lines if "endpoint" in line.resource}
    hours = lines["servers/endpoint load balancer"]
    assert hours.monthly.desired == pytest.approx(730 * 0.0225)
    lcus = lines["servers/endpoint load balancer capacity units"]
    assert lcus.quantity.max == pytest.approx((1 + 0.5 * 4) * 730)
