"""How the plan reports the access check: its failures, warnings and hints (`plan/access.py`
builds the `access` object they read), and the one summary line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpucloud.plan.access_documents import AWS_MANAGED
from gpucloud.plan.model import PlanFinding
from gpucloud.policy.access import Call, Documents, action_matches
from gpucloud.policy.iam_documents import parse_document


def unused_grants(documents: Documents, calls: Sequence[Call]) -> list[dict[str, str]]:
    """Identity-policy actions that no checked call of the principal uses, for the principals the
    recordings speak for: least-privilege hints (on the stack's own policies, not AWS managed ones)."""
    by_principal: dict[str, list[str]] = {}
    for call in calls:
        by_principal.setdefault(call.principal, []).append(call.action)
    hints = []
    for principal, actions in sorted(by_principal.items()):
        for document in documents.identity.get(principal, ()):
            if str(document.get("Id", "")).startswith(AWS_MANAGED):
                continue  # AWS's to write, not the stack's to narrow
            for statement in parse_document(document):
                if not statement.allow or statement.not_actions:
                    continue
                hints += [{"principal": principal, "policy": str(document.get("Id", "")), "sid": statement.sid,
                           "action": pattern}
                          for pattern in statement.actions if not any(action_matches(pattern, a) for a in actions)]
    return hints


def findings(access: Mapping[str, Any]) -> list[PlanFinding]:
    findings = [
        PlanFinding(source="access", severity="failure", rule="access-denied",
                    message=f"{call['actor']} cannot {call['action']} on {call['resource']}"
                            + (f" through the {call['endpoint']} endpoint" if call["endpoint"] else "")
                            + f": {call['reason']} (feature {call['feature']}, {call['measuredBy']})")
        for call in access["denied"]
    ]
    findings += [
        PlanFinding(source="access", severity="failure", rule="access-beyond-stack",
                    message=f"{call['actor']} may also {call['action']} on {call['resource']}, a resource of another "
                            f"stack or group: {call['reason']} (feature {call['feature']}); the team policy must hold "
                            "its holder to this stack")
        for call in access.get("beyondStack", [])
    ]
    findings += [
        PlanFinding(source="access", severity="warning", rule="access-unmeasured",
                    message=f"{item['feature']} ({item['actor']}) is used by this stack, but no test measured its "
                            "calls, so its access is not proven (access_calls.json)")
        for item in access["unmeasured"]
    ]
    if access.get("unfilled"):
        findings.append(PlanFinding(source="access", severity="warning", rule="access-unfilled",
                                    message="calls left unchecked, the plan has no value for: "
                                            + ", ".join(access["unfilled"])))
    by_principal: dict[str, list[str]] = {}
    for hint in access["unusedGrants"]:
        by_principal.setdefault(hint["principal"], []).append(hint["action"])
    findings += [
        PlanFinding(source="access", severity="info", rule="access-unused-grant",
                    message=f"{principal} is granted {len(actions)} action(s) no measured call uses: "
                            f"{', '.join(sorted(set(actions)))} (least-privilege hint)")
        for principal, actions in by_principal.items()
    ]
    return findings


def access_summary(access: Mapping[str, Any]) -> str:
    """The plan's one line on access."""
    return (f"Access: {access['calls']} calls of {access['actors']} actors checked, {len(access['denied'])} denied, "
            f"{len(access['unmeasured'])} unmeasured")
