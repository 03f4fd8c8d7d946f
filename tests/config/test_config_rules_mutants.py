"""The cross-field rules (`gpucloud.config.rules`) at their edges: each stack below is one step from
a refused one, so a rule that fires on the wrong side, names the wrong key or skips a group shows
here, on the loader's one-line problems (pure: no engine). Written against the mutants that the
config tests left alive (tests/mutation, 2026-11-29)."""

from __future__ import annotations

import pytest

from gpucloud.config import IAM_ROLE_POLICY_LIMIT, StackConfig
from gpucloud.config.allocation import DEFAULT_ON_DEMAND, DEFAULT_SPOT, REQUIREMENTS_ON_DEMAND
from gpucloud.config.image import default_image
from gpucloud.config.node_role import node_role_policies_size
from gpucloud.config.rules import image as image_rule
from gpucloud.config.rules.allocation import on_demand_strategy, rebalances, spot_strategy
from gpucloud.config.rules.jobs import job_image_problem, unpinned_image_problem
from support import config_problems, minimal_config, settings_for

TYPES = ["g5.xlarge", "g6.xlarge"]
REQUIREMENTS = {"gpuCount": {"min": 1, "max": 1}, "allowedInstanceTypes": ["g5.*"]}
BLOCK = {"reservationId": "cr-0123456789abcdef0"}
REPOSITORY = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/train"
OFFLINE = {"egress": "endpointsOnly", "interfaceEndpoints": [
    "ssm", "ssmmessages", "ec2messages", "autoscaling", "logs", "monitoring", "ec2", "ecr.api", "ecr.dkr"]}
PIN = "pin a version tag ([registry/]repository:tag) or a digest ([registry/]repository@sha256:<digest>)"


def group(name: str = "batch", **settings) -> dict:
    return {"name": name, "instanceTypes": TYPES, "maxSize": 4, **settings}


def allocated(allocation: dict, **settings) -> dict:
    return group(capacity={"allocation": allocation}, **settings)


def keys_of(*groups: dict, **changes) -> list[str]:
    return [key for key, _ in config_problems(minimal_config(groups=list(groups), **changes))]


def accepted(*groups: dict, **changes):
    return settings_for(minimal_config(groups=list(groups), **changes)).config


# capacity.allocation (rules/allocation.py)

@pytest.mark.parametrize(("settings", "word"), [
    ({"instanceTypes": ["g5.xlarge"], "spotPercent": 0, "capacity": {"capacityBlock": BLOCK,
                                                                     "allocation": {"onDemand": "prioritized"}}},
     "a group with capacity.capacityBlock has"),
    ({"instanceTypes": ["g5.xlarge"], "spotPercent": 0, "warmPool": {"minSize": 1},
      "capacity": {"allocation": {"onDemand": "prioritized"}}}, "a group with warmPool has"),
])
def test_an_allocation_in_a_group_of_one_launch_template_is_refused_naming_the_allocation(settings, word):
    [(key, reason)] = config_problems(minimal_config(groups=[group(**settings)]))
    assert key == "gpu-cloud:groups[0].capacity.allocation"
    assert reason.startswith(word)


@pytest.mark.parametrize(("allocation", "key", "words"), [
    ({"spot": "capacity-optimized-prioritized"}, "spot", "capacity-optimized-prioritized is not valid"),
    ({"onDemand": "prioritized"}, "onDemand", "prioritized cannot be used with instanceRequirements"),
])
def test_strategies_auto_scaling_refuses_with_instance_requirements_name_their_key(allocation, key, words):
    values = minimal_config(groups=[allocated(allocation, instanceTypes=[], instanceRequirements=REQUIREMENTS)])
    [(where, reason)] = config_problems(values)
    assert where == f"gpu-cloud:groups[0].capacity.allocation.{key}"
    assert reason.startswith(words)


def test_the_strategies_auto_scaling_takes_with_instance_requirements_or_types_are_accepted():
    accepted(allocated({"spot": "capacity-optimized", "onDemand": "lowest-price"},
                       instanceTypes=[], instanceRequirements=REQUIREMENTS))
    accepted(allocated({"spot": "capacity-optimized-prioritized", "onDemand": "prioritized"}))


@pytest.mark.parametrize(("allocation", "key"), [
    ({"spot": "capacity-optimized"}, "spot"),
    ({"spot": "lowest-price", "spotInstancePools": 2}, "spot"),
    ({"capacityRebalance": True}, "capacityRebalance"),
])
def test_spot_settings_in_a_group_without_spot_are_refused_naming_the_first_set(allocation, key):
    [(where, reason)] = config_problems(minimal_config(groups=[allocated(allocation, spotPercent=0)]))
    assert where == f"gpu-cloud:groups[0].capacity.allocation.{key}"
    assert reason.startswith("the group runs no spot (spotPercent 0, onDemandBaseCapacity 0, maxSize 4)")


def test_spot_settings_with_spot_and_on_demand_settings_without_are_accepted():
    accepted(allocated({"spot": "lowest-price", "spotInstancePools": 3, "capacityRebalance": True}))
    accepted(allocated({"onDemand": "lowest-price", "capacityRebalance": False}, spotPercent=0))


def test_every_group_s_allocation_is_checked_after_a_group_without_one():
    assert keys_of(group("first"), allocated({"spot": "capacity-optimized"}, name="second", spotPercent=0)) == [
        "gpu-cloud:groups[1].capacity.allocation.spot"]


def test_strategies_come_from_the_stack_file_where_it_sets_them_else_from_the_defaults():
    listed, required, bare, no_spot = accepted(
        allocated({"spot": "lowest-price", "onDemand": "lowest-price", "capacityRebalance": False}, name="listed"),
        allocated({"capacityRebalance": True}, name="required", instanceTypes=[], instanceRequirements=REQUIREMENTS),
        group("bare"), allocated({"onDemand": "prioritized"}, name="nospot", spotPercent=0)).groups
    assert [spot_strategy(g) for g in (listed, required, bare)] == [
        ("lowest-price", "stack file"), (DEFAULT_SPOT, "default"), (DEFAULT_SPOT, "default")]
    assert [on_demand_strategy(g) for g in (listed, required, bare, no_spot)] == [
        ("lowest-price", "stack file"), (REQUIREMENTS_ON_DEMAND, "default"), (DEFAULT_ON_DEMAND, "default"),
        ("prioritized", "stack file")]
    assert [rebalances(g) for g in (listed, required, bare, no_spot)] == [
        (False, "stack file"), (True, "stack file"), (True, "default"), (False, "default")]


# the cold-start keys (rules/cold_start.py)

def server(weights: dict | None = None, name: str = "servers", **settings) -> dict:
    container = {"name": "server", "image": f"{REPOSITORY}:1", "port": 8000,
                 **({"weights": {"sizeGiB": 15, **weights}} if weights else {})}
    return group(name, spotPercent=0, services={"containers": [container]}, **settings)


@pytest.mark.parametrize(("weights", "storage"), [
    ({"source": "s3://demo-data/datasets/llama/"}, {}),
    ({"source": "s3://demo-data/datasets/llama/", "to": "fsx"}, {"lustre": {}}),
    ({"source": "s3://demo-data/datasets/llama/"}, {"lustre": {"preloadPrefixes": ["datasets/llama/"]}}),
    ({"source": "s3://demo-data/datasets/llama/", "to": "mountpoint"}, {"s3Mount": {}}),
])
def test_weights_under_a_read_prefix_on_a_tier_the_stack_has_are_accepted(weights, storage):
    accepted(server(weights), storage=storage)


@pytest.mark.parametrize(("weights", "changes", "key", "words"), [
    ({"source": "s3://other-bucket/datasets/llama/"}, {}, "source", "s3://other-bucket/datasets/llama/ is outside"),
    ({"source": "s3://demo-data/datasets/llama/"}, {"data": None}, "source", "s3://demo-data/datasets/llama/ is outside"),
    ({"source": "s3://demo-data/datasets/llama/", "to": "fsx"}, {"storage": {"s3Mount": {}}}, "to",
     "fsx reads the weights through the Lustre file system"),
    ({"source": "s3://demo-data/datasets/llama/", "to": "mountpoint"}, {"storage": {"lustre": {}}}, "to",
     "mountpoint reads the weights through Mountpoint for Amazon S3"),
])
def test_weights_the_node_could_not_read_are_refused_naming_the_key(weights, changes, key, words):
    [(where, reason)] = config_problems(minimal_config(groups=[server(weights)], **changes))
    assert where == f"gpu-cloud:groups[0].services.containers[0].weights.{key}" and reason.startswith(words)


def test_every_container_s_weights_are_checked_in_every_group():
    outside = {"source": "s3://other-bucket/llama/"}
    assert keys_of(group("first"), server(outside, "second")) == [
        "gpu-cloud:groups[1].services.containers[0].weights.source"]


def test_a_warm_pool_pulls_the_images_of_its_group_s_containers():
    accepted(server(instanceTypes=["g5.xlarge"], warmPool={"prepullImages": True}))


def test_preloads_under_a_linked_prefix_are_accepted_and_the_first_outside_is_named():
    accepted(group(), storage={"lustre": {"preloadPrefixes": ["datasets/llama/", "runs/"]}})
    [(key, reason)] = config_problems(minimal_config(storage={"lustre": {"preloadPrefixes": [
        "datasets/llama/", "models/", "other/"]}}))
    assert key == "gpu-cloud:storage.lustre.preloadPrefixes" and reason.startswith("'models/' is not under a prefix")


# groups[].jobs and `gpucloud run --image` (rules/jobs.py)


@pytest.mark.parametrize(("image", "problem"), [
    ("nvcr.io/nvidia/pytorch:24.10-py3", None),
    ("localhost:5000/team/train:1", None),
    (f"{REPOSITORY}@sha256:{'a' * 64}", None),
    ("python", "--image python names no tag (Docker pulls latest), which moves: "),
    ("localhost:5000/python", "--image localhost:5000/python names no tag (Docker pulls latest), which moves: "),
    ("python:latest", "--image python:latest names the tag latest, which moves: "),
    ("Python:3.11", f"--image Python:3.11 is not an image reference Docker takes: {PIN}, in lower case"),
])
def test_a_job_image_is_pinned_or_refused_saying_why(image, problem):
    found = unpinned_image_problem(image)
    assert (found is None) == (problem is None)
    if found is not None:
        assert found.startswith(problem) and found.endswith(("lower case", PIN))


def test_a_job_image_is_refused_where_the_nodes_could_not_pull_it():
    nat = accepted(group("first"), group("trainers", jobs={"ecrRepositories": [REPOSITORY]}))
    offline = accepted(group("first"), group("trainers", jobs={"ecrRepositories": [REPOSITORY]}), network=OFFLINE)
    other = REPOSITORY.replace("team/train", "team/other")
    for config in (nat, offline):
        trainers = config.groups[1]
        assert job_image_problem(config, trainers, f"{REPOSITORY}:1", "stacks/Pulumi.demo.yaml") is None
        assert job_image_problem(config, trainers, f"{other}:1", "stacks/Pulumi.demo.yaml") == (
            f"--image {other}:1 is in ECR repository {other}, which groups[1].jobs.ecrRepositories of "
            "stacks/Pulumi.demo.yaml does not list, so the nodes may not pull it: add it there and run pulumi up")
        assert job_image_problem(config, trainers, f"{REPOSITORY}:latest", "s").startswith(
            f"--image {REPOSITORY}:latest names the tag latest")
    assert job_image_problem(nat, nat.groups[1], "nvcr.io/nvidia/pytorch:24.10-py3", "s") is None
    assert job_image_problem(offline, offline.groups[1], "nvcr.io/nvidia/pytorch:24.10-py3", "s") == (
        "--image nvcr.io/nvidia/pytorch:24.10-py3 is not in ECR, and the stack's network.egress endpointsOnly reaches "
        "no other registry: push it to ECR and list its repository in groups[1].jobs.ecrRepositories")


def test_an_ecr_repository_in_another_region_is_named_whole_without_the_internet():
    elsewhere = REPOSITORY.replace("us-east-1", "eu-west-1")
    [(key, reason)] = config_problems(minimal_config(groups=[group(jobs={"ecrRepositories": [elsewhere]})],
                                                     network=OFFLINE))
    assert key == "gpu-cloud:groups[0].jobs.ecrRepositories[0]"
    assert reason == (f"{elsewhere} is in ECR in eu-west-1, and the stack's ECR endpoints reach only us-east-1: "
                      "replicate it to us-east-1 or use egress: nat")


# groups[].endpoint (rules/endpoint.py)

CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0123abcd-0123-abcd-0123-0123456789ab"
SUBNETS = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]


def serving(name: str = "servers", **endpoint) -> dict:
    return group(name, spotPercent=0, services={"containers": [{"name": "web", "image": f"{REPOSITORY}:1", "port": 8000}]},
                 endpoint={"port": 8000, "allowedCidrs": ["10.20.0.0/16"], **endpoint})


FACING = {"internetFacing": True, "protocol": "HTTPS", "certificateArn": CERTIFICATE}


def test_an_endpoint_needs_subnets_in_two_zones_of_either_network():
    assert keys_of(serving(), network={"zones": 1}) == ["gpu-cloud:network.zones"]
    assert keys_of(serving(), network={"subnetIds": SUBNETS[:1]}) == ["gpu-cloud:network.subnetIds"]
    accepted(serving(), network={"zones": 2})
    accepted(serving(), network={"subnetIds": SUBNETS})
    accepted(group(), network={"zones": 1})


def test_every_group_s_endpoint_is_checked_after_a_group_without_one():
    assert keys_of(group("first"), serving(port=9000)) == ["gpu-cloud:groups[1].endpoint.port"]


@pytest.mark.parametrize(("network", "key", "words"), [
    ({"subnetIds": SUBNETS}, "groups[0].endpoint.internetFacing", "is true for group 'servers', and the stack runs in "
                                                                  "subnetIds of your own VPC"),
    ({"egress": "endpointsOnly", "interfaceEndpoints": OFFLINE["interfaceEndpoints"]}, "network.egress",
     "is endpointsOnly, which has no internet gateway, and the endpoint of group 'servers' is internetFacing"),
    ({"cidr": "10.64.0.0/22"}, "network.cidr", "10.64.0.0/22 makes /28 public subnets (its 64ths), smaller than the "
                                               "/27 an Application Load Balancer needs"),
])
def test_an_internet_facing_endpoint_is_refused_where_its_subnets_cannot_be_public(network, key, words):
    [(where, reason)] = config_problems(minimal_config(groups=[serving(**FACING)], network=network))
    assert where == f"gpu-cloud:{key}" and reason.startswith(words)


def test_an_internet_facing_endpoint_is_accepted_in_a_created_nat_network_of_27_bit_public_subnets():
    accepted(serving(**FACING), network={"cidr": "10.64.0.0/21"})
    accepted(serving(**FACING))


# groups[].services (rules/services.py)

def test_each_service_s_install_is_checked_when_the_group_runs_no_jupyter():
    [(key, reason)] = config_problems(minimal_config(groups=[group(services={"tensorboard": {"install": "image"}})]))
    assert key == "gpu-cloud:groups[0].services.tensorboard.install"
    assert reason.startswith("image says the AMI has tensorboard, but the group runs the default AMI")


@pytest.mark.parametrize("log_dir", ["s3://demo-data/runs/tensorboard/", "s3://demo-data/datasets", "/scratch/runs"])
def test_tensorboard_reads_a_log_dir_under_a_granted_prefix_or_on_the_node(log_dir):
    config = accepted(group(services={"tensorboard": {"logDir": log_dir}}))
    assert config.groups[0].services.tensorboard.log_dir == log_dir


def test_tensorboard_without_data_needs_a_log_dir():
    values = minimal_config(groups=[group(services={"tensorboard": {}})])
    del values["data"]
    [(key, reason)] = config_problems(values)
    assert key == "gpu-cloud:groups[0].services.tensorboard.logDir" and reason.startswith("has no default without")
    values["groups"][0]["services"]["tensorboard"]["logDir"] = "s3://demo-data/runs/"
    [(key, reason)] = config_problems(values)
    assert key == "gpu-cloud:groups[0].services.tensorboard.logDir" and "outside what the node role may read" in reason


# groups[].image (rules/image.py)

OWN_IMAGE = "ami-0123456789abcdef0"


def own(provides: list[str], name: str = "batch", **settings) -> dict:
    return group(name, amiId=OWN_IMAGE, image={"provides": provides}, **settings)


def test_an_own_image_that_carries_python_alone_runs_a_plain_group():
    accepted(own(["python3"]))


@pytest.mark.parametrize(("settings", "key", "lacking"), [
    ({"multiNode": True, "instanceTypes": ["p5.48xlarge"]}, "groups[0].multiNode", "efa and ofiNccl"),
    ({"services": {"containers": [{"name": "web", "image": "nginx:1.27", "gpus": 0}]}},
     "groups[0].services.containers", "docker"),
    ({"jobs": {"ecrRepositories": [REPOSITORY]}}, "groups[0].jobs.ecrRepositories", "docker and nvidiaContainerToolkit"),
    ({"services": {"tensorboard": {"logDir": "/scratch/runs", "install": "image"}}},
     "groups[0].services.tensorboard.install", "tensorboard"),
])
def test_an_own_image_that_lacks_what_a_feature_relies_on_is_refused_naming_the_feature(settings, key, lacking):
    [(where, reason)] = config_problems(minimal_config(groups=[own(["python3"], **settings)]))
    assert where == f"gpu-cloud:{key}"
    pronoun = "them" if " and " in lacking else "it"
    assert reason == (f"relies on {lacking} in the image, and groups[0].image.provides says amiId {OWN_IMAGE} does "
                      f"not carry {pronoun}: add {lacking.replace(' and ', ', ')} there if the image has it, or build "
                      "the image with it")


def test_storage_relies_on_the_image_only_where_the_stack_has_it():
    [(key, reason)] = config_problems(minimal_config(groups=[own(["python3"])], storage={"lustre": {}}))
    assert key == "gpu-cloud:storage.lustre" and reason.startswith("relies on lustreClient in the image")


def test_the_default_image_s_lack_is_named_with_its_release_notes_and_the_fix():
    [(key, reason)] = config_problems(minimal_config(storage={"s3Mount": {"install": "ami"}}))
    assert key == "gpu-cloud:storage.s3Mount.install"
    assert reason.startswith("relies on mountS3 in the image, and group 'workers' runs the default image (AWS Deep "
                             "Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)), which lacks it: ")
    assert reason.endswith("(release notes read 2026-11-28, data/image_software.json); use storage.s3Mount.install: "
                           "download (it needs egress nat), or an image of your own that has it (amiId, with mountS3 "
                           "in groups[0].image.provides)")


def test_a_default_image_release_without_efa_refuses_multi_node_groups_with_the_own_image_fix(monkeypatch):
    """The shipped release lacks only mountS3 without a fallback; a later one that drops other
    software gets the generic fix (an image of your own), and one message for the feature."""
    release = default_image()
    without_efa = {**release, "provides": {name: found for name, found in release["provides"].items()
                                           if name not in ("efa", "ofiNccl")}}
    monkeypatch.setattr(image_rule, "default_image", lambda: without_efa)
    [(key, reason)] = config_problems(minimal_config(groups=[group(multiNode=True, instanceTypes=["p5.48xlarge"])]))
    assert key == "gpu-cloud:groups[0].multiNode"
    assert reason.startswith("relies on efa and ofiNccl in the image, and group 'batch' runs the default image")
    assert "), which lacks them: not in its release notes; not in its release notes (release notes read" in reason
    assert reason.endswith("use an image of your own that has it (amiId, with efa, ofiNccl in groups[0].image.provides)")

def test_every_group_s_image_is_checked_after_a_group_that_asserts_the_default_image():
    values = minimal_config(groups=[group("first", image={"provides": ["python3"]}),
                                    own(["python3"], "second", multiNode=True, instanceTypes=["p5.48xlarge"])])
    assert [key for key, _ in config_problems(values)] == ["gpu-cloud:groups[0].image.provides",
                                                           "gpu-cloud:groups[1].multiNode"]


# storage (rules/storage.py)

def data(read: list[str], write: list[str] | None = None) -> dict:
    return {"bucket": "demo-data", "readPrefixes": read, "writePrefixes": write or []}


def test_a_file_system_links_up_to_eight_prefixes_and_refuses_a_ninth():
    eight = [f"set{index}/" for index in range(8)]
    accepted(group(), storage={"lustre": {}}, data=data(eight[:5], eight[5:]))
    [(key, reason)] = config_problems(minimal_config(storage={"lustre": {}}, data=data([*eight, "set8/"])))
    assert key == "gpu-cloud:data" and reason.startswith("lists 9 prefixes; an FSx for Lustre file system takes at most 8")


def test_nested_prefixes_are_refused_only_with_a_file_system_naming_the_first_pair():
    nested = data(["datasets/", "datasets/a/"], ["datasets/b/"])
    [(key, reason)] = config_problems(minimal_config(storage={"lustre": {}}, data=nested))
    assert key == "gpu-cloud:data" and reason.startswith("'datasets/a/' lies under 'datasets/'")
    accepted(group(), data=nested)


def test_a_file_system_needs_data_and_a_stack_without_either_is_accepted():
    values = minimal_config(storage={"lustre": {}})
    del values["data"]
    [(key, reason)] = config_problems(values)
    assert key == "gpu-cloud:storage.lustre" and reason.startswith("needs data.bucket")
    accepted(group(), data=None)


def test_a_mount_writes_only_where_data_grants_writes():
    [(key, reason)] = config_problems(minimal_config(storage={"s3Mount": {"writePrefix": True}},
                                                     data=data(["datasets/"])))
    assert key == "gpu-cloud:storage.s3Mount.writePrefix" and reason == "is true but data lists no writePrefixes"
    accepted(group(), storage={"s3Mount": {"writePrefix": True}})
    accepted(group(), storage={"s3Mount": {}}, data=data(["datasets/"]))


def test_a_mount_downloads_mount_s3_only_through_nat():
    accepted(group(), storage={"s3Mount": {"install": "download"}})
    [(key, _)] = config_problems(minimal_config(storage={"s3Mount": {"install": "download"}}, network=OFFLINE))
    assert key == "gpu-cloud:storage.s3Mount.install"
    accepted(own(["python3", "mountS3"]), storage={"s3Mount": {"install": "ami"}}, network=OFFLINE)


# the node role's quota (rules/node_role.py)

def test_prefixes_that_fill_the_role_beside_one_group_exactly_leave_the_second_group_to_blame():
    """At exactly the quota beside one group the prefixes fit; the group added past it is what to change."""
    def values(read: int, write: int, *groups: dict) -> dict:
        """Each character of the read prefix takes two in the policies, of the last write prefix three."""
        writes = [f"{index:02d}" + "w" * 118 + "/" for index in range(15)] + ["x" * write + "/"]
        return minimal_config(groups=list(groups) or [group()], data=data(["r" * read + "/"], writes))

    def size(read: int, write: int) -> int:
        return node_role_policies_size(StackConfig.model_validate(values(read, write), by_alias=True), "demo", "us-east-1")

    short = IAM_ROLE_POLICY_LIMIT - size(1, 1)
    read, write = 1 + (short - 3 * (short % 2)) // 2, 1 + short % 2
    assert size(read, write) == IAM_ROLE_POLICY_LIMIT
    accepted(group(), data=values(read, write)["data"])
    [(key, reason)] = config_problems(values(read, write, group(), group("second")))
    assert key == "gpu-cloud:groups"
    assert reason.startswith("2 groups make the node role's inline policies") and reason.endswith(
        "or a shorter stack name or fewer data prefixes")
