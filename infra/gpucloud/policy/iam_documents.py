"""Least-privilege checks on IAM policy documents, written out as plain rules.

Identity policies (attached to roles, users, groups) may not grant ``*`` or
``service:*``, may not use ``NotAction``/``NotResource`` with Allow, may not put
S3 or KMS actions on ``Resource: "*"``, and must scope S3 object actions to a key
prefix.  KMS key policies are resource policies: there ``Resource: "*"`` means
"this key", so only the ``kms:*``-to-the-account-root shape is enforced.  Resource
policies (bucket, topic, queue and key policies) may not grant ``*`` or ``service:*``
and may not open an Allow to every principal (``"*"``) unless a condition pins down
who calls (source or principal account, ARN, organization, VPC or IP).
Deny statements are never a problem.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .values import as_list, to_plain

_SERVICE_WILDCARD = re.compile(r"^[A-Za-z0-9-]+:\*$")
_S3_ARN = re.compile(r"^arn:aws[a-z-]*:s3:::(?P<path>.+)$")
_ARN = re.compile(r"^arn:[^:]*:(?P<service>[^:]*):[^:]*:[^:]*:(?P<resource>.*)$")
_ACCOUNT_ROOT = re.compile(r"^(arn:aws[a-z-]*:iam::\d{12}:root|\d{12})$")
_WILDCARDS = set("*?")

# S3 actions that act on objects (matched against wildcard actions such as s3:Get*).
_S3_OBJECT_ACTIONS = tuple(
    name.lower()
    for name in (
        "AbortMultipartUpload",
        "DeleteObject",
        "DeleteObjectTagging",
        "DeleteObjectVersion",
        "DeleteObjectVersionTagging",
        "GetObject",
        "GetObjectAcl",
        "GetObjectAttributes",
        "GetObjectLegalHold",
        "GetObjectRetention",
        "GetObjectTagging",
        "GetObjectTorrent",
        "GetObjectVersion",
        "GetObjectVersionAcl",
        "GetObjectVersionAttributes",
        "GetObjectVersionTagging",
        "ListMultipartUploadParts",
        "PutObject",
        "PutObjectAcl",
        "PutObjectLegalHold",
        "PutObjectRetention",
        "PutObjectTagging",
        "PutObjectVersionAcl",
        "PutObjectVersionTagging",
        "ReplicateDelete",
        "ReplicateObject",
        "RestoreObject",
    )
)


class InvalidPolicyDocument(ValueError):
    """The document is not a JSON object with statements."""


@dataclass(frozen=True)
class Statement:
    sid: str
    allow: bool
    actions: tuple[str, ...]
    not_actions: bool
    resources: tuple[str, ...]
    not_resources: bool
    principals: tuple[str, ...]
    """Every principal as a string; "*" for anyone, "Service:..."/"Federated:..." for non-AWS ones."""
    not_principal: bool
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    """(operator, lower-case key, values) for each condition."""


def parse_document(document: Any) -> list[Statement]:
    """Statements of a policy given as a JSON string or a mapping; raises InvalidPolicyDocument."""
    if isinstance(document, Mapping):
        body = to_plain(document)
    elif isinstance(document, str):
        try:
            body = json.loads(document)
        except json.JSONDecodeError as error:
            raise InvalidPolicyDocument(f"not valid JSON ({error.msg} at line {error.lineno})") from error
    else:
        raise InvalidPolicyDocument(f"expected a JSON string or an object, got {type(document).__name__}")
    if not isinstance(body, dict) or "Statement" not in body:
        raise InvalidPolicyDocument("not a policy: no top-level Statement")
    statements = []
    for index, raw in enumerate(as_list(body["Statement"])):
        if not isinstance(raw, dict):
            raise InvalidPolicyDocument(f"statement {index} is not an object")
        statements.append(_statement(index, raw))
    return statements


def _statement(index: int, raw: dict[str, Any]) -> Statement:
    principal_key = "NotPrincipal" if "NotPrincipal" in raw else "Principal"
    return Statement(
        sid=str(raw.get("Sid") or f"#{index}"),
        allow=str(raw.get("Effect", "")).lower() == "allow",
        actions=tuple(str(action) for action in as_list(raw.get("Action", raw.get("NotAction")))),
        not_actions="NotAction" in raw,
        resources=tuple(str(resource) for resource in as_list(raw.get("Resource", raw.get("NotResource")))),
        not_resources="NotResource" in raw,
        principals=_principals(raw.get(principal_key)),
        not_principal=principal_key == "NotPrincipal",
        conditions=_conditions(raw.get("Condition")),
    )


def _conditions(raw: Any) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple(
        (str(operator), str(key).lower(), tuple(str(value) for value in as_list(values)))
        for operator, keys in raw.items()
        if isinstance(keys, dict)
        for key, values in keys.items()
    )


def _principals(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    principals: list[str] = []
    if isinstance(raw, dict):
        for kind, values in raw.items():
            for value in as_list(values):
                principals.append(str(value) if kind == "AWS" else f"{kind}:{value}")
    return tuple(principals)


def _service(action: str) -> str:
    return action.split(":", 1)[0].lower() if ":" in action else ""


def _is_unscoped(resource: str) -> bool:
    """``*`` or an ARN whose resource part is only wildcards (``arn:aws:s3:::*``, ``key/*``)."""
    if resource == "*":
        return True
    match = _ARN.match(resource)
    if match is None:
        return False
    resource_part = match["resource"]
    leaf = resource_part.split("/", 1)[1] if re.match(r"^(key|alias)/", resource_part) else resource_part
    return bool(leaf) and set(leaf) <= _WILDCARDS | {"/"}


def _is_s3_object_action(action: str) -> bool:
    if _service(action) != "s3":
        return False
    pattern = action.split(":", 1)[1].lower()
    return any(fnmatch.fnmatchcase(name, pattern) for name in _S3_OBJECT_ACTIONS)


def _reaches_objects(resource: str) -> bool:
    """Whether an S3 resource can match object ARNs (bucket/key), e.g. ``bucket/*`` or ``bucket*``."""
    match = _S3_ARN.match(resource)
    if match is None:
        return False
    bucket, _, _ = match["path"].partition("/")
    return "/" in match["path"] or bool(set(bucket) & _WILDCARDS)


def _is_prefix_scoped(resource: str) -> bool:
    """``arn:aws:s3:::bucket/some/prefix...``: a literal bucket and a key starting with text."""
    match = _S3_ARN.match(resource)
    if match is None:
        return False
    bucket, slash, key = match["path"].partition("/")
    return bool(bucket) and not set(bucket) & _WILDCARDS and bool(slash) and bool(key) and key[0] not in _WILDCARDS


def _decrypt_held_to_named_values(statement: Statement) -> bool:
    """kms:Decrypt alone on the account's keys (`key/*`), held by condition to one service that
    decrypts for the caller (kms:ViaService) and to named values by their encryption context: what
    reading a parameter or secret whose key the stack does not know needs (documents.node_services.
    container_secret_statements). KMS developer guide, "AWS KMS condition keys": kms:ViaService lets
    a permission be used only in requests a named service makes for the caller, and
    kms:EncryptionContext:<context-key> only with a particular encryption context (read 2026-11-28)."""
    if statement.actions != ("kms:Decrypt",) or not all(_ARN.match(r) for r in statement.resources):
        return False
    keys = {key: values for _operator, key, values in statement.conditions}
    via = keys.get("kms:viaservice", ())
    context = [values for key, values in keys.items() if key.startswith("kms:encryptioncontext:")]
    return (bool(via) and not any(set(value) & _WILDCARDS for value in via)
            and bool(context) and all(values and all(value.startswith("arn:") for value in values) for values in context))


def _not_action_problem(where: str) -> str:
    return f"{where} uses NotAction with Allow, which grants every action not listed"


def _wildcard_action_problems(statement: Statement, where: str) -> list[str]:
    """One sentence per action that grants everything, or everything of one service."""
    problems = []
    for action in statement.actions:
        if action == "*":
            problems.append(f"{where} grants every action ('*')")
        elif _SERVICE_WILDCARD.match(action):
            problems.append(f"{where} grants every {_service(action)} action ({action!r})")
    return problems


def identity_policy_problems(statements: list[Statement]) -> list[str]:
    """What an identity policy grants beyond least privilege, one sentence per problem."""
    problems: list[str] = []
    for statement in statements:
        if not statement.allow:
            continue
        where = f"statement {statement.sid}"
        if statement.not_actions:
            problems.append(_not_action_problem(where))
        if statement.not_resources:
            problems.append(f"{where} uses NotResource with Allow, which grants every resource not listed")
        if statement.not_actions:
            continue
        problems.extend(_wildcard_action_problems(statement, where))
        if statement.not_resources:
            continue
        storage_actions = [action for action in statement.actions if _service(action) in ("s3", "kms")]
        unscoped = [resource for resource in statement.resources if _is_unscoped(resource)]
        if storage_actions and unscoped and not _decrypt_held_to_named_values(statement):
            problems.append(
                f"{where} grants {', '.join(storage_actions)} on {', '.join(repr(r) for r in unscoped)}; "
                "S3 and KMS actions must name bucket/prefix or key ARNs"
            )
        object_actions = [action for action in statement.actions if _is_s3_object_action(action)]
        loose = [
            resource
            for resource in statement.resources
            if not _is_unscoped(resource) and _reaches_objects(resource) and not _is_prefix_scoped(resource)
        ]
        if object_actions and loose:
            problems.append(
                f"{where} grants {', '.join(object_actions)} on {', '.join(repr(r) for r in loose)}, "
                "which is not scoped to a key prefix (use arn:aws:s3:::BUCKET/PREFIX/*)"
            )
    return problems


def key_policy_problems(statements: list[Statement]) -> list[str]:
    """What a KMS key policy grants too broadly: full control to anyone but the account root."""
    problems: list[str] = []
    for statement in statements:
        if not statement.allow:
            continue
        where = f"statement {statement.sid}"
        problems.extend(_open_to_everyone(statement))
        if statement.not_principal:
            continue
        if statement.not_actions:
            problems.append(_not_action_problem(where))
            continue
        full_control = [action for action in statement.actions if action == "*" or action.lower() == "kms:*"]
        others = [principal for principal in statement.principals if not _ACCOUNT_ROOT.match(principal)]
        if full_control and (others or not statement.principals):
            granted_to = ", ".join(others) if others else "an unspecified principal"
            problems.append(
                f"{where} grants {full_control[0]!r} to {granted_to}; only the account root "
                "(arn:aws:iam::ACCOUNT:root) may hold full control of the key"
            )
    return problems


# Condition keys that pin down who may call, so an Allow to Principal "*" is not open to everyone.
_CALLER_CONDITION_KEYS = frozenset(
    {
        "aws:sourceaccount",
        "aws:sourcearn",
        "aws:sourceowner",
        "aws:sourceorgid",
        "aws:sourceorgpaths",
        "aws:sourcevpc",
        "aws:sourcevpce",
        "aws:sourceip",
        "aws:principalaccount",
        "aws:principalarn",
        "aws:principalorgid",
        "aws:principalorgpaths",
        "aws:principalservicename",
        "kms:calleraccount",
    }
)


def _restricts_caller(statement: Statement) -> bool:
    """A positive condition (not Not*, not ...IfExists, no bare wildcard value) on a caller key."""
    return any(
        key in _CALLER_CONDITION_KEYS
        and "not" not in operator.lower()
        and not operator.lower().endswith("ifexists")
        and operator.lower() != "null"
        and values
        and not any(set(value) <= _WILDCARDS for value in values)
        for operator, key, values in statement.conditions
    )


def _wildcard_principal(statement: Statement) -> bool:
    return "*" in statement.principals


def _open_to_everyone(statement: Statement) -> list[str]:
    if statement.not_principal:
        return [f"statement {statement.sid} uses NotPrincipal with Allow, which grants everyone not listed"]
    if _wildcard_principal(statement) and not _restricts_caller(statement):
        return [
            f"statement {statement.sid} allows every principal ('*') with no condition on the caller; "
            "name the principals, or add a condition such as aws:SourceAccount, aws:SourceArn or aws:PrincipalOrgID"
        ]
    return []


def resource_policy_problems(statements: list[Statement]) -> list[str]:
    """What a bucket, topic or queue policy grants too broadly, one sentence per problem."""
    problems: list[str] = []
    for statement in statements:
        if not statement.allow:
            continue
        where = f"statement {statement.sid}"
        problems.extend(_open_to_everyone(statement))
        if statement.not_actions:
            problems.append(_not_action_problem(where))
            continue
        problems.extend(_wildcard_action_problems(statement, where))
    return problems
