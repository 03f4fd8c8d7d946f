"""The iam-least-privilege rule called directly on the inputs its verdict turns on: AWS managed
policies under a path, policies that are not JSON or left empty, a linter that cannot run, and the
accepted parliament findings the plan lists for reviewers."""

from __future__ import annotations

import json

from gpucloud.policy import PolicyConfig, iam_lint
from gpucloud.policy.resource_types import BUCKET, BUCKET_POLICY, IAM_POLICY, ROLE_POLICY_ATTACHMENT
from gpucloud.policy.rules.iam import accepted_iam_findings, validate_iam_least_privilege
from policy_cases import document

ECR_TOKEN = json.dumps(document({"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"}))


def violations(resource_type: str, props: dict) -> list[str]:
    messages: list[str] = []
    validate_iam_least_privilege(resource_type, props, messages.append, PolicyConfig())
    return messages


def linter_unavailable(document):
    raise iam_lint.LinterUnavailableError("parliament is not installed")


def test_aws_managed_full_access_policy_under_a_path_is_broad():
    arn = "arn:aws:iam::aws:policy/service-role/AmazonPersonalizeFullAccess"

    (message,) = violations(ROLE_POLICY_ATTACHMENT, {"role": "vision-node", "policyArn": arn})

    assert message.startswith("Attaches the AWS managed policy service-role/AmazonPersonalizeFullAccess")


def test_job_function_administrator_policy_is_broad():
    arn = "arn:aws:iam::aws:policy/job-function/SystemAdministrator"

    (message,) = violations(ROLE_POLICY_ATTACHMENT, {"role": "vision-node", "policyArn": arn})

    assert message.startswith("Attaches the AWS managed policy job-function/SystemAdministrator")


def test_bucket_policy_that_is_not_json_is_reported():
    (message,) = violations(BUCKET_POLICY, {"bucket": "acme-datasets", "policy": "{not json"})

    assert message.startswith("Bucket policy is not valid JSON")


def test_bucket_without_an_inline_policy_is_not_judged():
    for policy in (None, "", "  "):
        assert violations(BUCKET, {"bucket": "acme-datasets", "policy": policy}) == [], policy


def test_identity_policy_that_cannot_be_linted_is_reported(monkeypatch):
    monkeypatch.setattr(iam_lint, "lint_policy", linter_unavailable)

    assert violations(IAM_POLICY, {"policy": ECR_TOKEN}) == [
        "IAM policy could not be linted: parliament is not installed."
    ]


def test_accepted_findings_list_the_ecr_token_grant_for_reviewers():
    found = accepted_iam_findings(IAM_POLICY, {"policy": ECR_TOKEN})

    assert [(where, finding.issue) for where, finding in found] == [("policy", "CREDENTIALS_EXPOSURE")]


def test_accepted_findings_skip_documents_that_are_invalid_or_cannot_be_linted(monkeypatch):
    assert accepted_iam_findings(IAM_POLICY, {"policy": "{not json"}) == []

    monkeypatch.setattr(iam_lint, "lint_policy", linter_unavailable)

    assert accepted_iam_findings(IAM_POLICY, {"policy": ECR_TOKEN}) == []
