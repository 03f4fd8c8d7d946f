"""The node role's grants for the services a group runs: its JupyterLab token parameter, the
ECR repositories its container images and its jobs' images (`jobs.ecrRepositories`) come from, and
the parameters and secrets its containers' `secretEnv` names.
Only a group that asks for them gets them."""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.documents.services import Document

ECR_PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
"""What `docker pull` from a private repository needs once logged in (ECR user guide, "Private
repository policies" / "Amazon ECR managed policies": AmazonEC2ContainerRegistryPullOnly holds
these three and ecr:GetAuthorizationToken; read 2026-11-25)."""


def node_services_policy(
    *, token_parameter_arns: Sequence[str] = (), ecr_repository_arns: Sequence[str] = (),
    secret_statements: Sequence[Document] = ()
) -> Document | None:
    """None when the stack's groups need none of these (`secret_statements`:
    container_secret_statements). GetAuthorizationToken takes no resource
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
    statements += secret_statements
    if not statements:
        return None
    return {"Version": "2012-10-17", "Statement": statements}


def container_secret_statements(
    partition: str, region: str, account_id: str, *, parameter_names: Sequence[str] = (),
    secret_ids: Sequence[str] = ()
) -> list[Document]:
    """What reading the container services' `secretEnv` at container start needs: GetParameter on
    exactly the named SSM parameters, GetSecretValue on exactly the named secrets, and
    kms:Decrypt through those two services for those values only.

    The key is each value's own, which the stack does not know (any customer managed key of the
    account and region, or the AWS managed aws/ssm or aws/secretsmanager), so the decrypt names
    the account's keys but holds them to the service that asks (kms:ViaService) and to the named
    values by encryption context: Parameter Store decrypts a SecureString with the caller's
    credentials through ssm.<region>, its ARN as PARAMETER_ARN (KMS developer guide, "How AWS
    Systems Manager Parameter Store uses AWS KMS"); Secrets Manager decrypts a secret's data key
    with the caller's credentials through secretsmanager.<region>, its ARN as SecretARN (Secrets
    Manager user guide, "Secret encryption and decryption in AWS Secrets Manager": permissions for
    the KMS key, encryption context); both read 2026-11-28. A secret named without its ARN gets
    the `-??????` Secrets Manager appends to the name in the ARN (same guide, and "Permissions
    policy examples": wildcard for the suffix). A customer managed key's own policy must still let
    IAM policies of the account grant it (the default key policy does); the AWS managed keys let
    every principal of the account decrypt through their service."""
    parameters = sorted({secret_parameter_arn(partition, region, account_id, name) for name in parameter_names})
    secrets = sorted({secret_arn_pattern(partition, region, account_id, secret) for secret in secret_ids})
    keys = f"arn:{partition}:kms:{region}:{account_id}:key/*"
    statements: list[Document] = []
    if parameters:
        statements += [
            {"Sid": "ContainersReadNamedParameters", "Effect": "Allow", "Action": "ssm:GetParameter",
             "Resource": parameters},
            {"Sid": "DecryptNamedParametersThroughSsm", "Effect": "Allow", "Action": "kms:Decrypt", "Resource": keys,
             "Condition": {"StringEquals": {"kms:ViaService": f"ssm.{region}.amazonaws.com"},
                           "StringLike": {"kms:EncryptionContext:PARAMETER_ARN": parameters}}},
        ]
    if secrets:
        statements += [
            {"Sid": "ContainersReadNamedSecrets", "Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
             "Resource": secrets},
            {"Sid": "DecryptNamedSecretsThroughSecretsManager", "Effect": "Allow", "Action": "kms:Decrypt",
             "Resource": keys,
             "Condition": {"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"},
                           "StringLike": {"kms:EncryptionContext:SecretARN": secrets}}},
        ]
    return statements


def secret_parameter_arn(partition: str, region: str, account_id: str, name: str) -> str:
    """A parameter's ARN: `parameter/` then its name without the leading `/` a path name has."""
    return f"arn:{partition}:ssm:{region}:{account_id}:parameter/{name.lstrip('/')}"


def secret_arn_pattern(partition: str, region: str, account_id: str, secret: str) -> str:
    """A secret given by ARN stays as given; by name, its ARN with the six-character suffix as `??????`."""
    if secret.startswith("arn:"):
        return secret
    return f"arn:{partition}:secretsmanager:{region}:{account_id}:secret:{secret}-??????"
