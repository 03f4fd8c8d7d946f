"""The faster cold-start paths as the engine applies them: the nodes' services document asks for
the warm-pool pre-pull, the Lustre preload and each container's weights tier; the file system's
associations import their metadata on creation; the group's timers follow the estimate."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import yaml

from gpucloud.config.cold_start_estimate import grace_period_seconds
from gpucloud.userdata.layout import SERVICES_CONFIG_PATH
from support import deployed_alone, minimal_config, settings_for

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/server:1"


def _values() -> dict:
    return minimal_config(
        data={"bucket": "demo-data", "readPrefixes": ["models/", "datasets/"], "writePrefixes": ["runs/"]},
        storage={"lustre": {"preloadPrefixes": ["models/"]}},
        groups=[{"name": "servers", "instanceTypes": ["g5.2xlarge"], "minSize": 1, "maxSize": 2, "spotPercent": 0,
                 "warmPool": {"minSize": 1, "prepullImages": True},
                 "services": {"containers": [
                     {"name": "llm", "image": IMAGE, "imageSizeGiB": 20, "port": 8000,
                      "weights": {"source": "s3://demo-data/models/llama/", "sizeGiB": 15}},
                     {"name": "embed", "image": IMAGE, "imageSizeGiB": 20, "port": 8001,
                      "weights": {"source": "s3://demo-data/datasets/embed/", "sizeGiB": 2}}]}}])


@pytest.fixture(scope="module")
def deployed():
    settings = settings_for(_values(), stack="cold")
    with deployed_alone(settings) as deployment:
        yield settings, deployment


def _services_document(deployment) -> dict:
    ec2 = deployment.client("ec2")
    [template] = ec2.describe_launch_templates()["LaunchTemplates"]
    [version] = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"],
                                                      Versions=["$Latest"])["LaunchTemplateVersions"]
    cloud_config = yaml.safe_load(gzip.decompress(base64.b64decode(version["LaunchTemplateData"]["UserData"])))
    [entry] = [entry for entry in cloud_config["write_files"] if entry["path"] == SERVICES_CONFIG_PATH]
    return json.loads(entry["content"])


def test_the_nodes_are_told_to_pull_in_the_pool_preload_once_and_read_weights_through_their_tier(deployed):
    _, deployment = deployed
    document = _services_document(deployment)
    assert document["prepull_images"] is True
    assert document["preload"] == ["/fsx/models/"]
    weights = {container["name"]: container["weights"] for container in document["containers"]}
    assert weights["llm"] == {"bucket": "demo-data", "prefix": "models/llama/", "path": "/fsx/models/llama"}
    assert weights["embed"] == {"bucket": "demo-data", "prefix": "datasets/embed/"}, "not preloaded: copied to /scratch"


def test_the_linked_prefixes_import_their_metadata_when_they_are_linked(deployed):
    _, deployment = deployed
    associations = [r for r in deployment.resources if r.type == "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"]
    models = next(r for r in associations if r.inputs["fileSystemPath"] == "/models/")
    assert models.inputs["batchImportMetaDataOnCreate"] is True


def test_the_group_keeps_a_warm_pool_and_a_grace_period_that_follows_the_estimate(deployed):
    settings, deployment = deployed
    autoscaling = deployment.client("autoscaling")
    [group] = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    assert group["HealthCheckGracePeriod"] == grace_period_seconds(settings.config, settings.config.groups[0], True)
    assert autoscaling.describe_warm_pool(AutoScalingGroupName=group["AutoScalingGroupName"])["WarmPoolConfiguration"]["MinSize"] == 1


def test_the_estimate_holds_the_launch_hook_s_own_timers():
    from gpucloud.components.gpu_group import LAUNCH_HOOK_TIMEOUT_SECONDS
    from gpucloud.config import cold_start_estimate
    from gpucloud.userdata.layout import LAUNCH_HEARTBEAT_LIMIT_SECONDS

    assert cold_start_estimate.LAUNCH_HOOK_TIMEOUT_SECONDS == LAUNCH_HOOK_TIMEOUT_SECONDS
    assert cold_start_estimate.LAUNCH_HEARTBEAT_LIMIT_SECONDS == LAUNCH_HEARTBEAT_LIMIT_SECONDS
