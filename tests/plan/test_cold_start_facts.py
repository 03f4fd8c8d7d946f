"""An image's size read from the account's ECR by `account snapshot` (DescribeImages), which the
cold-start budget pulls where the stack file gives no imageSizeGiB."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from gpucloud.plan import plan_stack
from gpucloud.plan.cold_start import cold_start_line
from gpucloud.plan.cold_start_snapshot import ecr_image_sizes
from gpucloud.testing.facts import AccountFacts
from support import settings_for
from test_cold_start_plan import _with_group

ACCOUNT = "123456789012"
IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/model-server:2026.11"
GIB = 2**30


def _without_size() -> dict:
    values = _with_group()
    del values["groups"][0]["services"]["containers"][0]["imageSizeGiB"]
    return values


def test_the_snapshot_records_the_size_ecr_stores_for_each_container_image(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    # moto answers imageSizeInBytes from the manifest's config size; ECR sums the compressed layers.
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"size": 20 * GIB, "digest": "sha256:" + "a" * 64},
                "layers": [{"size": 20 * GIB, "digest": "sha256:" + "b" * 64}]}
    with mock_aws():
        ecr = boto3.client("ecr", region_name="us-east-1")
        ecr.create_repository(repositoryName="model-server")
        ecr.put_image(repositoryName="model-server", imageManifest=json.dumps(manifest), imageTag="2026.11")
        found = ecr_image_sizes(boto3.Session(region_name="us-east-1"), settings_for(_without_size()), ACCOUNT)
        ecr.batch_delete_image(repositoryName="model-server", imageIds=[{"imageTag": "2026.11"}])
        gone = ecr_image_sizes(boto3.Session(region_name="us-east-1"), settings_for(_without_size()), ACCOUNT)
    assert found == {IMAGE: 20 * GIB}
    assert gone == {}, "a missing image is left out: its pull is then not counted"


def test_a_size_from_the_facts_is_pulled_and_the_plan_says_so():
    facts = AccountFacts.model_validate({"serviceLinkedRoles": ["autoscaling.amazonaws.com"],
                                         "ecrRepositories": [IMAGE.rsplit(":", 1)[0]],
                                         "ecrImageSizes": {IMAGE: 20 * GIB}})
    plan = plan_stack(settings_for(_without_size(), stack="cold-serving"), facts=facts)
    line = cold_start_line(plan.cold_start[0])
    assert "pull 4m37s" in line and "server: image size from the ECR facts" in line
    assert [finding.rule for finding in plan.findings if finding.severity == "failure"] == ["cold-start-budget"]
