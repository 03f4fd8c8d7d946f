"""The ECR repositories a stack names (containers' images, jobs.ecrRepositories): looked up by the
program (aws.ecr.getRepository), recorded by `account snapshot`, not checked offline without facts."""

from __future__ import annotations

import boto3
import pulumi_aws as aws
import pytest
from moto import mock_aws

from gpucloud.config import ConfigError, parse_stack_config
from gpucloud.plan import plan_stack
from gpucloud.plan.snapshot import _ecr_repositories
from gpucloud.testing import run_program
from gpucloud.testing.facts import AccountFacts, seed_account
from support import minimal_config

ACCOUNT = "123456789012"
REGISTRY = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"


def settings(*repositories: str):
    values = minimal_config(groups=[{"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2,
                                     "jobs": {"ecrRepositories": [f"{REGISTRY}/{name}" for name in repositories]}}])
    return parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")


def facts(*repositories: str) -> AccountFacts:
    return AccountFacts.model_validate({"serviceLinkedRoles": ["autoscaling.amazonaws.com"],
                                        "ecrRepositories": [f"{REGISTRY}/{name}" for name in repositories]})


def test_the_data_source_fails_with_ecrs_code_when_facts_list_the_repositories(account):
    seed_account(account, facts())
    with pytest.raises(Exception, match="RepositoryNotFoundException"):
        run_program(lambda: aws.ecr.get_repository(name="team/trainer"), account)


def test_a_missing_repository_stops_the_plan_naming_its_key():
    with pytest.raises(ConfigError) as error:
        plan_stack(settings("team/trainer", "team/eval"), facts=facts("team/trainer"))
    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:groups[0].jobs.ecrRepositories[1]"
    assert reason.startswith(f"ECR repository {REGISTRY}/team/eval does not exist")


def test_repositories_the_facts_list_plan_without_a_line():
    plan = plan_stack(settings("team/trainer"), facts=facts("team/trainer"))
    assert not [f for f in plan.findings if "ECR repositor" in f.message]


def test_without_facts_the_repositories_are_one_not_checked_line():
    plan = plan_stack(settings("team/trainer"))
    [line] = [f for f in plan.findings if "ECR repositories not checked" in f.message]
    assert line.severity == "warning" and f"{REGISTRY}/team/trainer" in line.message


def test_the_snapshot_lists_the_repositories_that_exist(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        boto3.client("ecr", region_name="us-east-1").create_repository(repositoryName="team/trainer")
        found = _ecr_repositories(boto3.Session(region_name="us-east-1"), settings("team/trainer", "team/eval"), ACCOUNT)
    assert found == [f"{REGISTRY}/team/trainer"]
