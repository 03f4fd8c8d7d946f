"""`gpucloud run --image` with a private ECR image: the group names the repositories its jobs may run
(`groups[].jobs.ecrRepositories`), the node role may pull exactly those, `run` refuses any other
ECR image before touching the group, and without the internet the ECR endpoints are required."""

from __future__ import annotations

import pytest

from gpucloud.config.node_endpoints import missing_interface_endpoints
from gpucloud.ops.jobs import JobError, new_job
from gpucloud.testing import moto_account
from support import config_problems, deploy, minimal_config, settings_for

REPOSITORY = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/train"
OFFLINE = {"egress": "endpointsOnly", "interfaceEndpoints": [
    "ssm", "ssmmessages", "ec2messages", "autoscaling", "logs", "monitoring", "ec2"]}


def with_jobs(jobs, network=None):
    values = minimal_config(groups=[{"name": "trainers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2,
                                     "jobs": jobs}])
    if network is not None:
        values["network"] = network
    return values


def test_run_refuses_an_ecr_image_from_a_repository_the_group_does_not_list_before_any_call():
    settings = settings_for(with_jobs({"ecrRepositories": [REPOSITORY]}))

    assert new_job(settings, "trainers", ["train"], image=f"{REPOSITORY}:1").image == f"{REPOSITORY}:1"
    assert new_job(settings, "trainers", ["train"], image=f"{REPOSITORY}@sha256:{'a' * 64}").image
    assert new_job(settings, "trainers", ["train"], image="nvcr.io/nvidia/pytorch:24.10-py3").image
    other = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/other:1"
    with pytest.raises(JobError, match=r"^--image .*/team/other:1 is in ECR repository 123456789012\.dkr\.ecr\.us-east-1"
                                       r"\.amazonaws\.com/team/other, which groups\[0\]\.jobs\.ecrRepositories of .* does "
                                       r"not list, so the nodes may not pull it: add it there and run pulumi up$"):
        new_job(settings, "trainers", ["train"], image=other)
    with pytest.raises(JobError, match="does not list"):
        new_job(settings_for(with_jobs({})), "trainers", ["train"], image=f"{REPOSITORY}:1")


def test_without_the_internet_a_job_image_must_come_from_ecr_in_the_stack_s_region_through_both_endpoints():
    [(key, why)] = config_problems(with_jobs({"ecrRepositories": [REPOSITORY]}, network=OFFLINE))
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert "ecr.api (groups[0].jobs.ecrRepositories: GetAuthorizationToken)" in why
    assert "ecr.dkr (groups[0].jobs.ecrRepositories: registry API /v2/ (docker pull))" in why

    network = {**OFFLINE, "interfaceEndpoints": [*OFFLINE["interfaceEndpoints"], "ecr.api", "ecr.dkr"]}
    settings = settings_for(with_jobs({"ecrRepositories": [REPOSITORY]}, network=network))
    assert missing_interface_endpoints(settings.config) == {}
    with pytest.raises(JobError, match="is not in ECR, and the stack's network.egress endpointsOnly reaches no other"):
        new_job(settings, "trainers", ["train"], image="nvcr.io/nvidia/pytorch:24.10-py3")

    elsewhere = REPOSITORY.replace("us-east-1", "eu-west-1")
    [(key, why)] = config_problems(with_jobs({"ecrRepositories": [elsewhere]}, network=network))
    assert key == "gpu-cloud:groups[0].jobs.ecrRepositories[0]" and "replicate it to us-east-1" in why


@pytest.mark.parametrize(("repositories", "reason"), [
    ([f"{REPOSITORY}:1"], "without a tag"),
    (["docker.io/library/python"], "private ECR repository"),
    ([REPOSITORY, REPOSITORY], "twice"),
])
def test_a_bad_repository_is_one_line_naming_the_key(repositories, reason):
    [(key, why)] = config_problems(with_jobs({"ecrRepositories": repositories}))
    assert key.startswith("gpu-cloud:groups[0].jobs.ecrRepositories") and reason in why


def test_the_node_role_may_pull_exactly_the_listed_repositories():
    settings = settings_for(with_jobs({"ecrRepositories": [REPOSITORY, REPOSITORY.replace("train", "eval")]}))
    with moto_account(settings.region) as account:
        deploy(settings, account)
        document = account.client("iam").get_role_policy(
            RoleName="gpu-cloud-demo-node", PolicyName="gpu-cloud-node-services")["PolicyDocument"]

    statements = {statement["Sid"]: statement for statement in document["Statement"]}
    pulls = [statement for statement in document["Statement"] if "ecr:BatchGetImage" in statement["Action"]]
    assert [statement["Resource"] for statement in pulls] == [[
        "arn:aws:ecr:us-east-1:123456789012:repository/team/eval", "arn:aws:ecr:us-east-1:123456789012:repository/team/train"]]
    assert statements["EcrLoginHasNoResourceLevelPermissions"]["Action"] == "ecr:GetAuthorizationToken"


def test_a_group_that_runs_private_ecr_jobs_plans_with_every_pull_allowed():
    """The layer download goes to S3 on the pre-signed URL ECR hands out: the gateway endpoint's
    policy decides it, not the node role (which has no S3 grant on ECR's layer bucket)."""
    from gpucloud.plan.access import stack_features
    from gpucloud.plan.preview import plan_stack

    settings = settings_for(with_jobs({"ecrRepositories": [REPOSITORY]}))
    plan = plan_stack(settings)

    assert "dockerPullsJobImageFromEcr" in stack_features(settings)
    assert plan.access["denied"] == []
    assert not [finding for finding in plan.findings if finding.rule == "access-denied"]
