"""The plain least-privilege rules on IAM documents, called directly: what each one reports and what it lets through."""

from __future__ import annotations

import pytest

from gpucloud.policy.iam_documents import (
    InvalidPolicyDocument,
    identity_policy_problems,
    key_policy_problems,
    parse_document,
    resource_policy_problems,
)
from policy_cases import ACCOUNT, CMK_ARN, TOPIC_ARN, document

ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/vision-gpu-node"
ROOT_ARN = f"arn:aws:iam::{ACCOUNT}:root"


def identity_problems(*statements: dict) -> list[str]:
    return identity_policy_problems(parse_document(document(*statements)))


def test_kms_wildcard_key_arn_counts_as_unscoped():
    problems = identity_problems({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "arn:aws:kms:*:*:key/*"})

    assert len(problems) == 1 and "'arn:aws:kms:*:*:key/*'" in problems[0] and "S3 and KMS" in problems[0]


def test_kms_alias_pattern_that_names_the_alias_is_scoped():
    assert identity_problems(
        {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": f"arn:aws:kms:us-east-1:{ACCOUNT}:alias/*/vision"}
    ) == []


def test_only_s3_object_actions_must_be_scoped_to_a_key_prefix():
    assert identity_problems(
        {
            "Effect": "Allow",
            "Action": ["s3:ListBucket", "kms:Decrypt"],
            "Resource": ["arn:aws:s3:::acme-datasets", "arn:aws:s3:::acme-datasets/*", CMK_ARN],
        }
    ) == []


def test_object_actions_next_to_a_key_arn_are_judged_on_the_s3_resources_only():
    assert identity_problems(
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "kms:Decrypt"],
            "Resource": ["arn:aws:s3:::acme-datasets/projects/vision/*", CMK_ARN],
        }
    ) == []


def test_not_action_and_not_resource_with_allow_are_reported():
    problems = identity_problems({"Effect": "Allow", "NotAction": "iam:*", "NotResource": CMK_ARN})

    assert any("NotAction with Allow" in problem for problem in problems)
    assert any("NotResource with Allow" in problem for problem in problems)


def test_policy_given_as_a_mapping_is_judged_like_its_json():
    statements = parse_document(document({"Effect": "Allow", "Action": "*", "Resource": "*"}))

    assert any("every action" in problem for problem in identity_policy_problems(statements))


def test_not_principal_with_allow_in_a_resource_policy_is_reported():
    statement = {"Effect": "Allow", "NotPrincipal": {"AWS": ROLE_ARN}, "Action": "sns:Publish", "Resource": TOPIC_ARN}

    problems = resource_policy_problems(parse_document(document(statement)))

    assert len(problems) == 1 and "NotPrincipal with Allow" in problems[0]


def test_key_policy_reports_problems_after_a_not_principal_statement():
    key_policy = document(
        {"Effect": "Allow", "NotPrincipal": {"AWS": ROOT_ARN}, "Action": "kms:Decrypt", "Resource": "*"},
        {"Effect": "Allow", "Principal": {"AWS": ROLE_ARN}, "Action": "kms:*", "Resource": "*"},
    )

    problems = key_policy_problems(parse_document(key_policy))

    assert len(problems) == 2
    assert "NotPrincipal with Allow" in problems[0]
    assert "'kms:*' to " + ROLE_ARN in problems[1]


def test_wildcard_source_account_condition_is_not_a_guard():
    """A caller condition whose value is only wildcards (`*`, `?*`) matches every caller."""
    for value in ("*", "?*"):
        statement = {"Effect": "Allow", "Principal": "*", "Action": "sns:Publish", "Resource": TOPIC_ARN,
                     "Condition": {"StringLike": {"aws:SourceAccount": value}}}

        problems = resource_policy_problems(parse_document(document(statement)))

        assert len(problems) == 1 and "every principal" in problems[0], value


def test_source_account_condition_naming_the_account_is_a_guard():
    statement = {"Effect": "Allow", "Principal": "*", "Action": "sns:Publish", "Resource": TOPIC_ARN,
                 "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}}}

    assert resource_policy_problems(parse_document(document(statement))) == []


def test_document_without_a_statement_is_not_a_policy():
    with pytest.raises(InvalidPolicyDocument, match="no top-level Statement"):
        parse_document({"Version": "2012-10-17"})


def test_full_control_with_no_principal_in_a_key_policy_is_reported():
    problems = key_policy_problems(parse_document(document({"Effect": "Allow", "Action": "kms:*", "Resource": "*"})))

    assert problems == ["statement #0 grants 'kms:*' to an unspecified principal; only the account root "
                        "(arn:aws:iam::ACCOUNT:root) may hold full control of the key"]


def test_arn_whose_resource_part_mixes_every_wildcard_is_unscoped():
    problems = identity_problems({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::?*/*"})

    assert len(problems) == 1 and "'arn:aws:s3:::?*/*'" in problems[0] and "S3 and KMS" in problems[0]


def test_object_action_on_a_bucket_arn_reaches_no_object():
    bucket = "arn:aws:s3:::acme-datasets"

    assert identity_problems({"Effect": "Allow", "Action": "s3:GetObject", "Resource": bucket}) == []


# A Deny, a NotAction and a NotResource statement before a broad one: each rule reads on past them.
DENY = {"Effect": "Deny", "Action": "s3:DeleteBucket", "Resource": "*"}
NOT_ACTION = {"Sid": "NotAction", "Effect": "Allow", "NotAction": "iam:*", "Resource": CMK_ARN}
NOT_RESOURCE = {"Sid": "NotResource", "Effect": "Allow", "Action": "kms:Decrypt", "NotResource": CMK_ARN}


def test_identity_policy_statements_after_deny_not_action_and_not_resource_are_still_judged():
    problems = identity_problems(DENY, NOT_ACTION, NOT_RESOURCE, {"Sid": "Last", "Effect": "Allow", "Action": "*",
                                                                   "Resource": "*"})

    assert "statement Last grants every action ('*')" in problems


def test_key_policy_statements_after_deny_and_not_action_are_still_judged():
    last = {"Sid": "Last", "Effect": "Allow", "Principal": {"AWS": ROLE_ARN}, "Action": "kms:*", "Resource": "*"}

    problems = key_policy_problems(parse_document(document({**DENY, "Principal": {"AWS": ROOT_ARN}},
                                                           {**NOT_ACTION, "Principal": {"AWS": ROOT_ARN}}, last)))

    assert any(problem.startswith("statement Last grants 'kms:*' to " + ROLE_ARN) for problem in problems)


def test_resource_policy_statements_after_deny_and_not_action_are_still_judged():
    last = {"Sid": "Last", "Effect": "Allow", "Principal": {"AWS": ROLE_ARN}, "Action": "sns:*", "Resource": TOPIC_ARN}

    problems = resource_policy_problems(parse_document(document({**DENY, "Principal": "*"},
                                                                {**NOT_ACTION, "Principal": {"AWS": ROLE_ARN}}, last)))

    assert "statement Last grants every sns action ('sns:*')" in problems


def test_decrypt_on_the_accounts_keys_passes_only_held_to_a_service_and_named_values():
    held = {"Sid": "DecryptNamedParametersThroughSsm", "Effect": "Allow", "Action": "kms:Decrypt",
            "Resource": "arn:aws:kms:us-east-1:111122223333:key/*",
            "Condition": {"StringEquals": {"kms:ViaService": "ssm.us-east-1.amazonaws.com"},
                          "StringLike": {"kms:EncryptionContext:PARAMETER_ARN": [
                              "arn:aws:ssm:us-east-1:111122223333:parameter/team/hf-token"]}}}
    assert identity_problems(held) == []
    without_context = {**held, "Condition": {"StringEquals": held["Condition"]["StringEquals"]}}
    any_service = {**held, "Condition": {**held["Condition"], "StringEquals": {"kms:ViaService": "*"}}}
    more_actions = {**held, "Action": ["kms:Decrypt", "kms:Encrypt"]}
    for loose in (without_context, any_service, more_actions):
        assert any("must name bucket/prefix or key ARNs" in problem for problem in identity_problems(loose)), loose
