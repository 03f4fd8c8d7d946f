"""What changed inside a policy document, statement by statement, and what a change grants beyond
its base; pure functions, no engine."""

from __future__ import annotations

import json

from gpucloud.plan.diff_documents import document_lines, parsed, statement_changes

BUCKET = "arn:aws:s3:::team-data"


def policy(*statements: dict) -> dict:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def allow(actions, resources, **more) -> dict:
    return {"Effect": "Allow", "Action": actions, "Resource": resources, **more}


def test_only_json_objects_held_as_strings_are_documents():
    assert parsed(json.dumps(policy())) == policy()
    assert parsed("not json {") is None and parsed("[1]") is None and parsed({"a": 1}) is None


def test_a_wildcard_that_newly_covers_actions_names_them():
    [change] = statement_changes(policy(allow(["kms:Decrypt", "kms:GetKeyPolicy"], "*", Sid="Use")),
                                 policy(allow(["kms:Decrypt", "kms:Get*"], "*", Sid="Use")))
    assert change.kind == "changed" and change.label == "Use" and change.fields == ["Action"]
    [widened] = change.widened
    assert widened.startswith("actions kms:Get* (newly covers kms:GetKeyRotationStatus")
    assert "kms:GetKeyPolicy" not in widened


def test_a_narrower_statement_widens_nothing():
    [change] = statement_changes(policy(allow("s3:*", f"{BUCKET}/*", Sid="Data")),
                                 policy(allow(["s3:GetObject"], [f"{BUCKET}/shared/*"], Sid="Data")))
    assert change.fields == ["Action", "Resource"] and change.widened == []


def test_statements_without_sid_are_matched_by_content_and_the_rest_added_or_removed():
    kept, dropped, new = allow("s3:GetObject", f"{BUCKET}/a/*"), allow("sqs:SendMessage", "*"), allow("sns:Publish", "*")
    changes = statement_changes(policy(kept, dropped), policy(new, kept))
    assert [(change.kind, change.label) for change in changes] == [("added", "statement 1"), ("removed", "statement 2")]
    assert changes[0].widened == ["actions sns:Publish", "resources *"] and changes[1].widened == []


def test_a_condition_removed_or_given_more_values_widens_an_allow():
    condition = {"StringEquals": {"aws:SourceVpc": ["vpc-1"]}, "Bool": {"aws:SecureTransport": True}}
    wider = {"StringEquals": {"aws:SourceVpc": ["vpc-1", "vpc-2"]}}
    [change] = statement_changes(policy(allow("s3:GetObject", "*", Sid="Read", Condition=condition)),
                                 policy(allow("s3:GetObject", "*", Sid="Read", Condition=wider)))
    assert change.widened == ["condition StringEquals aws:SourceVpc also allows vpc-2", "condition Bool aws:SecureTransport removed"]


def test_a_deny_that_covers_less_is_a_widening():
    deny = {"Sid": "NoPlainHttp", "Effect": "Deny", "Action": "s3:*", "Resource": [BUCKET, f"{BUCKET}/*"]}
    [narrowed] = statement_changes(policy(deny), policy({**deny, "Resource": [BUCKET]}))
    assert narrowed.widened == [f"no longer denies: resources {BUCKET}/*"]
    [removed] = statement_changes(policy(deny), policy())
    assert removed.kind == "removed" and removed.widened[0] == "no longer denies: actions s3:*"


def test_a_document_that_is_not_a_policy_is_shown_by_changed_value():
    lines = document_lines({"widgets": [{"title": "GPU"}]}, {"widgets": [{"title": "GPU %"}, {"title": "Memory"}]})
    assert lines == ['~ widgets[0].title: "GPU" => "GPU %"', '~ widgets[1]: null => {"title": "Memory"}']
