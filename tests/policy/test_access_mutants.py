"""The access evaluator's edges that its mutation run found no test for, each from the AWS page
that states the rule (IAM user guide "IAM JSON policy elements: Condition operators", "Conditions
with multiple context keys or values", "IAM policy elements: Variables and tags", "IAM JSON
policy elements: Resource", "Cross-account policy evaluation logic"; KMS developer guide
"Allowing users in other accounts to use a KMS key"; all read 2026-11-29): operator boundaries,
time zones, set operators over negated operators, wildcards beside a policy variable, the exact
reason a denied call names, and the parsed-document cache a plan leans on."""

from __future__ import annotations

import pytest

from gpucloud.policy import access
from gpucloud.policy.access import Call, Documents, evaluate

ACCOUNT = "111122223333"
OTHER_ACCOUNT = "444455556666"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpu-node"
DAVID = f"arn:aws:iam::{ACCOUNT}:user/David"
STRANGER = f"arn:aws:iam::{OTHER_ACCOUNT}:role/partner"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
BUCKET = "arn:aws:s3:::amzn-s3-demo-bucket"


def policy(*statements: dict, name: str = "policy") -> dict:
    return {"Version": "2012-10-17", "Id": name, "Statement": list(statements)}


def grant(action, resource="*", sid="Grant", **extra) -> dict:
    return {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource, **extra}


def decide(action: str, resource: str, principal: str = ROLE, identity=None, resource_policies=(), context=None):
    documents = Documents(identity={principal: list(identity)} if identity is not None else {},
                          resource=list(resource_policies), endpoints={}, account=ACCOUNT)
    return evaluate(Call(actor="x", principal=principal, action=action, resource=resource, context=context or {},
                         endpoint=None), documents)


def holds(condition: dict, context: dict) -> bool:
    """Whether an identity policy's one statement with this condition allows the call."""
    return decide("ec2:RunInstances", "*", identity=[policy(grant("ec2:RunInstances", Condition=condition))],
                  context=context).allowed


# ---------------------------------------------------------------- numeric and date operators at their bounds

@pytest.mark.parametrize(("operator", "request_value", "matches"), [
    ("NumericEquals", "10", True),
    ("NumericEquals", "10.0", True),
    ("NumericEquals", "11", False),
    ("NumericGreaterThan", "11", True),
    ("NumericGreaterThan", "10", False),
    ("NumericGreaterThanEquals", "10", True),
    ("NumericGreaterThanEquals", "11", True),
    ("NumericGreaterThanEquals", "9", False),
])
def test_numeric_operators_at_and_beside_the_policy_value(operator, request_value, matches):
    """ "Matching", "Greater than" and "Greater than or equals" against the policy's 10."""
    assert holds({operator: {"s3:max-keys": "10"}}, {"s3:max-keys": request_value}) is matches


NOON = "2026-11-28T12:00:00Z"


@pytest.mark.parametrize(("operator", "request_time", "matches"), [
    ("DateEquals", NOON, True),
    ("DateEquals", "1795867200", True),  # the same instant in epoch seconds
    ("DateEquals", "2026-11-28T12:00:01Z", False),
    ("DateLessThan", NOON, False),
    ("DateLessThan", "2026-11-28T11:59:59Z", True),
    ("DateLessThanEquals", NOON, True),
    ("DateLessThanEquals", "2026-11-28T12:00:01Z", False),
    ("DateGreaterThan", NOON, False),
    ("DateGreaterThan", "2026-11-28T12:00:01Z", True),
    ("DateGreaterThanEquals", NOON, True),
    ("DateGreaterThanEquals", "2026-11-28T11:59:59Z", False),
])
def test_date_operators_at_and_beside_the_policy_instant(operator, request_time, matches):
    """ "Matching a specific date", "before", "at or before", "after", "at or after" noon UTC."""
    assert holds({operator: {"aws:CurrentTime": NOON}}, {"aws:CurrentTime": request_time}) is matches


def test_a_time_with_an_offset_is_the_instant_it_names():
    """W3C ISO 8601 times carry their zone: 14:00+02:00 is noon UTC, and a bare date is its
    midnight (the date formats the Date operators take)."""
    assert holds({"DateEquals": {"aws:CurrentTime": NOON}}, {"aws:CurrentTime": "2026-11-28T14:00:00+02:00"})
    assert holds({"DateLessThan": {"aws:CurrentTime": NOON}}, {"aws:CurrentTime": "2026-11-28T13:00:00+02:00"})
    assert holds({"DateGreaterThan": {"aws:CurrentTime": "2026-11-28"}}, {"aws:CurrentTime": NOON})
    assert not holds({"DateGreaterThan": {"aws:CurrentTime": "2026-11-29"}}, {"aws:CurrentTime": NOON})


def test_a_value_that_is_no_date_or_address_matches_none():
    """The Date and IP address operators compare dates and addresses; a request value that is
    neither matches no policy value (and is not evaluated as a pass)."""
    assert not holds({"DateLessThan": {"aws:CurrentTime": NOON}}, {"aws:CurrentTime": "yesterday"})
    assert not holds({"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}, {"aws:SourceIp": "vpce-1a2b3c4d"})


def test_an_address_without_a_prefix_is_one_address():
    """ "If you specify an IP address without the associated routing prefix, IAM uses /32"."""
    assert holds({"IpAddress": {"aws:SourceIp": "203.0.113.7"}}, {"aws:SourceIp": "203.0.113.7"})
    assert not holds({"IpAddress": {"aws:SourceIp": "203.0.113.7"}}, {"aws:SourceIp": "203.0.113.8"})


def test_binary_equals_compares_the_base64_value():
    """The page's BinaryEquals example value."""
    assert holds({"BinaryEquals": {"aws:RequestTag/blob": "QmluYXJ5VmFsdWVJbkJhc2U2NA=="}},
                 {"aws:RequestTag/blob": "QmluYXJ5VmFsdWVJbkJhc2U2NA=="})
    assert not holds({"BinaryEquals": {"aws:RequestTag/blob": "QmluYXJ5VmFsdWVJbkJhc2U2NA=="}},
                     {"aws:RequestTag/blob": "T3RoZXJWYWx1ZQ=="})


def test_for_any_value_with_a_negated_operator_needs_one_request_value_outside_the_policy_s():
    """A negated operator's policy values are NORed for each request value ("Conditions with
    multiple context keys or values"), and ForAnyValue needs one request value for which that
    holds: tag keys Dept and DataClass have one outside [DataClass, Owner]; DataClass and Owner
    have none."""
    condition = {"ForAnyValue:StringNotEquals": {"aws:TagKeys": ["DataClass", "Owner"]}}

    assert holds(condition, {"aws:TagKeys": ["Dept", "DataClass"]})
    assert not holds(condition, {"aws:TagKeys": ["DataClass", "Owner"]})


# ---------------------------------------------------------------- policy variables beside wildcards

def test_the_policy_s_own_wildcards_keep_their_meaning_around_a_variable():
    """A Resource may hold wildcards in any segment ("IAM JSON policy elements: Resource") and a
    variable in its resource part: David reads his folder under any project, and only his."""
    home = grant("s3:GetObject", f"{BUCKET}/*/${{aws:username}}/*")

    assert decide("s3:GetObject", f"{BUCKET}/vision/David/notes.txt", DAVID, identity=[policy(home)]).allowed
    assert not decide("s3:GetObject", f"{BUCKET}/vision/Adele/notes.txt", DAVID, identity=[policy(home)]).allowed


def test_wildcards_before_the_resource_part_keep_their_meaning_beside_a_variable_after_it():
    queues = grant("sqs:SendMessage", "arn:aws:sqs:*:*:${aws:username}-queue")

    assert decide("sqs:SendMessage", f"arn:aws:sqs:us-east-2:{ACCOUNT}:David-queue", DAVID, identity=[policy(queues)]).allowed
    assert not decide("sqs:SendMessage", f"arn:aws:sqs:us-east-2:{ACCOUNT}:Adele-queue", DAVID,
                      identity=[policy(queues)]).allowed


def test_a_wildcard_in_the_resource_part_keeps_its_meaning_when_only_the_account_part_holds_a_variable():
    """Before the fifth colon `${...}` is text; the resource part's `*` is still a wildcard."""
    queues = grant("sqs:SendMessage", "arn:aws:sqs:us-east-2:${aws:PrincipalAccount}:jobs-*")

    assert decide("sqs:SendMessage", "arn:aws:sqs:us-east-2:${aws:PrincipalAccount}:jobs-train", DAVID,
                  identity=[policy(queues)]).allowed


# ---------------------------------------------------------------- what a denied call's reason names

def test_an_implicit_deny_names_the_policies_it_looked_in_or_that_there_were_none():
    read_only = policy(grant("s3:GetObject", f"{BUCKET}/*"), name="node")

    assert decide("s3:PutObject", f"{BUCKET}/a", identity=[]).reason == (
        f"no statement allows s3:PutObject on {BUCKET}/a in no policy of {ROLE}")
    assert decide("s3:PutObject", f"{BUCKET}/a", identity=[read_only]).reason == (
        f"no statement allows s3:PutObject on {BUCKET}/a in node")


def test_another_account_s_role_let_in_by_a_bucket_policy_is_told_which_statement_and_account():
    shared = (BUCKET, policy(grant("s3:GetObject", f"{BUCKET}/*", Principal={"AWS": STRANGER}, sid="Partner"),
                             name="bucket"))

    denied = decide("s3:GetObject", f"{BUCKET}/a", STRANGER, identity=[policy(grant("s3:PutObject", f"{BUCKET}/*"))],
                    resource_policies=[shared])

    assert denied.reason == (f"bucket:Partner lets account {OTHER_ACCOUNT} in, and no identity policy of {STRANGER} "
                             f"allows s3:GetObject on {BUCKET}/a")


def test_another_account_s_role_named_by_a_key_policy_is_told_its_account():
    key_policy = policy(grant("kms:Decrypt", Principal={"AWS": STRANGER}, sid="Partner"), name="key policy")

    denied = decide("kms:Decrypt", KEY, STRANGER, identity=[policy(grant("s3:GetObject"))],
                    resource_policies=[(KEY, key_policy)])

    assert denied.reason == (f"key policy:Partner lets account {OTHER_ACCOUNT} in, and no identity policy of "
                             f"{STRANGER} allows kms:Decrypt on {KEY}")


# ---------------------------------------------------------------- the parsed-document cache

def test_a_document_is_parsed_once_while_used_and_the_cache_keeps_the_256_used_last(monkeypatch):
    """A plan checks hundreds of calls against a few documents: each is parsed once while it is
    among the 256 documents used last, and parsed again after it has dropped out."""
    parsed: list[int] = []
    real = access.parse_document

    def counting(document):
        parsed.append(id(document))
        return real(document)

    monkeypatch.setattr(access, "parse_document", counting)
    documents = [policy(grant("s3:GetObject", f"{BUCKET}/{index}/*")) for index in range(257)]

    def read(index: int) -> None:
        assert decide("s3:GetObject", f"{BUCKET}/{index}/a", identity=[documents[index]]).allowed

    for index in range(257):
        read(index)
    assert len(parsed) == 257
    for index in (256, 1):
        read(index)
    assert len(parsed) == 257, "the 256 used last are kept"
    read(0)
    assert len(parsed) == 258 and parsed[-1] == id(documents[0]), "the first, used 257 documents ago, dropped out"
