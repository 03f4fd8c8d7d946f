"""The security groups an endpoint admits (`allowedSecurityGroupIds`): looked up by the program
(aws.ec2.getSecurityGroup), recorded by `account snapshot`, not checked offline without facts."""

from __future__ import annotations

import boto3
import pulumi_aws as aws
import pytest
import yaml
from moto import mock_aws

from gpucloud.config import ConfigError, load_stack_file, parse_stack_config
from gpucloud.plan import plan_stack
from gpucloud.plan.snapshot import _security_groups
from gpucloud.testing import run_program
from gpucloud.testing.facts import AccountFacts, seed_account
from support import ROOT, minimal_config

KNOWN, MISSING = "sg-0a1b2c3d4e5f60001", "sg-0a1b2c3d4e5f60099"


def settings(*group_ids: str):
    endpoint = {"port": 8000, "allowedCidrs": ["10.20.0.0/16"], "allowedSecurityGroupIds": list(group_ids)}
    group = {"name": "servers", "instanceTypes": ["g5.xlarge"], "minSize": 1, "maxSize": 4, "endpoint": endpoint,
             "services": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000,
                                          "healthCheck": {"path": "/health"}}]}}
    return parse_stack_config(minimal_config(groups=[group]), stack="demo", source="stacks/Pulumi.demo.yaml",
                              region="us-east-1")


def facts(*group_ids: str) -> AccountFacts:
    return AccountFacts.model_validate({"serviceLinkedRoles": ["autoscaling.amazonaws.com"],
                                        "securityGroups": [{"id": g, "vpcId": "vpc-0a1b2c3d4e5f60718"} for g in group_ids]})


def test_the_data_source_fails_with_ec2s_code_when_facts_list_the_groups(account):
    seed_account(account, facts())
    with pytest.raises(Exception, match=r"InvalidGroup\.NotFound"):
        run_program(lambda: aws.ec2.get_security_group(id=MISSING), account)


def test_a_missing_group_stops_the_plan_naming_its_key():
    with pytest.raises(ConfigError) as error:
        plan_stack(settings(KNOWN, MISSING), facts=facts(KNOWN))
    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:groups[0].endpoint.allowedSecurityGroupIds[1]"
    assert reason.startswith(f"security group {MISSING} does not exist in us-east-1")


def test_without_facts_the_groups_are_one_not_checked_line():
    plan = plan_stack(settings(KNOWN))
    [line] = [f for f in plan.findings if "security groups not checked" in f.message]
    assert line.severity == "warning" and KNOWN in line.message


def test_a_group_the_facts_list_in_the_stacks_vpc_plans_without_a_line():
    example = ROOT / "stacks" / "own-vpc-example"
    own = load_stack_file(example / "Pulumi.team-vpc.yaml")
    values = own.config.model_dump(by_alias=True, exclude_none=True)
    values["groups"] = settings(KNOWN).config.model_dump(by_alias=True, exclude_none=True)["groups"]
    document = yaml.safe_load((example / "facts" / "team-vpc.yaml").read_text())
    document["securityGroups"] = [{"id": KNOWN, "vpcId": "vpc-0a1b2c3d4e5f60718"}]

    plan = plan_stack(parse_stack_config(values, stack="team-vpc", source="x", region="us-east-1"),
                      facts=AccountFacts.model_validate(document))

    [rule] = [r for r in plan.resources if r.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
              and r.inputs.get("referencedSecurityGroupId") == KNOWN]
    assert not [f for f in plan.findings if "security groups not checked" in f.message]


def test_the_snapshot_lists_the_groups_that_exist(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        group = ec2.create_security_group(GroupName="callers", Description="callers", VpcId=vpc)["GroupId"]
        found = _security_groups(ec2, settings(group, MISSING))
    assert found == [{"id": group, "vpcId": vpc}]
