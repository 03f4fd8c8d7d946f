"""The node role's grants for the services a group runs: its JupyterLab token parameter, and the
ECR repositories its container images and its jobs' images (`jobs.ecrRepositories`) come from.
Only a group that asks for them gets them."""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.documents.services import Document

ECR_PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
"""What `docker pull` from a private repository needs once logged in (ECR user guide, "Private
repository policies" / "Amazon ECR managed policies": AmazonEC2ContainerRegistryPullOnly holds
these three and ecr:GetAuthorizationToken; read 2026-11-25)."""


def node_services_policy(
    *, token_parameter_arns: Sequence[str] = (), ecr_repository_arns: Sequence[str] = ()
) -> Document | None:
    """None when the stack's groups need neither. GetAuthorizationToken takes no resource
    (Service Authorization Reference, Amazon ECR: no resource type for it; read 2026-11-25); the
    pulls are held to the named repositories. The node reads a token parameter's versions and
    writes it (gpucloud.node.jupyter: the first token written after the placeholder is the group's);
    it never needs GetParameter. kms:Encrypt/Decrypt on the project key are in the node role's main
    policy."""
    statements: list[Document] = []
    if token_parameter_arns:
        statements.append({
            "Sid": "NodeKeepsOwnJupyterToken",
            "Effect": "Allow",
            "Action": ["ssm:GetParameterHistory", "ssm:PutParameter"],
            "Resource": sorted(set(token_parameter_arns)),
        })
    if ecr_repository_arns:
        statements += [
            {
                "Sid": "EcrLoginHasNoResourceLevelPermissions",
                "Effect": "Allow",
                "Action": "ecr:GetAuthorizationToken",
                "Resource": "*",
            },
            {
                "Sid": "PullServiceImagesFromNamedRepositories",
                "Effect": "Allow",
                "Action": ECR_PULL_ACTIONS,
                "Resource": sorted(set(ecr_repository_arns)),
            },
        ]
    if not statements:
        return None
    return {"Version": "2012-10-17", "Statement": statements}
