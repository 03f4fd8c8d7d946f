"""NodeServices: what the stack holds for the services its groups run on their nodes (JupyterLab,
TensorBoard, containers): each JupyterLab group's token parameter, and the node role's grants for
those parameters, for the ECR repositories the container images and job images come from, and for
the parameters and secrets the containers' `secretEnv` reads.

The services themselves run on the nodes (gpucloud.node.services); `node_services_document` is the
plain document the nodes read, carried in the user data beside node.json.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.config.cold_start import weights_tier
from gpucloud.config.groups import GroupConfig
from gpucloud.config.storage import LUSTRE_MOUNT_PATH, S3_MOUNT_ROOT, lustre_path
from gpucloud.config.stack import StackConfig
from gpucloud.config.node_role import ecr_repository_arns, secret_references
from gpucloud.config.services import tensorboard_log_dir, token_parameter_arn
from gpucloud.config.weights import WeightsConfig
from gpucloud.documents.node_services import container_secret_statements, node_services_policy
from gpucloud.lookups import ResolvedStack
from gpucloud.naming import jupyter_token_parameter_name
from gpucloud.userdata.layout import DATA_MOUNT, PERSIST_MOUNT

TOKEN_PLACEHOLDER = "unset"
"""The parameter's value until a node first starts JupyterLab and writes the token it made: the
only value Pulumi ever sees (`ignore_changes` keeps it from undoing the node's write)."""
PARAMETER_TIER = "Standard"
"""Standard parameters cost nothing to store (Systems Manager pricing, "Parameter Store", read
2026-11-25); a token is far below the 4 KB they hold."""
CONTAINERS_TAG = "gpu-cloud:containers"
"""On a launch template whose nodes run container services: the reason its metadata hop limit is 2
(the `imdsv2-required` policy allows 2 only where this tag says "true")."""


def jupyter_root_dir(group: GroupConfig) -> str | None:
    """Where a group's notebooks live: the persistent volume when it has one (it outlives the node);
    None: the home of the image's login user, which the node knows (gpucloud.node.services.image_family)."""
    jupyter = group.services.jupyter
    if jupyter is not None and jupyter.root_dir:
        return jupyter.root_dir
    if group.persistent_volume_gib:
        return f"{PERSIST_MOUNT}/home"
    if group.data_volume_gib:
        return f"{DATA_MOUNT}/home"
    return None


def node_services_document(config: StackConfig, group: GroupConfig, base: str, region: str) -> dict | None:
    """What the node's `services` command starts after the gate (None: nothing)."""
    services = group.services
    if not services.any:
        return None
    document: dict = {"region": region, "containers": []}
    if services.jupyter is not None:
        document["jupyter"] = {
            "install": services.jupyter.install,
            "root_dir": jupyter_root_dir(group),
            "token_parameter": jupyter_token_parameter_name(base, group.name),
            "kms_key_id": f"alias/gpu-cloud/{base}",
        }
    if services.tensorboard is not None:
        document["tensorboard"] = {
            "install": services.tensorboard.install,
            "log_dir": tensorboard_log_dir(config.data, services.tensorboard),
        }
    for container in services.containers:
        ecr = container.ecr
        health = container.health_check
        document["containers"].append({
            "name": container.name,
            "image": container.image,
            "command": list(container.command) if container.command else None,
            "env": dict(sorted(container.env.items())),
            "secret_env": dict(sorted(container.secret_env.items())),
            "gpus": container.gpus,
            "port": container.port,
            "health": health.model_dump() if health else None,
            "restart": container.restart_policy,
            "ecr_region": ecr["region"] if ecr else None,
            **({"weights": weights_document(config, container.weights)} if container.weights else {}),
        })
    if group.warm_pool is not None and group.warm_pool.prepull_images:
        document["prepull_images"] = True
    lustre = config.storage.lustre
    if lustre is not None and lustre.preload_prefixes:
        document["preload"] = [f"{LUSTRE_MOUNT_PATH}{lustre_path(prefix)}" for prefix in lustre.preload_prefixes]
    return document


def weights_document(config: StackConfig, weights: WeightsConfig) -> dict:
    """Where the node reads a container's weights: copied from the bucket to /scratch (no path), or
    in place under the Lustre or Mountpoint mount of their prefix (`config.cold_start.weights_tier`)."""
    tier = weights_tier(config, weights)
    path = {"fsx": f"{LUSTRE_MOUNT_PATH}/{weights.prefix.rstrip('/')}",
            "mountpoint": f"{S3_MOUNT_ROOT}/{weights.prefix.rstrip('/')}"}.get(tier)
    return {"bucket": weights.bucket, "prefix": weights.prefix, **({"path": path} if path else {})}


@dataclass(frozen=True)
class NodeServicesArgs:
    name_base: str
    """What the names AWS wants unique are built from (`gpucloud.naming.name_base`)."""
    region: str
    """The region it is deployed in."""
    account_id: str
    """The deploying account's id, for the ARNs its policies name."""
    partition: str
    """The AWS partition of the ARNs it writes (`aws`, `aws-cn`, `aws-us-gov`)."""
    role_name: pulumi.Input[str]
    """The node role, which gets the grants."""
    kms_key_arn: pulumi.Input[str]
    """The project key: the token parameters are SecureStrings encrypted with it."""
    jupyter_groups: Sequence[str] = ()
    """The groups (config names) that run JupyterLab: one token parameter each."""
    ecr_repository_arns: Sequence[str] = ()
    """The private ECR repositories the containers' images come from: the node role may pull from them."""
    secret_parameter_names: Sequence[str] = ()
    """The SSM parameters the containers' `secretEnv` reads."""
    secret_ids: Sequence[str] = ()
    """The Secrets Manager secrets (names or whole ARNs) the containers' `secretEnv` reads."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""


class NodeServices(pulumi.ComponentResource):
    """Token parameters for JupyterLab groups, and the node role's grants for them and for ECR pulls."""

    token_parameter_names: pulumi.Output[dict]
    """Group -> the SSM parameter holding its JupyterLab token."""

    def __init__(self, name: str, args: NodeServicesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:NodeServices", name, None, opts)
        self.parameters: dict[str, aws.ssm.Parameter] = {}
        for group in args.jupyter_groups:
            parameter_name = jupyter_token_parameter_name(args.name_base, group)
            self.parameters[group] = aws.ssm.Parameter(
                f"{name}-{group}-jupyter-token",
                name=parameter_name,
                description=f"gpu-cloud {args.name_base}/{group}: JupyterLab token (written by the node)",
                type="SecureString",
                tier=PARAMETER_TIER,
                key_id=args.kms_key_arn,
                value=TOKEN_PLACEHOLDER,
                tags={**args.tags, "Name": parameter_name},
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["value"]),
            )
        document = node_services_policy(
            token_parameter_arns=[
                token_parameter_arn(args.partition, args.region, args.account_id,
                                    jupyter_token_parameter_name(args.name_base, group))
                for group in args.jupyter_groups
            ],
            ecr_repository_arns=args.ecr_repository_arns,
            secret_statements=container_secret_statements(
                args.partition, args.region, args.account_id, parameter_names=args.secret_parameter_names,
                secret_ids=args.secret_ids),
        )
        self.policy = None
        if document is not None:
            self.policy = aws.iam.RolePolicy(
                f"{name}-policy",
                role=args.role_name,
                name="gpu-cloud-node-services",
                policy=json.dumps(document),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.token_parameter_names = pulumi.Output.from_input(
            {group: parameter.name for group, parameter in self.parameters.items()})
        self.register_outputs({"tokenParameterNames": self.token_parameter_names})


def node_services(name: str, stack: ResolvedStack, role_name: pulumi.Input[str], kms_key_arn: pulumi.Input[str],
                  opts: pulumi.ResourceOptions) -> NodeServices | None:
    """The stack's NodeServices, or None where no group runs JupyterLab, an ECR image or a secretEnv."""
    config = stack.settings.config
    jupyter_groups = [group.name for group in config.groups if group.services.jupyter is not None]
    repositories = ecr_repository_arns(stack.partition, config.groups)
    parameters, secrets = secret_references(config.groups)
    if not jupyter_groups and not repositories and not parameters and not secrets:
        return None
    return NodeServices(f"{name}-services", NodeServicesArgs(
        name_base=stack.settings.name_base,
        region=stack.settings.region,
        account_id=stack.account_id,
        partition=stack.partition,
        role_name=role_name,
        kms_key_arn=kms_key_arn,
        jupyter_groups=jupyter_groups,
        ecr_repository_arns=repositories,
        secret_parameter_names=parameters,
        secret_ids=secrets,
        tags=stack.settings.tags,
    ), opts=opts)
