"""Offline plans of stacks that use what already exists: account facts seed the engine's account
under their real ids, so the same checks run as in a real preview."""

from __future__ import annotations

import datetime

import pytest
import yaml

from gpucloud.cli import main
from gpucloud.config import ConfigError, load_stack_file
from gpucloud.plan import plan_stack
from gpucloud.testing.facts import FactsError, load_facts
from support import ROOT, plan_once

EXAMPLE = ROOT / "stacks" / "own-vpc-example"
STACK_FILE = EXAMPLE / "Pulumi.team-vpc.yaml"
FACTS = EXAMPLE / "facts" / "team-vpc.yaml"


def with_facts(tmp_path, change) -> tuple:
    facts = yaml.safe_load(FACTS.read_text())
    change(facts)
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(facts))
    return load_facts(path)


def test_the_own_vpc_example_plans_clean_with_its_facts_found_beside_it(capsys):
    assert main(["plan", "--config", str(STACK_FILE), "--json"]) == 0
    out = capsys.readouterr().out
    assert "subnet-0a1b2c3d4e5f60001" in out and "ami-0a1b2c3d4e5f60001" in out
    assert "planned against account facts of 123456789012 taken 2026-11-20" in out


def test_the_example_groups_run_in_the_listed_subnets_under_their_real_ids():
    plan = plan_once(STACK_FILE, FACTS)
    [group] = [resource for resource in plan.resources if resource.type == "aws:autoscaling/group:Group"]
    assert sorted(group.inputs["vpcZoneIdentifiers"]) == ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
    [security_group] = [resource for resource in plan.resources if resource.type == "aws:ec2/securityGroup:SecurityGroup"]
    assert security_group.inputs["vpcId"] == "vpc-0a1b2c3d4e5f60718"
    assert not [resource for resource in plan.resources if resource.type == "aws:ec2/vpc:Vpc"]
    assert not [finding.message for finding in plan.findings if "sets maxSize 0" in finding.message]


def test_a_schedule_that_closes_its_group_with_none_to_open_it_warns(tmp_path):
    document = yaml.safe_load(STACK_FILE.read_text())
    schedules = document["config"]["gpu-cloud:groups"][0]["scaling"]["schedules"]
    assert [schedule["name"] for schedule in schedules] == ["night", "morning"]
    del schedules[1]
    (tmp_path / "Pulumi.team-vpc.yaml").write_text(yaml.safe_dump(document))
    plan = plan_stack(load_stack_file(tmp_path / "Pulumi.team-vpc.yaml"), facts=load_facts(FACTS))
    [warning] = [finding for finding in plan.findings if "sets maxSize 0" in finding.message]
    assert warning.severity == "warning" and not plan.failed
    assert warning.message.startswith("gpu-cloud:groups[0].scaling.schedules[0]: night sets maxSize 0 and no schedule "
                                      "of batch sets it above 0 again"), warning.message


def test_the_public_subnet_of_the_example_is_refused_for_nodes():
    settings = load_stack_file(STACK_FILE)
    values = settings.config.model_dump(by_alias=True, exclude_none=True)
    values["network"] = {"subnetIds": ["subnet-0a1b2c3d4e5f60099"]}
    from gpucloud.config import parse_stack_config

    public = parse_stack_config(values, stack=settings.stack, source=settings.source, region=settings.region)
    with pytest.raises(ConfigError) as error:
        plan_stack(public, facts=load_facts(FACTS))
    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:network.subnetIds[0]"
    assert "routes 0.0.0.0/0 only to internet gateway igw-0a1b2c3d4e5f60001" in reason


def test_without_its_facts_the_example_names_the_missing_subnets(tmp_path):
    (tmp_path / "Pulumi.team-vpc.yaml").write_text(STACK_FILE.read_text())
    with pytest.raises(ConfigError) as error:
        plan_stack(load_stack_file(tmp_path / "Pulumi.team-vpc.yaml"))
    assert {"gpu-cloud:network.subnetIds[0]", "gpu-cloud:network.subnetIds[1]"} <= {key for key, _ in error.value.problems}


def test_a_quota_below_min_size_fails_the_plan_with_the_request_command(tmp_path, capsys):
    facts = with_facts(tmp_path, lambda facts: facts["quotas"].update({"L-3819A6DF": 0, "L-DB2E81BA": 0}))
    settings = load_stack_file(STACK_FILE)
    values = settings.config.model_dump(by_alias=True, exclude_none=True)
    values["groups"][0].update(minSize=3, onDemandBaseCapacity=1, spotPercent=50)  # 2 on demand, 1 spot
    from gpucloud.config import parse_stack_config

    plan = plan_stack(parse_stack_config(values, stack="team-vpc", source="x", region="us-east-1"), facts=facts)

    failures = [finding.message for finding in plan.findings if finding.severity == "failure"]
    assert plan.failed
    assert (
        "EC2 quota Running On-Demand G and VT instances (L-DB2E81BA): groups batch need 8 vCPUs at minSize, the account "
        "has 0 in us-east-1; no instance beyond it ever starts. Ask for more: aws service-quotas "
        "request-service-quota-increase --service-code ec2 --quota-code L-DB2E81BA --desired-value 8 --region us-east-1"
    ) in failures
    assert any("All G and VT Spot Instance Requests (L-3819A6DF): groups batch need 4 vCPUs at minSize" in message
               for message in failures)


def test_a_quota_below_max_size_only_warns(tmp_path):
    facts = with_facts(tmp_path, lambda facts: facts["quotas"].update({"L-3819A6DF": 8}))
    plan = plan_stack(load_stack_file(STACK_FILE), facts=facts)
    warnings = [finding.message for finding in plan.findings if finding.rule == "program-warning"]
    assert not plan.failed
    assert any("(L-3819A6DF): groups batch need 16 vCPUs at maxSize, the account has 8" in message for message in warnings)


def test_without_quota_facts_the_plan_says_on_one_line_that_quotas_were_not_checked(tmp_path):
    facts = with_facts(tmp_path, lambda facts: facts.update(quotas={}))
    plan = plan_stack(load_stack_file(STACK_FILE), facts=facts)
    [line] = [finding.message for finding in plan.findings if "quotas were not checked" in finding.message]
    assert "L-3819A6DF" in line


def test_old_facts_are_flagged_with_their_age():
    facts = load_facts(FACTS)
    assert facts.age_warning(datetime.date(2026, 12, 1)) is None
    assert "taken 41 days ago (2026-11-20), more than 30" in facts.age_warning(datetime.date(2026, 12, 31))


def test_a_bad_facts_file_names_the_key(tmp_path):
    path = tmp_path / "facts.yaml"
    path.write_text("vpcs:\n  - id: vpc-1\n    cidr: 10.0.0.0/16\n")
    with pytest.raises(FactsError, match=r"vpcs\.0\.id: String should match pattern"):
        load_facts(path)


MINIMAL_STACK = (
    "config:\n  aws:region: us-east-1\n  gpu-cloud:project: tiny\n  gpu-cloud:owner: a@example.com\n"
    "  gpu-cloud:costCenter: cc\n  gpu-cloud:budget: {monthlyUsd: 100}\n"
    "  gpu-cloud:groups:\n    - {name: gpus, instanceTypes: [g5.xlarge], maxSize: 1}\n"
)


def test_a_minimal_stack_without_facts_plans_and_says_on_one_line_that_the_role_was_not_checked(tmp_path, capsys):
    stack = tmp_path / "Pulumi.tiny.yaml"
    stack.write_text(MINIMAL_STACK)

    assert main(["plan", "--config", str(stack)]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if "AWSServiceRoleForAutoScaling" in line]
    assert "not checked" in line and "gpu-cloud:account.createServiceLinkedRole" in line
    assert "aws:iam/serviceLinkedRole:ServiceLinkedRole" not in out, "unknown is not missing: nothing is created"


def test_facts_that_say_the_role_is_missing_refuse_a_stack_that_may_not_create_it(tmp_path):
    facts = with_facts(tmp_path, lambda facts: facts.update(serviceLinkedRoles=[]))
    settings = load_stack_file(STACK_FILE)
    from gpucloud.config import parse_stack_config

    values = settings.config.model_dump(by_alias=True, exclude_none=True)
    values["account"] = {"createServiceLinkedRole": False}
    with pytest.raises(ConfigError) as error:
        plan_stack(parse_stack_config(values, stack="team-vpc", source="x", region="us-east-1"), facts=facts)
    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:account.createServiceLinkedRole"
    assert "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com" in reason


def test_facts_that_say_the_role_is_missing_have_it_created_by_default(tmp_path):
    facts = with_facts(tmp_path, lambda facts: facts.update(serviceLinkedRoles=[]))
    plan = plan_stack(load_stack_file(STACK_FILE), facts=facts)
    [role] = [resource for resource in plan.resources if resource.type == "aws:iam/serviceLinkedRole:ServiceLinkedRole"]
    assert role.inputs["awsServiceName"] == "autoscaling.amazonaws.com"
    assert not [finding for finding in plan.findings if "AWSServiceRoleForAutoScaling" in finding.message]
