"""Names of what a stack creates that AWS wants unique, and the ARNs other documents must name
before the thing exists."""

from __future__ import annotations


def instance_role_name(project: str) -> str:
    """The node role's fixed name, so the key policy can name it before the role exists."""
    return f"gpu-cloud-{project}-node"


def backup_role_name(project: str) -> str:
    return f"gpu-cloud-{project}-backup"


def role_arn(partition: str, account_id: str, name: str) -> str:
    return f"arn:{partition}:iam::{account_id}:role/{name}"


def autoscaling_service_role_arn(partition: str, account_id: str) -> str:
    return (
        f"arn:{partition}:iam::{account_id}:role/aws-service-role/autoscaling.amazonaws.com/"
        "AWSServiceRoleForAutoScaling"
    )


def autoscaling_group_name(project: str, group: str) -> str:
    return f"gpu-cloud-{project}-{group}"
