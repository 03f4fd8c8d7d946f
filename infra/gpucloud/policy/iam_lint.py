"""Lint IAM identity-policy documents with parliament (duo-labs/parliament).

``lint_policy`` runs parliament with its community auditors (privilege escalation,
credentials exposure, permissions management) and returns every finding with
parliament's severity.  ``has_medium_or_worse`` is the gate: any MEDIUM, HIGH or
CRITICAL finding counts unless ``ACCEPTED_FINDINGS`` names its issue and all of
its actions.

Parliament quirks worth knowing (parliament 1.6.4):

* Its IAM database is frozen at its release, so newer actions raise
  UNKNOWN_ACTION, and ``Resource: "*"`` on actions that need it raises
  RESOURCE_STAR.  Both are LOW in its config, so they never count here and need
  no allow-list entry; the S3/KMS ``"*"`` ban lives in ``iam_documents`` instead.
* It does not flag ``Action: "*"`` at all on its own; the community auditors do
  (privilege escalation, permissions management), and ``iam_documents`` bans it
  outright.
* ``analyze_policy_string`` leaves ``Finding.severity`` empty (its CLI fills it
  in from config.yaml); severities are read here from the same files without
  touching parliament's global config.
* It imports ``pkg_resources`` (gone from setuptools 82) just to find its data
  files; ``_parliament`` answers that from importlib.resources while it imports.
* ``statement.get_privilege_info`` scans every service's privileges for each
  action it checks, and a statement on ``"*"`` checks all 19,050 of them;
  ``_parliament`` puts a lookup through an index of it, built a service prefix
  at a time, in its place.
* ``Policy.get_references`` walks every statement for each privilege it is asked
  about, and the auditors ask about every allowed privilege again, four times
  per lint; ``_parliament`` has each policy remember its answers.
* Resource policies (KMS key policies) are not linted here: the default key
  policy's ``kms:*`` for the account root is a PERMISSIONS_MANAGEMENT finding by
  design.  ``iam_documents.key_policy_problems`` checks those.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import json
import sys
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .values import to_plain

SEVERITY_ORDER = ("MUTE", "INFO", "LOW", "MEDIUM", "HIGH", "CRITICAL")


@dataclass(frozen=True)
class AcceptedFinding:
    """A parliament finding we accept when all of its actions are in ``actions``."""

    issue: str
    actions: frozenset[str]
    reason: str


ACCEPTED_FINDINGS: tuple[AcceptedFinding, ...] = (
    AcceptedFinding(
        issue="CREDENTIALS_EXPOSURE",
        actions=frozenset({"ecr:getauthorizationtoken"}),
        reason=(
            "GPU nodes pull their images from ECR. The registry token it returns is "
            "short-lived and only reaches repositories the role's other ECR permissions "
            "allow; the action has no resource-level permissions."
        ),
    ),
    AcceptedFinding(
        issue="PERMISSIONS_MANAGEMENT_ACTIONS",
        actions=frozenset({"kms:creategrant"}),
        reason=(
            "Attaching or launching CMK-encrypted EBS volumes requires the caller to "
            "create a grant for EC2 on the key (AWS: 'kms:CreateGrant with "
            "kms:GrantIsForAWSResource'); iam_documents still bans it on Resource '*'."
        ),
    ),
    AcceptedFinding(
        issue="PERMISSIONS_MANAGEMENT_ACTIONS",
        actions=frozenset({"logs:putresourcepolicy"}),
        reason=(
            "A Step Functions state machine that logs to CloudWatch Logs needs its role to hold "
            "logs:PutResourcePolicy (Step Functions developer guide, 'Using CloudWatch Logs to log "
            "execution history in Step Functions', read 2026-11-28); the job supervisor's role."
        ),
    ),
)


@dataclass(frozen=True)
class IamFinding:
    """One parliament finding, with its severity and, when accepted, why."""

    issue: str
    severity: str
    title: str
    detail: str
    actions: frozenset[str]
    accepted_reason: str | None = None

    @property
    def counts(self) -> bool:
        """MEDIUM or worse and not on the accepted list."""
        return self.accepted_reason is None and _rank(self.severity) >= _rank("MEDIUM")

    @property
    def accepted(self) -> bool:
        """MEDIUM or worse and let through by ACCEPTED_FINDINGS (the plan lists these for reviewers)."""
        return self.accepted_reason is not None and _rank(self.severity) >= _rank("MEDIUM")

    def describe(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.issue} ({self.severity}) {self.title}{detail}{_action_list(self.actions)}"


class LinterUnavailableError(RuntimeError):
    """parliament cannot be imported; the IAM gate must not pass silently."""


def _rank(severity: str) -> int:
    try:
        return SEVERITY_ORDER.index(severity.upper())
    except ValueError:
        return SEVERITY_ORDER.index("CRITICAL")  # an unknown severity is treated as the worst


@functools.lru_cache(maxsize=1)
def _parliament() -> Any:
    try:
        with warnings.catch_warnings(), _resource_files_for_parliament():
            warnings.simplefilter("ignore")  # parliament leaves its data files open
            import parliament
            import parliament.policy
            import parliament.statement
    except ImportError as error:
        raise LinterUnavailableError(
            f"parliament is not importable ({error}); install gpucloud's policy extra: pip install 'gpucloud[policy]'"
        ) from error
    scan = getattr(parliament.statement, "get_privilege_info", None)
    if scan is not None and not hasattr(scan, "scan"):
        parliament.statement.get_privilege_info = _indexed_privilege_info(parliament.iam_definition, scan)
    policy_class = getattr(getattr(parliament, "policy", None), "Policy", None)
    walk = getattr(policy_class, "get_references", None)
    if walk is not None and not hasattr(walk, "walk"):
        policy_class.get_references = _remembered_references(walk)
    return parliament


def _remembered_references(walk: Any) -> Any:
    """parliament's `Policy.get_references(prefix, privilege)`, remembered by each policy for as
    long as its statements are the same objects. The statements that name a privilege, and on which
    resources, depend on nothing else, and parliament only reads the answer. Its auditors ask for
    every privilege the policy allows, one pass each (`get_allowed_actions`): the instance role's
    policy of an example stack took 24 to 39 ms to lint, 11 to 17 ms remembered; a Deny on `"*"`
    beside `s3:*`, `ec2:*` and `iam:PassRole` on `"*"`, 3.9 to 4.8 s, 1.2 s remembered (2026-11-27)."""

    def get_references(self: Any, privilege_prefix: str, privilege_name: str) -> dict:
        statements = tuple(map(id, self.statements))
        remembered = self.__dict__.get("_gpucloud_references")
        if remembered is None or remembered[0] != statements:
            remembered = self._gpucloud_references = (statements, {})
        key = (privilege_prefix, privilege_name)
        if key not in remembered[1]:
            remembered[1][key] = walk(self, privilege_prefix, privilege_name)
        return remembered[1][key]

    get_references.walk = walk  # type: ignore[attr-defined]
    return get_references


def _indexed_privilege_info(iam_definition: list[dict], scan: Any) -> Any:
    """parliament's `get_privilege_info(service, action)`, answered from an index of its IAM
    database instead of a scan of it: a policy with a statement on `"*"` (a Deny on everything
    over plain HTTP, say) made 73,594 scans and took 2.6 s to lint. It returns the same object
    the scan finds, the first in the database's order (some prefixes have two services, and 631
    privileges appear under both), with the same two keys added; an unknown action goes to the
    scan, which raises parliament's own error. A prefix is indexed when first asked for: the
    whole database takes 17 to 58 ms, and a plan's documents name a handful of services."""
    by_prefix: dict[str, dict[str, tuple[dict, dict]]] = {}

    def privileges_of(prefix: str) -> dict[str, tuple[dict, dict]]:
        if prefix not in by_prefix:
            index: dict[str, tuple[dict, dict]] = {}
            for service in iam_definition:
                if service["prefix"] == prefix:
                    for privilege in service["privileges"]:
                        index.setdefault(privilege["privilege"], (service, privilege))
            by_prefix[prefix] = index
        return by_prefix[prefix]

    def get_privilege_info(service: str, action: str) -> dict:
        found = privileges_of(service).get(action)
        if found is None:
            return scan(service, action)
        service_info, privilege_info = found
        privilege_info["service_resources"] = service_info["resources"]
        privilege_info["service_conditions"] = service_info["conditions"]
        return privilege_info

    get_privilege_info.scan = scan  # type: ignore[attr-defined]
    return get_privilege_info


@contextlib.contextmanager
def _resource_files_for_parliament() -> Iterator[None]:
    """parliament 1.6.4 imports pkg_resources only to find its two data files. pkg_resources is
    gone from setuptools 82, and importing it scans every installed distribution (a fifth of a
    second of each plan); while parliament imports, a module of that name answers
    `resource_filename` from importlib.resources instead, unless the real one is loaded already."""
    if "pkg_resources" in sys.modules:
        yield
        return
    stand_in = types.ModuleType("pkg_resources")
    stand_in.resource_filename = lambda package, name: str(importlib.resources.files(package).joinpath(name))  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("pkg_resources") is stand_in:
            del sys.modules["pkg_resources"]


@functools.lru_cache(maxsize=1)
def _issue_settings() -> dict[str, dict[str, Any]]:
    """Issue → {severity, title}: parliament's config plus its community auditors' config."""
    import yaml

    parliament = _parliament()
    settings: dict[str, dict[str, Any]] = {key: dict(value) for key, value in parliament.config.items()}
    override = Path(parliament.__file__).parent / "community_auditors" / "config_override.yaml"
    if override.exists():
        for key, value in (yaml.safe_load(override.read_text(encoding="utf-8")) or {}).items():
            settings.setdefault(key, {}).update(value)
    return settings


def _finding_actions(finding: Any) -> frozenset[str]:
    """Actions named by a finding: community auditors put them in location, core ones in detail."""
    actions: set[str] = set()
    location = finding.location if isinstance(finding.location, Mapping) else {}
    for item in location.get("actions", []) or []:
        actions.add(str(item).lower())
    detail = finding.detail
    for item in detail if isinstance(detail, list) else []:
        if isinstance(item, str):
            actions.add(item.lower())
        elif isinstance(item, Mapping) and "action" in item:
            actions.add(str(item["action"]).lower())
    return frozenset(actions)


def _accepted_reason(issue: str, actions: frozenset[str]) -> str | None:
    for accepted in ACCEPTED_FINDINGS:
        if accepted.issue == issue and actions and actions <= accepted.actions:
            return accepted.reason
    return None


def lint_policy(document: str | Mapping[str, Any]) -> list[IamFinding]:
    """Parliament's findings on one policy document (a JSON string or a mapping)."""
    if isinstance(document, Mapping):
        document = json.dumps(to_plain(document), sort_keys=True)
    return list(_lint_text(document))


@functools.lru_cache(maxsize=256)
def _lint_text(document: str) -> tuple[IamFinding, ...]:
    # Cached: a stack repeats documents, and a document with broad wildcards takes
    # parliament seconds to expand against its action database.
    parliament = _parliament()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policy = parliament.analyze_policy_string(document, include_community_auditors=True)
    settings = _issue_settings()
    findings = []
    for finding in policy.findings:
        issue_settings = settings.get(finding.issue, {})
        actions = _finding_actions(finding)
        detail = finding.detail if isinstance(finding.detail, str) else ""
        findings.append(
            IamFinding(
                issue=finding.issue,
                severity=str(issue_settings.get("severity", "CRITICAL")).upper(),
                title=str(issue_settings.get("title", finding.issue)),
                detail=detail,
                actions=actions,
                accepted_reason=_accepted_reason(finding.issue, actions),
            )
        )
    return tuple(findings)


def _action_list(actions: Iterable[str], shown: int = 6) -> str:
    names = sorted(actions)
    if not names:
        return ""
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return f" [{', '.join(names[:shown])}{more}]"


def group_by_issue(findings: Iterable[IamFinding]) -> list[list[IamFinding]]:
    """Findings grouped by issue, in first-seen order."""
    groups: dict[str, list[IamFinding]] = {}
    for finding in findings:
        groups.setdefault(finding.issue, []).append(finding)
    return list(groups.values())


def summarize(findings: list[IamFinding]) -> str:
    """One line for findings of the same issue: issue, severity, title, count and actions."""
    first = findings[0]
    actions = frozenset().union(*(finding.actions for finding in findings))
    count = f" x{len(findings)}" if len(findings) > 1 else ""
    detail = f": {first.detail}" if first.detail and len(findings) == 1 else ""
    return f"{first.issue} ({first.severity}) {first.title}{count}{detail}{_action_list(actions)}"


def has_medium_or_worse(findings: Iterable[IamFinding]) -> bool:
    """Whether any finding is MEDIUM or worse and not accepted."""
    return any(finding.counts for finding in findings)


def actions_matching(pattern: str) -> frozenset[str]:
    """The IAM actions an action pattern (`kms:Get*`, `*`) names, as `service:Action`, from
    parliament's database of the Service Authorization Reference; empty for an unknown service."""
    expanded = _parliament().expand_action(pattern, raise_exceptions=False)
    return frozenset(f"{item['service']}:{item['action']}" for item in expanded)
