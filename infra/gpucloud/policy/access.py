"""Would AWS allow this call? One call (actor, action, resource, request context, the VPC endpoint it
passes) evaluated against the identity, resource, key and endpoint policies the plan holds, as AWS
documents it (IAM user guide "Policy evaluation logic", "IAM JSON policy elements: Condition
operators", "Single-valued vs. multivalued context keys"; KMS developer guide "Key policies in AWS
KMS" and "Determining access to an AWS KMS key"; VPC user guide "Control access to VPC endpoints
using endpoint policies"; all read 2026-11-28):

- an explicit Deny in any policy that applies wins;
- a call that passes a VPC endpoint with a policy must also be allowed by that policy;
- on a KMS key the key policy must allow the call: naming the principal (or everyone) is enough,
  naming the account root delegates to IAM, so an identity policy must allow it too;
- on anything else in the account an identity-policy allow or a resource-policy allow that names
  the principal (or everyone) is enough; one naming only the account root needs the identity allow;
- an AWS service principal has no identity policy: only a resource policy can allow it;
- a principal of another account needs both: the resource's policy (naming it or its account) and
  its own identity policy, which lives in its account, outside the plan, unless the plan holds it;
- the deployer's identity policy is not the stack's, nor is a person's (`person:<who>`) unless the
  plan names a role for them: it is taken as allowing (each reason says so), and only the resource
  side (key, resource and endpoint policies) is evaluated.
- an anonymous call (`anonymous`: an unsigned download from an AWS public bucket) has no identity
  and reaches a resource whose policy is AWS's: only the VPC endpoint's policy decides it, where
  a statement naming everyone (`*`) without a condition on the caller's account admits it;
- policy variables (`${aws:userid}`) take the request's values, and a statement with one the
  request cannot resolve matches nothing (`gpucloud.policy.policy_variables`).

Kept libraries were read and not used: principalmapper's local_policy_simulation is AGPL-3.0 and
makes StringNotLike false on a missing key (AWS makes a negated operator true there); moto's IAM
access control checks StringEquals only and turns an unmet condition into a deny.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .iam_documents import InvalidPolicyDocument, Statement, parse_document
from .access_conditions import UnsupportedOperator, condition, glob
from .policy_variables import Pattern, UnresolvedVariable, has_variables, resolve, resolve_resource

DEPLOYER = "deployer"
PERSON = "person:"
ANONYMOUS = "anonymous"
"""An unsigned request (a public download): no identity and no account; the resource's own policy,
AWS's public bucket's, is outside the plan."""


@dataclass(frozen=True)
class Call:
    """One AWS call, placeholders filled."""

    actor: str
    principal: str
    """A role ARN, a service principal (`fsx.amazonaws.com`), `deployer`, or `person:<who>` (a person
    whose identity policy the plan does not hold)."""
    action: str
    resource: str
    context: Mapping[str, str | Sequence[str]]
    endpoint: str | None


@dataclass(frozen=True)
class Documents:
    """The policies a plan holds. A document's `Id`, when it has one, names it in reasons."""

    identity: Mapping[str, Sequence[dict]]
    """Principal ARN -> its identity policies (inline and attached managed)."""
    resource: Sequence[tuple[str, dict]]
    """(ARN or ARN pattern the policy sits on, policy): key, bucket, topic policies. A policy on a
    bucket also covers its objects (`<bucket ARN>/...`)."""
    endpoints: Mapping[str, dict]
    """VPC endpoint service (`s3`, `ssm`) -> its policy; a service absent has AWS's full-access default."""
    account: str


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


@dataclass(frozen=True)
class _Policy:
    kind: str
    """identity, resource, key or endpoint."""
    name: str
    statements: tuple[Statement, ...]
    variables: bool = True
    """Whether `${...}` are policy variables (a `2012-10-17` document) or plain text."""


_KMS_KEY = re.compile(r"^arn:[^:]+:kms:[^:]*:[^:]*:key/")
_ACCOUNT_ROOT = re.compile(r"^(?:arn:[^:]+:iam::(\d{12}):root|(\d{12}))$")
_ARN_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:(\d{12}):")
_IAM_USER = re.compile(r"^arn:[^:]+:iam::\d{12}:user/(?:.*/)?(?P<name>[^/]+)$")


def evaluate(call: Call, documents: Documents) -> Decision:
    """Whether AWS allows the call, and the statement that decides it (or what lacks one)."""
    try:
        return _evaluate(call, documents)
    except InvalidPolicyDocument as error:
        return Decision(False, f"cannot evaluate: a policy is {error}")
    except UnsupportedOperator as error:
        return Decision(False, f"cannot evaluate: {error}")


def _evaluate(call: Call, documents: Documents) -> Decision:
    context = request_context(call, documents.account)
    is_key = call.action.lower().startswith("kms:") and bool(_KMS_KEY.match(call.resource))
    identity = [_policy("identity", f"identity policy {index} of {call.principal}", document)
                for index, document in enumerate(documents.identity.get(call.principal, ()))]
    on_resource = [_policy("key" if is_key else "resource", f"policy on {pattern}", document)
                   for pattern, document in documents.resource if _covers(pattern, call.resource)]
    endpoint = documents.endpoints.get(call.endpoint) if call.endpoint else None
    filters = [_policy("endpoint", f"{call.endpoint} endpoint policy", endpoint)] if endpoint is not None else []
    for policy in identity + on_resource + filters:
        for statement in policy.statements:
            if not statement.allow and _applies(statement, policy, call, context, documents.account):
                return Decision(False, f"denied by {policy.name}:{statement.sid}")
    for policy in filters:
        if not _allows(policy, call, context, documents.account):
            return Decision(False, f"no statement of the {policy.name} allows {call.action} on {call.resource}")
    identity_allow = _first_allow(identity, call, context, documents.account)
    if call.principal == ANONYMOUS:
        identity_allow = "the public resource's own policy (not in the plan, taken as allowing an anonymous call)"
    elif _outside(call.principal):
        who = "the deployer" if call.principal == DEPLOYER else call.principal
        identity_allow = f"{who}'s own identity policy (not in the plan, taken as allowing)"
    foreign = _foreign(call.principal, documents.account)
    if foreign and call.principal not in documents.identity:
        identity_allow = f"{call.principal}'s identity policy in its own account {foreign} (not in the plan, taken as allowing)"
    if is_key:
        return _key_decision(call, on_resource, identity_allow, context, documents.account, bool(foreign))
    grants = _resource_grants(on_resource, call, context, documents.account)
    if foreign:
        return _cross_account_decision(call, grants, identity_allow, foreign)
    direct = [name for name, grant in grants if grant == "direct"]
    if identity_allow or direct:
        return Decision(True, f"allowed by {identity_allow or direct[0]}")
    if _is_service(call.principal):
        return Decision(False, f"no resource policy allows {call.principal} {call.action} on {call.resource}"
                               + ("" if on_resource else " (the resource has none in the plan)"))
    looked = ", ".join(policy.name for policy in identity + on_resource) or f"no policy of {call.principal}"
    return Decision(False, f"no statement allows {call.action} on {call.resource} in {looked}")


def _cross_account_decision(call: Call, grants: list[tuple[str, str]], identity_allow: str | None,
                            foreign: str) -> Decision:
    """A principal of another account: the resource's policy must allow it (naming it, or its
    account, which hands the decision to that account's IAM), and its own identity policy too
    (IAM user guide, "Cross-account policy evaluation logic"; read 2026-11-28)."""
    if not grants:
        return Decision(False, f"{call.principal} is of account {foreign}: no resource policy on {call.resource} "
                               f"allows it {call.action}, and its identity policy alone cannot")
    if not identity_allow:
        return Decision(False, f"{grants[0][0]} lets account {foreign} in, and no identity policy of {call.principal} "
                               f"allows {call.action} on {call.resource}")
    return Decision(True, f"allowed by {grants[0][0]} and {identity_allow}")


def _key_decision(call: Call, key_policies: list[_Policy], identity_allow: str | None,
                  context: Mapping[str, list[str]], account: str, foreign: bool = False) -> Decision:
    """KMS: without a key policy allowing it, no identity policy can give access to a key; a
    principal of another account needs its own account's IAM policy as well (KMS developer guide,
    "Allowing users in other accounts to use a KMS key"; read 2026-11-28)."""
    if not key_policies:
        return Decision(False, f"no key policy for {call.resource} in the plan")
    grants = _resource_grants(key_policies, call, context, account)
    direct = [name for name, grant in grants if grant == "direct"]
    if direct and foreign:
        return _cross_account_decision(call, grants, identity_allow, _principal_account(call.principal, account) or "")
    if direct:
        return Decision(True, f"allowed by {direct[0]}")
    delegated = [name for name, grant in grants if grant == "account"]
    if delegated and identity_allow:
        return Decision(True, f"allowed by {identity_allow}, as {delegated[0]} delegates to IAM")
    if delegated:
        return Decision(False, f"{delegated[0]} lets IAM policies grant {call.action}, and no identity policy "
                               f"of {call.principal} allows it on {call.resource}")
    return Decision(False, f"no statement of {key_policies[0].name} allows {call.principal} {call.action}")


def _policy(kind: str, name: str, document: dict) -> _Policy:
    named = document.get("Id") if isinstance(document, Mapping) else None
    return _Policy(kind, str(named or name), _statements(document), has_variables(document))


_PARSED: OrderedDict[int, tuple[Any, tuple[Statement, ...]]] = OrderedDict()


def _statements(document: Any) -> tuple[Statement, ...]:
    """The document's statements, parsed once while the same object is evaluated call after call
    (a plan checks hundreds of calls against a few documents)."""
    held = _PARSED.get(id(document))
    if held is not None and held[0] is document:
        _PARSED.move_to_end(id(document))
        return held[1]
    statements = tuple(parse_document(document))
    _PARSED[id(document)] = (document, statements)
    if len(_PARSED) > 256:
        _PARSED.popitem(last=False)
    return statements


def _first_allow(policies: list[_Policy], call: Call, context: Mapping[str, list[str]], account: str) -> str | None:
    for policy in policies:
        for statement in policy.statements:
            if statement.allow and _applies(statement, policy, call, context, account):
                return f"{policy.name}:{statement.sid}"
    return None


def _allows(policy: _Policy, call: Call, context: Mapping[str, list[str]], account: str) -> bool:
    return _first_allow([policy], call, context, account) is not None


def _resource_grants(policies: list[_Policy], call: Call, context: Mapping[str, list[str]],
                     account: str) -> list[tuple[str, str]]:
    """(policy:Sid, "direct" or "account") for each allow statement of a resource policy that applies."""
    return [
        (f"{policy.name}:{statement.sid}", grant)
        for policy in policies
        for statement in policy.statements
        if statement.allow and _applies(statement, policy, call, context, account)
        and (grant := _principal_grant(statement, call.principal, account)) is not None
    ]


def _applies(statement: Statement, policy: _Policy, call: Call, context: Mapping[str, list[str]], account: str) -> bool:
    """The statement's principal (outside identity policies), action, resource and conditions all
    match; a policy variable the request cannot resolve makes it match nothing."""
    if policy.kind != "identity" and _principal_grant(statement, call.principal, account) is None:
        return False
    bound = (lambda text: resolve(text, context)) if policy.variables else None
    try:
        resources = [resolve_resource(pattern, context) if bound else pattern for pattern in statement.resources]
        conditions = [(operator, key, _bound_values(operator, values, bound)) for operator, key, values in statement.conditions]
    except UnresolvedVariable:
        return False
    return (_listed(statement.actions, statement.not_actions, lambda pattern: action_matches(pattern, call.action))
            and _listed(resources, statement.not_resources, lambda pattern: glob(pattern, call.resource))
            and all(condition(operator, key, values, context) for operator, key, values in conditions))


def _bound_values(operator: str, values: tuple[str, ...], bound) -> tuple[Pattern, ...]:
    """Variables count in the values of string and ARN operators only ("Condition element")."""
    base = operator.rpartition(":")[2]
    if bound is None or not base.startswith(("String", "Arn")):
        return values
    return tuple(bound(value) for value in values)


def _listed(patterns: tuple[str, ...], negated: bool, matches) -> bool:
    found = any(matches(pattern) for pattern in patterns)
    return not found if negated else found


def action_matches(pattern: str, action: str) -> bool:
    """Action names are not case-sensitive ("IAM JSON policy elements: Action")."""
    return glob(pattern.lower(), action.lower())


def _principal_grant(statement: Statement, principal: str, account: str) -> str | None:
    """How a resource-side statement names the principal: "direct" (the principal itself, or
    everyone), "account" (its account's root, which delegates to IAM), or None."""
    grant = None
    for named in statement.principals:
        found = _names(named, principal, account)
        if found == "direct":
            grant = "direct"
            break
        grant = grant or found
    if statement.not_principal:
        return None if grant else "direct"
    return grant


def _names(named: str, principal: str, account: str) -> str | None:
    if named == "*" or named == principal:
        return "direct"
    if _is_service(principal):
        return "direct" if named == f"Service:{principal}" else None
    root = _ACCOUNT_ROOT.match(named)
    if root and (root.group(1) or root.group(2)) == _principal_account(principal, account):
        return "account"
    return None


def _outside(principal: str) -> bool:
    """A principal whose identity policies live outside the plan: the deployer, a person; and an
    anonymous call, which has none."""
    return principal in (DEPLOYER, ANONYMOUS) or principal.startswith(PERSON)


def _foreign(principal: str, account: str) -> str | None:
    """The account of a signed principal of another account than the plan's, else None."""
    if _outside(principal) or _is_service(principal):
        return None
    found = _principal_account(principal, account)
    return found if found and found != account else None


def _is_service(principal: str) -> bool:
    return not _outside(principal) and not principal.startswith("arn:")


def _principal_account(principal: str, account: str) -> str | None:
    if principal == ANONYMOUS:
        return None
    if _outside(principal):
        return account
    found = _ARN_ACCOUNT.match(principal)
    return found.group(1) if found else None


def _covers(pattern: str, resource: str) -> bool:
    """A policy on `pattern` covers the resource itself and what lies under it (a bucket's objects)."""
    return glob(pattern, resource) or resource.startswith(pattern + "/")


def request_context(call: Call, account: str) -> dict[str, list[str]]:
    """The call's context (keys lower-cased; AWS compares key names without case), with the keys
    AWS sets on every request of such a principal when the call does not give them ("AWS global
    condition context keys": aws:PrincipalArn and aws:PrincipalAccount for a signed request,
    aws:PrincipalServiceName for a service principal, aws:SecureTransport, aws:username (an IAM
    user's friendly name, the last part of its ARN) for an IAM user only; KMS "Condition keys for
    AWS KMS": kms:CallerAccount)."""
    context: dict[str, list[str]] = {"aws:securetransport": ["true"]}
    if _is_service(call.principal):
        context["aws:principalservicename"] = [call.principal]
    else:
        caller_account = _principal_account(call.principal, account)
        if caller_account:
            context["aws:principalaccount"] = [caller_account]
            if call.action.lower().startswith("kms:"):
                context["kms:calleraccount"] = [caller_account]
        if not _outside(call.principal):
            context["aws:principalarn"] = [call.principal]
        user = _IAM_USER.match(call.principal)
        if user:
            context["aws:username"] = [user["name"]]
    for key, value in call.context.items():
        context[key.lower()] = [value] if isinstance(value, str) else [str(item) for item in value]
    return context
