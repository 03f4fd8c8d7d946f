"""The account itself: whether the Auto Scaling service-linked role the project key names exists."""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups
from gpucloud.lookups.problems import Problems
from gpucloud.naming import AUTOSCALING_SERVICE, AUTOSCALING_SERVICE_ROLE


def service_linked_role_missing(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> bool:
    """The project key's policy names the Auto Scaling service-linked role (EBS encryption at launch
    needs it), and KMS refuses a key policy naming a principal that does not exist
    (https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html, `Policy`: "the
    principals in the key policy must exist and be visible to AWS KMS", read 2026-11-24). The role
    appears with an account's first Auto Scaling group, so a new account has none. Where it exists
    the stack never declares it: IAM refuses a second (CreateServiceLinkedRole answers "InvalidInput:
    Service role name AWSServiceRoleForAutoScaling has been taken in this account", as quoted in
    DataDog/pathfinding-labs issue 23; read 2026-11-25).
    Offline without account facts that say, it is not known: one line says so, nothing is declared,
    and the real `pulumi preview` looks it up in the real account."""
    exists = lookups.role_exists(AUTOSCALING_SERVICE_ROLE)
    if exists is None:
        then = ("`pulumi up` creates it where it is missing" if settings.config.account.create_service_linked_role
                else "with createServiceLinkedRole false a missing one stops `pulumi preview`")
        problems.warn("account.createServiceLinkedRole", f"not checked: whether the account has {AUTOSCALING_SERVICE_ROLE} "
                      f"is not known here (offline, give the plan account facts; `pulumi preview` looks it up); {then}")
        return False
    if exists:
        return False
    if not settings.config.account.create_service_linked_role:
        problems.add(
            "account.createServiceLinkedRole",
            f"is false and the account has no {AUTOSCALING_SERVICE_ROLE}, which the project key's policy "
            "names (KMS refuses a policy naming a role that does not exist): create it once with "
            f"`aws iam create-service-linked-role --aws-service-name {AUTOSCALING_SERVICE}`, "
            "or set account.createServiceLinkedRole: true (the default) to let the stack create it",
        )
    return True
