"""The AWS endpoints a stack's nodes need: what the node's own code was measured to call, per node
feature, plus what AWS's agents on the node call, for the features each group turns on.

Without a NAT gateway (`network.egress: endpointsOnly`, or your own subnets with no default
route) every one of them needs a VPC endpoint, or the call hangs until it times out: storage
set-up fails, the launch hook ABANDONs, and Auto Scaling replaces the node in a loop.

The measured calls live in `gpucloud/data/node_aws_calls.json`: feature -> the node test that
measured it -> service (botocore's endpoint prefix, i.e. the VPC endpoint service's last part) ->
operations. The node tests record them (tests/node/aws_calls.py) and fail when the file is stale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from gpucloud.config.cold_start import weights_tier

if TYPE_CHECKING:
    from gpucloud.config.groups import GroupConfig
    from gpucloud.config.stack import StackConfig

MEASURED_CALLS_PATH = Path(__file__).resolve().parents[1] / "data" / "node_aws_calls.json"

EVERY_NODE = ("bootstrap", "launchHook", "drain", "watch")
"""Bootstrap stub (fetch the bundle, ABANDON on failure), boot gate and launch heartbeat, drain on
scale-in or spot notice, GPU watch: every node runs them."""
NODE_FEATURES = (*EVERY_NODE, "healthReplace", "dataVolume", "persistentVolume", "checkpointToS3", "prometheus",
                 "jupyterToken", "ecrImage", "jobEcrImage", "containerSecrets", "containerWeights")
"""What node code does, each measured by the node tests marked with it."""

AGENT_CALLS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "cloudWatchAgent": {
        "monitoring": ("PutMetricData",), "ec2": ("DescribeTags",), "logs": ("CreateLogStream", "PutLogEvents"),
    },
    "sessionManager": {
        "ssm": ("UpdateInstanceInformation",),
        "ssmmessages": ("CreateControlChannel", "OpenControlChannel"),
        "ec2messages": ("GetMessages",),
    },
    "dockerPullsFromEcr": {"ecr.dkr": ("registry API /v2/ (docker pull)",)},
    "dockerPullsJobImageFromEcr": {"ecr.dkr": ("registry API /v2/ (docker pull)",)},
    "jobOutput": {"logs": ("CreateLogStream", "DescribeLogGroups", "PutLogEvents")},
}
"""AWS's own agents, not measured here. The CloudWatch agent puts the node's metrics, and before
its first put looks up the instance's aws:autoscaling:groupName tag with EC2 DescribeTags for the
`${aws:AutoScalingGroupName}` dimension (aws/amazon-cloudwatch-agent, read 2026-11-25:
translator/translate/metrics/append_dimensions/ruleAutoScalingGroupName.go turns that dimension
into the ec2tagger's tag keys; plugins/processors/ec2tagger/ec2tagger.go drops every metric until
DescribeTags answered, and its README asks for that permission); it also sends the node's
boot-phase lines to the job log group (userdata/render.py: cloudwatch_agent_config). The SSM agent reaches ssm,
ssmmessages and ec2messages (Systems Manager user guide, "Use VPC endpoints to improve the security
of EC2 instances", read 2026-11-24). Docker pulls a private ECR image's manifest from the registry
endpoint (ecr.dkr) and its layers from S3 (the gateway endpoint), after the node's own
GetAuthorizationToken on ecr.api (ECR user guide, "Amazon ECR interface VPC endpoints", read
2026-11-25). A job's output reaches its log group the same way: `gpucloud run` sends Run Command
with CloudWatch output on, and the SSM agent on the node, not Systems Manager, puts it into
CloudWatch Logs through the `logs` endpoint after looking the group up (Systems Manager user guide,
"Configuring Amazon CloudWatch Logs for Run Command": the instance profile needs the logs actions
and the node a route to CloudWatch Logs; aws/amazon-ssm-agent cloudwatchlogspublisher:
IsLogGroupPresent, CreateLogStream, PutLogEvents; read 2026-11-28)."""

ENDPOINT_SERVICES = {"api.ecr": "ecr.api"}
"""Where botocore's endpoint prefix is not the VPC endpoint service's name (ECR's API: `api.ecr` in
botocore's model, `com.amazonaws.<region>.ecr.api` as an endpoint): the node tests record calls
under the endpoint's name."""

GATEWAY_ENDPOINTS = ("s3",)
"""The network the stack creates always has the S3 gateway endpoint (free, and no NAT charge)."""


@cache
def measured_calls() -> dict[str, dict[str, dict[str, list[str]]]]:
    """feature -> measuring test -> service -> operations, as the node tests recorded them."""
    return json.loads(MEASURED_CALLS_PATH.read_text(encoding="utf-8"))["features"]


def feature_calls(feature: str) -> dict[str, list[str]]:
    """service -> operations one feature calls: measured for node code, cited for AWS's agents."""
    if feature in AGENT_CALLS:
        return {service: list(operations) for service, operations in AGENT_CALLS[feature].items()}
    services: dict[str, set[str]] = {}
    for calls in measured_calls().get(feature, {}).values():
        for service, operations in calls.items():
            services.setdefault(service, set()).update(operations)
    return {service: sorted(operations) for service, operations in sorted(services.items())}


def group_features(config: StackConfig, group: GroupConfig) -> list[str]:
    """The node features a group's nodes run."""
    features = list(EVERY_NODE)
    if group.health.replace:
        features.append("healthReplace")
    if group.data_volume_gib:
        features.append("dataVolume")
    if group.persistent_volume_gib:
        features.append("persistentVolume")
    if config.data and config.data.write_prefixes and not group.checkpoint.command:
        features.append("checkpointToS3")
    if config.monitoring.prometheus.enabled:
        features.append("prometheus")
    if group.services.jupyter is not None:
        features.append("jupyterToken")
    if group.services.ecr_images:
        features += ["ecrImage", "dockerPullsFromEcr"]
    if any(container.secret_env for container in group.services.containers):
        features.append("containerSecrets")
    if any(container.weights and weights_tier(config, container.weights) == "scratch"
           for container in group.services.containers):
        features.append("containerWeights")
    if group.jobs.ecr_repositories:
        features += ["jobEcrImage", "dockerPullsJobImageFromEcr"]
    if config.access.ssm:
        features.append("jobOutput")
    return features


def needed_endpoints(config: StackConfig) -> dict[str, list[str]]:
    """endpoint service -> what needs it and for which calls (`every node: GetObject`, a group's
    key, an agent), in a stable order."""
    users: list[tuple[str, str]] = [("cloudWatchAgent", "the CloudWatch agent")]
    if config.access.ssm:
        users.append(("sessionManager", "access.ssm"))
    for index, group in enumerate(config.groups):
        users += [(feature, _KEYS.get(feature, "every node").format(index)) for feature in group_features(config, group)]
    needed: dict[str, dict[str, set[str]]] = {}
    for feature, why in users:
        for service, operations in feature_calls(feature).items():
            needed.setdefault(service, {}).setdefault(why, set()).update(operations)
    return {service: [f"{why}: {', '.join(sorted(operations))}" for why, operations in users_of.items()]
            for service, users_of in needed.items()}


def missing_interface_endpoints(config: StackConfig) -> dict[str, list[str]]:
    """What the nodes of a network the stack creates with `egress: endpointsOnly` would call
    without an endpoint: the needed services that are neither a gateway endpoint nor listed."""
    given = set(config.network.interface_endpoints) | set(GATEWAY_ENDPOINTS)
    return {service: why for service, why in needed_endpoints(config).items() if service not in given}


def describe(missing: Mapping[str, list[str]]) -> str:
    """`ec2 (groups[0].dataVolumeGiB: DescribeInstances; ...), autoscaling (...)` for a message."""
    return ", ".join(f"{service} ({'; '.join(why)})" for service, why in missing.items())


_KEYS = {
    "healthReplace": "groups[{}].health.replace",
    "dataVolume": "groups[{}].dataVolumeGiB",
    "persistentVolume": "groups[{}].persistentVolumeGiB",
    "checkpointToS3": "groups[{}] checkpoints to data.writePrefixes",
    "prometheus": "monitoring.prometheus",
    "jupyterToken": "groups[{}].services.jupyter",
    "ecrImage": "groups[{}].services.containers",
    "dockerPullsFromEcr": "groups[{}].services.containers",
    "containerSecrets": "groups[{}].services.containers[].secretEnv",
    "containerWeights": "groups[{}].services.containers[].weights",
    "jobEcrImage": "groups[{}].jobs.ecrRepositories",
    "dockerPullsJobImageFromEcr": "groups[{}].jobs.ecrRepositories",
    "jobOutput": "groups[{}] job output (access.ssm)",
}

