"""IAM least privilege: identity, resource and managed policies, each document linted by parliament."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gpucloud.policy import iam_documents, iam_lint
from gpucloud.policy.model import PolicyConfig, Report
from gpucloud.policy.resource_types import (
    BUCKET,
    BUCKET_POLICY,
    BUCKET_V2,
    GROUP_POLICY_ATTACHMENT,
    GROUP_POLICY_ATTACHMENTS_EXCLUSIVE,
    IAM_GROUP_POLICY,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_USER_POLICY,
    KMS_KEY,
    POLICY_ATTACHMENT,
    QUEUE,
    QUEUE_POLICY,
    ROLE_POLICY_ATTACHMENT,
    ROLE_POLICY_ATTACHMENTS_EXCLUSIVE,
    TOPIC,
    TOPIC_POLICY,
    USER_POLICY_ATTACHMENT,
    USER_POLICY_ATTACHMENTS_EXCLUSIVE,
)
from gpucloud.policy.values import mappings, peek, peek_list

# ---------------------------------------------------------------- iam-least-privilege

_IDENTITY_POLICY_TYPES = (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY)
_RESOURCE_POLICY_TYPES = {BUCKET_POLICY: "bucket", TOPIC_POLICY: "topic", QUEUE_POLICY: "queue"}
_INLINE_RESOURCE_POLICY_TYPES = {BUCKET: "bucket", BUCKET_V2: "bucket", TOPIC: "topic", QUEUE: "queue"}
_POLICY_ARN_TYPES = (ROLE_POLICY_ATTACHMENT, USER_POLICY_ATTACHMENT, GROUP_POLICY_ATTACHMENT, POLICY_ATTACHMENT)
_POLICY_ARNS_TYPES = (
    ROLE_POLICY_ATTACHMENTS_EXCLUSIVE,
    USER_POLICY_ATTACHMENTS_EXCLUSIVE,
    GROUP_POLICY_ATTACHMENTS_EXCLUSIVE,
)
IAM_TYPES = frozenset(
    {KMS_KEY, IAM_ROLE, *_IDENTITY_POLICY_TYPES, *_RESOURCE_POLICY_TYPES, *_INLINE_RESOURCE_POLICY_TYPES}
    | {*_POLICY_ARN_TYPES, *_POLICY_ARNS_TYPES}
)

# AWS managed policies that grant administrator, IAM or whole-service access. Any AWS managed
# policy named *FullAccess grants a whole service (the managed form of "service:*").
BROAD_MANAGED_POLICIES = frozenset(
    {
        "AdministratorAccess",
        "PowerUserAccess",
        "IAMFullAccess",
        "ReadOnlyAccess",
        "AWSKeyManagementServicePowerUser",
        "job-function/SystemAdministrator",
        "job-function/NetworkAdministrator",
        "job-function/DatabaseAdministrator",
    }
)
_AWS_MANAGED_POLICY = re.compile(r"^arn:aws[a-z-]*:iam::aws:policy/(?P<name>.+)$")


def broad_managed_policy(policy_arn: Any) -> str | None:
    """The name of the AWS managed policy the ARN denotes when it is on the deny-list, else None."""
    match = _AWS_MANAGED_POLICY.match(policy_arn) if isinstance(policy_arn, str) else None
    if match is None:
        return None
    name = match["name"]
    leaf = name.rsplit("/", 1)[-1]
    if name in BROAD_MANAGED_POLICIES or leaf in BROAD_MANAGED_POLICIES or leaf.endswith("FullAccess"):
        return name
    return None


def attached_policy_arns(resource_type: str, props: Mapping[str, Any]) -> list[Any]:
    """Managed policy ARNs a resource attaches. An unknown ARN is a policy this stack creates (an
    AWS managed one is a known string), which this rule checks as a policy of its own."""
    if resource_type in _POLICY_ARN_TYPES:
        return [peek(props, "policyArn")]
    if resource_type in _POLICY_ARNS_TYPES:
        return peek_list(peek(props, "policyArns"))
    if resource_type == IAM_ROLE:
        return peek_list(peek(props, "managedPolicyArns"))
    return []


def identity_documents(resource_type: str, props: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(where, document) for each identity policy a resource holds: a policy resource's own, a role's
    inline ones (the plan's access check reads them too)."""
    if resource_type in _IDENTITY_POLICY_TYPES:
        return [("policy", props.get("policy"))]
    if resource_type == IAM_ROLE:  # assumeRolePolicy is a trust policy: exempt
        # Role outputs list an empty {name: "", policy: ""} when there is no inline policy.
        return [
            (f"inline policy {inline.get('name')!r}", inline.get("policy"))
            for inline in mappings(props.get("inlinePolicies"))
            if inline.get("policy") is not None
            and not (isinstance(inline.get("policy"), str) and not inline["policy"].strip())
        ]
    return []


def _identity_findings(document: Any) -> list[iam_lint.IamFinding] | None:
    """Parliament's findings on an identity policy with no plain-rule problem; None when it has one."""
    try:
        statements = iam_documents.parse_document(document)
    except iam_documents.InvalidPolicyDocument:
        return None
    if iam_documents.identity_policy_problems(statements):
        return None
    return iam_lint.lint_policy(document)


def _check_identity_document(where: str, document: Any, report: Report) -> None:
    try:
        statements = iam_documents.parse_document(document)
    except iam_documents.InvalidPolicyDocument as error:
        report(f"IAM {where} is {error}. Fix: build the document with json.dumps of a policy object.")
        return
    problems = iam_documents.identity_policy_problems(statements)
    for problem in problems:
        report(f"IAM {where}: {problem}. Fix: list the specific actions and resources the workload uses.")
    if problems:
        return  # parliament would only restate these at length; lint once they are fixed
    try:
        findings = iam_lint.lint_policy(document)
    except iam_lint.LinterUnavailableError as error:
        report(f"IAM {where} could not be linted: {error}.")
        return
    for same_issue in iam_lint.group_by_issue(finding for finding in findings if finding.counts):
        report(
            f"IAM {where}: parliament reports {iam_lint.summarize(same_issue)}. Fix: narrow the "
            "statement, or add a reviewed entry to gpucloud.policy.iam_lint.ACCEPTED_FINDINGS if AWS requires it."
        )


def accepted_iam_findings(resource_type: str, props: Mapping[str, Any]) -> list[tuple[str, iam_lint.IamFinding]]:
    """Medium-or-worse parliament findings that ACCEPTED_FINDINGS lets through, with the document they are in.

    They pass the gate, so the plan lists them for the reviewer together with the reason.
    """
    accepted = []
    for where, document in identity_documents(resource_type, props):
        if document is None:
            continue
        try:
            findings = _identity_findings(document) or []
        except iam_lint.LinterUnavailableError:
            continue  # the rule itself reports the document as not linted
        accepted += [(where, finding) for finding in findings if finding.accepted]
    return accepted


def _check_policy_document(
    label: str,
    document: Any,
    problems: Callable[[list[iam_documents.Statement]], list[str]],
    fix: str,
    report: Report,
) -> None:
    """Parse a key or resource policy and report each of its problems with the fix for that kind."""
    try:
        statements = iam_documents.parse_document(document)
    except iam_documents.InvalidPolicyDocument as error:
        report(f"{label} is {error}. Fix: build the document with json.dumps of a policy object.")
        return
    for problem in problems(statements):
        report(f"{label}: {problem}. Fix: {fix}")


def _check_resource_policy(kind: str, document: Any, report: Report) -> None:
    _check_policy_document(
        f"{kind.capitalize()} policy",
        document,
        iam_documents.resource_policy_problems,
        "grant named principals only the actions they use.",
        report,
    )


def validate_iam_least_privilege(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type == KMS_KEY:
        document = props.get("policy")
        if document is None:
            return  # AWS's default key policy: full control for the account root only
        _check_policy_document(
            "KMS key policy",
            document,
            iam_documents.key_policy_problems,
            "grant other principals only the kms actions they use.",
            report,
        )
        return
    if resource_type in _RESOURCE_POLICY_TYPES:
        kind = _RESOURCE_POLICY_TYPES[resource_type]
        document = props.get("policy")
        if document is None:
            report(f"{kind.capitalize()} policy document is missing. Fix: provide the policy document.")
        else:
            _check_resource_policy(kind, document, report)
        return
    if resource_type in _INLINE_RESOURCE_POLICY_TYPES:
        document = props.get("policy")
        if document is not None and not (isinstance(document, str) and not document.strip()):
            _check_resource_policy(_INLINE_RESOURCE_POLICY_TYPES[resource_type], document, report)
        return
    for policy_arn in attached_policy_arns(resource_type, props):
        name = broad_managed_policy(policy_arn)
        if name:
            report(
                f"Attaches the AWS managed policy {name} ({policy_arn}), which grants far more than a workload "
                "needs. Fix: attach a customer-managed policy listing the specific actions and resources."
            )
    for where, document in identity_documents(resource_type, props):
        if document is None:
            report(f"IAM {where} is missing. Fix: provide the policy document.")
            continue
        _check_identity_document(where, document, report)
