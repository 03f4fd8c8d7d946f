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
    assert parsed("{not json") is None


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
    condition = {"StringEquals": {"aws:SourceVpc": ["vpc-1"], "aws:PrincipalTag/Notebook": "a"}, "Bool": {"aws:SecureTransport": True}}
    wider = {"StringEquals": {"aws:SourceVpc": ["vpc-1", "vpc-2"], "aws:PrincipalTag/Notebook": ["a", "b"]}}
    [change] = statement_changes(policy(allow("s3:GetObject", "*", Sid="Read", Condition=condition)),
                                 policy(allow("s3:GetObject", "*", Sid="Read", Condition=wider)))
    assert change.widened == ["condition StringEquals aws:SourceVpc also allows vpc-2",
                              "condition StringEquals aws:PrincipalTag/Notebook also allows b",
                              "condition Bool aws:SecureTransport removed"]


def test_a_deny_that_covers_less_is_a_widening():
    deny = {"Sid": "NoPlainHttp", "Effect": "Deny", "Action": "s3:*", "Resource": [BUCKET, f"{BUCKET}/*"]}
    [narrowed] = statement_changes(policy(deny), policy({**deny, "Resource": [BUCKET]}))
    assert narrowed.widened == [f"no longer denies: resources {BUCKET}/*"]
    [removed] = statement_changes(policy(deny), policy())
    assert removed.kind == "removed" and removed.widened[0] == "no longer denies: actions s3:*"


def test_a_document_that_is_not_a_policy_is_shown_by_changed_value():
    lines = document_lines({"widgets": [{"title": "GPU"}]}, {"widgets": [{"title": "GPU %"}, {"title": "Memory"}]})
    assert lines == ['~ widgets[0].title: "GPU" => "GPU %"', '~ widgets[1]: null => {"title": "Memory"}']


def test_each_wildcard_names_up_to_four_actions_it_newly_covers_and_counts_the_rest():
    """A plain action, then wildcards covering four and seven new actions, then one that matches no
    known action (named as written: what it covers is unknown, so it is a widening)."""
    [change] = statement_changes(policy(allow("kms:Decrypt", "*", Sid="Use")),
                                 policy(allow(["kms:Decrypt", "s3:PutObject", "kms:Get*", "kms:List*", "notaservice:Do*"],
                                              "*", Sid="Use")))

    assert change.widened == [
        "actions s3:PutObject, "
        "kms:Get* (newly covers kms:GetKeyPolicy, kms:GetKeyRotationStatus, kms:GetParametersForImport, kms:GetPublicKey), "
        "kms:List* (newly covers kms:ListAliases, kms:ListGrants, kms:ListKeyPolicies, kms:ListKeyRotations, +3 more), "
        "notaservice:Do*"]


def test_an_action_no_longer_excluded_by_not_action_is_a_widening():
    statement = {"Sid": "Admin", "Effect": "Allow", "NotAction": ["iam:*", "kms:*"], "Resource": "*"}

    [change] = statement_changes(policy(statement), policy({**statement, "NotAction": ["iam:*"]}))

    assert change.widened == ["no longer excluded: kms:*"]


def test_statements_alike_pair_only_with_the_same_effect_and_principal():
    """Without Sids, the old statement pairs with the new one of its effect and principal that
    shares an action, not with a Deny or another principal's statement listed first."""
    reader = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:role/reader"}}
    writer = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:role/writer"}}
    old = {**reader, "Action": ["s3:GetObject"], "Resource": BUCKET}
    changes = statement_changes(policy(old), policy({**old, "Effect": "Deny", "Resource": f"{BUCKET}/x"},
                                                    {**writer, "Action": ["s3:GetObject"], "Resource": BUCKET},
                                                    {**old, "Action": ["s3:GetObject", "s3:PutObject"]}))

    assert [(change.kind, change.label) for change in changes] == [
        ("added", "statement 1"), ("added", "statement 2"), ("changed", "statement 3")]
    assert changes[2].widened == ["actions s3:PutObject"]


def test_a_policy_document_is_shown_statement_by_statement_in_the_new_order():
    trust = {"Sid": "Trust", "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    deny = {"Sid": "NoPlainHttp", "Effect": "Deny", "Action": "s3:*", "Resource": BUCKET,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    read = allow("s3:GetObject", BUCKET, Sid="Read")
    write = allow("s3:PutObject", f"{BUCKET}/out/*", Sid="Write")
    old = {"Version": "2008-10-17", "Statement": [read, write, deny]}
    new = policy({**write, "Resource": f"{BUCKET}/*"}, trust,
                 {**read, "Condition": {"StringLike": {"s3:prefix": "a/*"}, "Bool": {"aws:SecureTransport": "true"}}})

    assert document_lines(old, new) == [
        "~ Write (Allow s3:PutObject):",
        f'    Resource: "{BUCKET}/out/*" => "{BUCKET}/*"',
        f"    widens: resources {BUCKET}/*",
        f"+ Trust: Allow sts:AssumeRole on -",
        "    widens: actions sts:AssumeRole",
        "    widens: principals Service:ec2.amazonaws.com",
        "~ Read (Allow s3:GetObject):",
        '    Condition: null => {"Bool": {"aws:SecureTransport": "true"}, "StringLike": {"s3:prefix": "a/*"}}',
        f"- NoPlainHttp: Deny s3:* on {BUCKET}",
        "    widens: no longer denies: actions s3:*",
        f"    widens: no longer denies: resources {BUCKET}",
        "~ Version: 2008-10-17 => 2012-10-17",
    ]


def test_a_not_action_statement_reads_as_every_action_but_those():
    admin = {"Sid": "Admin", "Effect": "Allow", "NotAction": ["iam:*", "kms:*"], "Resource": "*"}

    assert document_lines(policy(), policy(admin))[0] == "+ Admin: Allow every action except iam:*, kms:* on *"


def test_a_deny_whose_condition_holds_for_fewer_requests_denies_less():
    """Every condition must hold for a Deny to apply, a matching operator's values are ORed and a
    negated one's NORed (IAM user guide, "Conditions with multiple context keys or values", read
    2026-11-29): a condition added, or a value more for a negated operator, leaves requests the
    Deny no longer denies."""
    deny = {"Sid": "OnlyFromVpc", "Effect": "Deny", "Action": "s3:*", "Resource": BUCKET,
            "Condition": {"StringNotEquals": {"aws:SourceVpc": ["vpc-1", "vpc-2"]}}}
    narrower = {**deny, "Condition": {"StringNotEquals": {"aws:SourceVpc": ["vpc-1"]},
                                      "StringEquals": {"aws:PrincipalTag/team": "ml"}}}

    [change] = statement_changes(policy(deny), policy(narrower))

    assert change.widened == ["no longer denies: condition StringEquals aws:PrincipalTag/team added"]
    [excluded] = statement_changes(policy(narrower), policy(deny))
    assert excluded.widened == ["no longer denies: condition StringNotEquals aws:SourceVpc now excludes vpc-2"]
    covered = {**deny, "Condition": {"StringEquals": {"aws:SourceVpc": ["vpc-1", "vpc-2"]}}}
    [fewer] = statement_changes(policy(covered), policy({**covered, "Condition": {"StringEquals": {"aws:SourceVpc": "vpc-1"}}}))
    assert fewer.widened == ["no longer denies: condition StringEquals aws:SourceVpc no longer covers vpc-2"]
    [wider] = statement_changes(policy(fewer.new), policy(covered))
    assert wider.widened == []


def test_a_negated_condition_of_an_allow_widens_with_fewer_values_not_more():
    statement = allow("s3:GetObject", "*", Sid="Read",
                      Condition={"StringNotEquals": {"aws:PrincipalTag/team": ["contractor", "guest"]}})
    fewer = {**statement, "Condition": {"StringNotEquals": {"aws:PrincipalTag/team": "contractor"}}}
    more = {**statement, "Condition": {"StringNotEquals": {"aws:PrincipalTag/team": ["contractor", "guest", "intern"]}}}

    prefixed = {**statement, "Condition": {"ForAnyValue:StringNotLike": {"aws:TagKeys": ["cost*", "team"]}}}

    [widened] = statement_changes(policy(statement), policy(fewer))
    [untagged] = statement_changes(policy(prefixed), policy({**prefixed, "Condition": {"ForAnyValue:StringNotLike": {"aws:TagKeys": "team"}}}))
    assert untagged.widened == ["condition ForAnyValue:StringNotLike aws:TagKeys no longer excludes cost*"]
    [narrowed] = statement_changes(policy(statement), policy(more))

    assert widened.widened == ["condition StringNotEquals aws:PrincipalTag/team no longer excludes guest"]
    assert narrowed.widened == []


def test_a_statement_that_turns_its_actions_into_not_action_grants_every_action_but_those():
    [change] = statement_changes(policy(allow("s3:GetObject", "*", Sid="Data")),
                                 policy({"Sid": "Data", "Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}))
    [added] = statement_changes(policy(), policy({"Sid": "Data", "Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}))

    assert change.widened == ["every action except iam:*"]
    assert added.widened == ["resources *", "every action except iam:*"]


def test_a_document_that_stops_being_a_policy_is_shown_by_changed_value():
    assert document_lines(policy(), {"widgets": []}) == ['~ Version: "2012-10-17" => null']


def test_at_most_twenty_changed_values_are_shown_and_the_rest_counted():
    twenty = document_lines({f"k{index:02}": 0 for index in range(20)}, {f"k{index:02}": 1 for index in range(20)})
    many = document_lines({f"k{index:02}": 0 for index in range(23)}, {f"k{index:02}": 1 for index in range(23)})

    assert len(twenty) == 20 and twenty[-1] == "~ k19: 0 => 1"
    assert many[19:] == ["~ k19: 0 => 1", "... and 3 more changed values"]


def test_a_value_over_160_characters_is_cut_to_160():
    [line] = document_lines({"a": "x" * 158}, {"a": "y" * 159})

    assert line == f'~ a: "{"x" * 158}" => "{"y" * 156}...'
