"""The node role's inline policies as the stack's config makes them: what its services policy names
(token parameters, ECR repositories, containers' secrets), and the whole set IAM counts against the
role's quota, at the longest any account writes them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpucloud.config.services import token_parameter_arn
from gpucloud.documents import Document, instance_role_policy, prometheus_remote_write_policy
from gpucloud.documents.node_services import container_secret_statements, node_services_policy
from gpucloud.naming import autoscaling_group_name, jupyter_token_parameter_name

if TYPE_CHECKING:
    from gpucloud.config.groups import GroupConfig
    from gpucloud.config.stack import StackConfig

IAM_ROLE_POLICY_LIMIT = 10240
"""IAM user guide, "IAM and AWS STS quotas" ("Role policy size cannot exceed 10,240 characters"):
the inline policies of one role together, whitespace not counted (read 2026-11-25)."""

LONGEST_PARTITION = "aws-us-gov"
"""Of the partitions a stack's region can be in (aws, aws-cn, aws-us-gov): the config does not know
which account, so the count takes the longest."""
ACCOUNT_ID = "0" * 12
"""Account ids are always 12 digits."""
KEY_ID = "0" * 36
"""KMS key ids are 36 characters: a UUID, or `mrk-` and 32 hex digits for a multi-Region key (the
KMS API reference's KeyId examples, `1234abcd-12ab-34cd-56ef-1234567890ab` and
`mrk-1234abcd12ab34cd56ef1234567890ab`; read 2026-11-25)."""
WORKSPACE_ID = "ws-" + "0" * 36
"""An AMP workspace id is `ws-` and a UUID (`PrometheusWorkspaceId` takes no other)."""


def node_role_policies(config: StackConfig, base: str, region: str) -> list[Document]:
    """The node role's inline policies as the program writes them (S3PrefixAccess, and
    PrometheusWorkspace's remote write when Prometheus is on), from the same builders, with the
    config's own name base, region, groups and prefixes, and the longest partition, account, key
    and workspace ids any account has: never shorter than what the stack will put."""
    data = config.data
    key_arn = f"arn:{LONGEST_PARTITION}:kms:{region}:{ACCOUNT_ID}:key/{KEY_ID}"
    policies = [instance_role_policy(
        partition=LONGEST_PARTITION,
        region=region,
        account_id=ACCOUNT_ID,
        project=base,
        key_arn=key_arn,
        bucket=data.bucket if data else None,
        read_prefixes=data.read_prefixes if data else (),
        write_prefixes=data.write_prefixes if data else (),
        session_manager=config.access.ssm,
        group_names=[autoscaling_group_name(base, group.name) for group in config.groups],
    )]
    prometheus = config.monitoring.prometheus
    if prometheus.enabled:
        workspace = prometheus.workspace_id or WORKSPACE_ID
        policies.append(prometheus_remote_write_policy(
            f"arn:{LONGEST_PARTITION}:aps:{region}:{ACCOUNT_ID}:workspace/{workspace}"))
    services = node_services_policy(**node_services_grants(config, LONGEST_PARTITION, region, ACCOUNT_ID, base))
    if services is not None:
        policies.append(services)
    return policies


def iam_policy_size(document: Document) -> int:
    """A policy's characters as IAM counts them: whitespace not counted."""
    return len(re.sub(r"\s", "", json.dumps(document)))


def node_role_policies_size(config: StackConfig, base: str, region: str) -> int:
    """What IAM counts against the node role's quota: all its inline policies together."""
    return sum(iam_policy_size(document) for document in node_role_policies(config, base, region))


def ecr_repository_arns(partition: str, groups: Sequence[GroupConfig]) -> list[str]:
    """The repositories of the groups' private ECR images, by ARN, their container services' and
    those their jobs may run (`jobs.ecrRepositories`): the only ones the node role may pull."""
    matches = [*(match for group in groups for match in group.services.ecr_images),
               *(match for group in groups for match in group.jobs.ecr_repository_matches)]
    return sorted({f"arn:{partition}:ecr:{match['region']}:{match['account']}:repository/{match['repository']}"
                   for match in matches})


def secret_references(groups: Sequence[GroupConfig]) -> tuple[list[str], list[str]]:
    """The SSM parameter names and the secret names or ARNs the groups' containers' `secretEnv` names."""
    references = {reference for group in groups for container in group.services.containers
                  for reference in container.secret_env.values()}
    parameters = sorted(reference.removeprefix("ssm:") for reference in references if reference.startswith("ssm:"))
    secrets = sorted(reference.removeprefix("secretsmanager:") for reference in references
                     if reference.startswith("secretsmanager:"))
    return parameters, secrets


def node_services_grants(config: StackConfig, partition: str, region: str, account_id: str, base: str) -> dict[str, list]:
    """What the node role's services policy names: each JupyterLab group's token parameter, the
    ECR repositories of the container images and the containers' secrets
    (documents.node_services.node_services_policy)."""
    parameters, secrets = secret_references(config.groups)
    return {
        "secret_statements": container_secret_statements(partition, region, account_id, parameter_names=parameters,
                                                         secret_ids=secrets),
        "token_parameter_arns": [token_parameter_arn(partition, region, account_id, jupyter_token_parameter_name(base, group.name))
                                 for group in config.groups if group.services.jupyter is not None],
        "ecr_repository_arns": ecr_repository_arns(partition, config.groups),
    }
