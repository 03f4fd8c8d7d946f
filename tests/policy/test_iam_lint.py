"""parliament-backed IAM linting: clean least-privilege documents, findings on wildcards."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpucloud.policy import iam_lint
from policy_cases import ACCOUNT, CMK_ARN, NODE_POLICY, document


def test_least_privilege_node_policy_is_clean():
    findings = iam_lint.lint_policy(NODE_POLICY)
    assert findings == []
    assert not iam_lint.has_medium_or_worse(findings)


def test_json_string_and_mapping_lint_the_same():
    assert iam_lint.lint_policy(json.dumps(NODE_POLICY)) == iam_lint.lint_policy(NODE_POLICY)


# "*" itself is rejected by iam_documents before parliament runs (and takes parliament
# seconds to expand), so the linter is exercised on service wildcards.
SERVICE_WILDCARD_POLICY = document({"Effect": "Allow", "Action": ["iam:*", "sts:*"], "Resource": "*"})


def test_wildcard_policy_has_medium_or_worse_findings():
    findings = iam_lint.lint_policy(SERVICE_WILDCARD_POLICY)
    assert iam_lint.has_medium_or_worse(findings)
    issues = {finding.issue for finding in findings if finding.counts}
    assert {"PRIVILEGE_ESCALATION", "CREDENTIALS_EXPOSURE", "PERMISSIONS_MANAGEMENT_ACTIONS"} <= issues
    assert {finding.severity for finding in findings} <= set(iam_lint.SEVERITY_ORDER)


def test_service_wildcard_on_star_is_reported_even_though_parliament_rates_it_low():
    findings = iam_lint.lint_policy(document({"Effect": "Allow", "Action": "s3:*", "Resource": "*"}))
    resource_star = [finding for finding in findings if finding.issue == "RESOURCE_STAR"]
    assert resource_star and resource_star[0].severity == "LOW" and not resource_star[0].counts


def test_malformed_json_is_a_critical_finding():
    findings = iam_lint.lint_policy('{"Version": "2012-10-17", "Statement": [')
    assert [finding.issue for finding in findings] == ["MALFORMED_JSON"]
    assert findings[0].severity == "CRITICAL"
    assert iam_lint.has_medium_or_worse(findings)


def test_ecr_token_for_image_pulls_is_accepted_with_its_reason():
    findings = iam_lint.lint_policy(
        document(
            {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                "Resource": f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/vision/*",
            },
        )
    )
    exposure = [finding for finding in findings if finding.issue == "CREDENTIALS_EXPOSURE"]
    assert exposure and exposure[0].accepted_reason
    assert not iam_lint.has_medium_or_worse(findings)


def test_kms_grant_for_encrypted_volumes_is_accepted_but_not_alongside_other_actions():
    grant_only = document(
        {
            "Effect": "Allow",
            "Action": "kms:CreateGrant",
            "Resource": CMK_ARN,
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        }
    )
    assert not iam_lint.has_medium_or_worse(iam_lint.lint_policy(grant_only))
    grant_and_policy = document(
        {"Effect": "Allow", "Action": ["kms:CreateGrant", "kms:PutKeyPolicy"], "Resource": CMK_ARN}
    )
    assert iam_lint.has_medium_or_worse(iam_lint.lint_policy(grant_and_policy))


def test_every_accepted_finding_names_actions_and_a_reason():
    for accepted in iam_lint.ACCEPTED_FINDINGS:
        assert accepted.actions and all(action == action.lower() and ":" in action for action in accepted.actions)
        assert len(accepted.reason) > 40


def test_rule_fails_closed_when_parliament_is_missing(monkeypatch):
    from gpucloud.policy import PolicyConfig
    from gpucloud.policy.rules import validate_iam_least_privilege

    def unavailable() -> None:
        raise iam_lint.LinterUnavailableError("parliament is not importable (test)")

    monkeypatch.setattr(iam_lint, "_parliament", unavailable)
    monkeypatch.setattr(iam_lint, "_lint_text", iam_lint._lint_text.__wrapped__)  # bypass the cache
    messages: list[str] = []
    validate_iam_least_privilege(
        "aws:iam/rolePolicy:RolePolicy",
        {"role": "r", "policy": json.dumps(NODE_POLICY)},
        messages.append,
        PolicyConfig(),
    )
    assert len(messages) == 1 and "could not be linted" in messages[0]


def test_parliament_lints_where_setuptools_ships_no_pkg_resources():
    """setuptools 82 removed pkg_resources, which parliament 1.6.4 imports for its data files."""
    code = """
import importlib.abc, json, sys

class NoPkgResources(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pkg_resources":
            raise ModuleNotFoundError("No module named 'pkg_resources'")

sys.meta_path.insert(0, NoPkgResources())
from gpucloud.policy import iam_lint
statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::acme-datasets"}
findings = iam_lint.lint_policy({"Version": "2012-10-17", "Statement": [statement]})
print(iam_lint.has_medium_or_worse(findings), "pkg_resources" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]


def test_accepted_finding_is_listed_for_reviewers_and_does_not_count():
    findings = iam_lint.lint_policy(
        document({"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"})
    )
    [exposure] = [finding for finding in findings if finding.issue == "CREDENTIALS_EXPOSURE"]
    assert exposure.accepted and not exposure.counts


def test_unaccepted_medium_finding_counts_and_is_not_listed_as_accepted():
    finding = iam_lint.IamFinding("CREDENTIALS_EXPOSURE", "MEDIUM", "Credentials exposure", "", frozenset())
    assert finding.counts and not finding.accepted


def test_finding_of_unknown_severity_counts_as_the_worst():
    finding = iam_lint.IamFinding("NEW_ISSUE", "SEVERE", "Something new", "", frozenset({"iam:passrole"}))
    assert finding.counts


def test_community_auditor_findings_carry_their_configured_severity():
    findings = iam_lint.lint_policy(SERVICE_WILDCARD_POLICY)
    severities = {finding.issue: finding.severity for finding in findings}
    assert severities["PRIVILEGE_ESCALATION"] == "HIGH"
    assert severities["CREDENTIALS_EXPOSURE"] == "MEDIUM"


def test_linter_that_cannot_be_imported_fails_closed(monkeypatch):
    monkeypatch.setitem(sys.modules, "parliament", None)  # makes `import parliament` raise ImportError
    with pytest.raises(iam_lint.LinterUnavailableError, match="parliament is not importable"):
        iam_lint._parliament.__wrapped__()


def test_core_finding_names_the_actions_listed_in_its_detail():
    findings = iam_lint.lint_policy(
        document({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::acme-datasets"})
    )
    [mismatch] = [finding for finding in findings if finding.issue == "RESOURCE_MISMATCH"]
    assert mismatch.actions == frozenset({"s3:getobject"})
    assert mismatch.counts


def test_findings_of_one_issue_read_as_one_line_with_their_count_and_actions():
    finding = iam_lint.IamFinding
    findings = [
        finding(issue="RESOURCE_STAR", severity="MEDIUM", title="Unnecessary use of Resource *", detail="",
                actions=frozenset({f"s3:action{index}" for index in range(first, first + 4)}), accepted_reason=None)
        for first in (0, 4)
    ] + [finding(issue="MALFORMED", severity="CRITICAL", title="Malformed", detail="bad json", actions=frozenset(),
                 accepted_reason=None)]

    groups = iam_lint.group_by_issue(findings)

    assert [[item.issue for item in group] for group in groups] == [["RESOURCE_STAR", "RESOURCE_STAR"], ["MALFORMED"]]
    assert iam_lint.summarize(groups[0]) == (
        "RESOURCE_STAR (MEDIUM) Unnecessary use of Resource * x2 "
        "[s3:action0, s3:action1, s3:action2, s3:action3, s3:action4, s3:action5, and 2 more]"
    )
    assert iam_lint.summarize(groups[1]) == "MALFORMED (CRITICAL) Malformed: bad json"


def test_parliament_finds_each_privilege_through_its_index_as_its_own_scan_does():
    """Every action in parliament's database, those whose prefix two services share included,
    resolves to the very privilege entry (and service) that parliament's scan returns."""
    parliament = iam_lint._parliament()
    indexed = parliament.statement.get_privilege_info
    scan = indexed.scan
    checked = 0
    for service in parliament.iam_definition:
        for privilege in service["privileges"]:
            found = indexed(service["prefix"], privilege["privilege"])
            resources = found["service_resources"]
            assert scan(service["prefix"], privilege["privilege"]) is found
            assert found["service_resources"] is resources
            checked += 1
    assert checked > 19000
    with pytest.raises(parliament.UnknownActionException, match="Unknown action s3:NoSuchAction"):
        indexed("s3", "NoSuchAction")


REMEMBERING_CASES = {
    "node policy": NODE_POLICY,
    "service wildcards": SERVICE_WILDCARD_POLICY,
    "deny beside allow": document(
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "iam:PassRole"], "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:*", "Resource": "*"},
        {"Effect": "Deny", "Action": "iam:PassRole", "Resource": "*", "Condition": {"StringNotEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
    ),
    "one privilege of a service denied": document(
        {"Effect": "Allow", "Action": ["iam:CreateAccessKey", "iam:PutUserPolicy"], "Resource": "*"},
        {"Effect": "Deny", "Action": "iam:CreateAccessKey", "Resource": "*"},
    ),
    "not action": document({"Effect": "Allow", "NotAction": ["iam:*", "organizations:*"], "Resource": "*"}),
    "not resource": document({"Effect": "Allow", "Action": ["iam:CreateAccessKey", "s3:GetObject"], "NotResource": "arn:aws:s3:::b/*"}),
    "the same privilege elsewhere": document(
        {"Effect": "Allow", "Action": ["iam:CreateAccessKey", "s3:GetObject"], "Resource": f"arn:aws:iam::{ACCOUNT}:user/ops"}),
}


def test_remembered_references_give_every_finding_parliaments_own_walk_gives(monkeypatch):
    """Linted one after the other in one process (so an answer remembered across policies would
    show), each document's findings are the ones parliament finds walking its statements anew."""
    policy_class = iam_lint._parliament().policy.Policy
    remembered = policy_class.get_references

    def findings() -> dict[str, list[tuple]]:
        return {name: [(finding.issue, finding.severity, finding.detail, sorted(finding.actions))
                       for finding in iam_lint._lint_text.__wrapped__(json.dumps(policy))]
                for name, policy in REMEMBERING_CASES.items()}

    with_memory = findings()
    monkeypatch.setattr(policy_class, "get_references", remembered.walk)
    walked = findings()

    assert with_memory == walked
    assert any(with_memory.values()) and with_memory["service wildcards"] != with_memory["the same privilege elsewhere"]


def test_a_policy_walks_its_statements_once_per_privilege(monkeypatch):
    policy_class = iam_lint._parliament().policy.Policy
    walk = policy_class.get_references.walk
    asked: list[tuple[int, str, str]] = []

    def counted(self, prefix, name):
        asked.append((id(self), prefix, name))
        return walk(self, prefix, name)

    monkeypatch.setattr(policy_class, "get_references", iam_lint._remembered_references(counted))
    iam_lint._lint_text.__wrapped__(json.dumps(SERVICE_WILDCARD_POLICY))

    assert len(asked) > 100
    assert len(asked) == len(set(asked))
