"""The access evaluator on cases taken from AWS's documentation (IAM "Policy evaluation logic" and
"Condition operators", "Single-valued vs. multivalued context keys", KMS "Key policies" and
"Determining access to a KMS key", VPC "Control access to VPC endpoints using endpoint policies";
read 2026-11-28): one call, a handful of documents, the verdict and what decided it."""

from __future__ import annotations

import pytest

from gpucloud.policy.access import Call, Documents, evaluate

ACCOUNT = "111122223333"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpu-node"
OTHER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/someone-else"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
BUCKET = "arn:aws:s3:::amzn-s3-demo-bucket"
TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"


def policy(*statements: dict, name: str | None = None) -> dict:
    document = {"Version": "2012-10-17", "Statement": list(statements)}
    if name:
        document["Id"] = name
    return document


def allow(action, resource="*", **extra) -> dict:
    return {"Sid": extra.pop("Sid", "Allow"), "Effect": "Allow", "Action": action, "Resource": resource, **extra}


def deny(action, resource="*", **extra) -> dict:
    return {"Sid": extra.pop("Sid", "Deny"), "Effect": "Deny", "Action": action, "Resource": resource, **extra}


def call(action, resource, principal=ROLE, context=None, endpoint=None) -> Call:
    return Call(actor="node", principal=principal, action=action, resource=resource,
                context=context or {}, endpoint=endpoint)


def documents(identity=(), resource=(), endpoints=None, principal=ROLE) -> Documents:
    return Documents(identity={principal: list(identity)}, resource=list(resource),
                     endpoints=endpoints or {}, account=ACCOUNT)


def verdict(the_call: Call, the_documents: Documents) -> tuple[bool, str]:
    decision = evaluate(the_call, the_documents)
    return decision.allowed, decision.reason


# ---------------------------------------------------------------- policy evaluation logic

def test_nothing_allows_so_the_call_is_implicitly_denied():
    allowed, reason = verdict(call("s3:GetObject", f"{BUCKET}/a"), documents())

    assert not allowed and "no statement allows s3:GetObject" in reason


def test_an_explicit_deny_wins_over_an_allow_in_the_same_policy():
    identity = policy(allow("s3:*", f"{BUCKET}/*"), deny("s3:DeleteObject", f"{BUCKET}/*", Sid="NoDeletes"), name="node")

    assert verdict(call("s3:GetObject", f"{BUCKET}/a"), documents([identity]))[0]
    assert verdict(call("s3:DeleteObject", f"{BUCKET}/a"), documents([identity])) == (False, "denied by node:NoDeletes")


def test_a_deny_in_a_resource_policy_wins_over_an_identity_allow():
    bucket_policy = policy(deny("s3:GetObject", f"{BUCKET}/secret/*", Principal="*", Sid="NoSecrets"), name="bucket")
    the_documents = documents([policy(allow("s3:GetObject", f"{BUCKET}/*"))], [(BUCKET, bucket_policy)])

    assert verdict(call("s3:GetObject", f"{BUCKET}/secret/a"), the_documents) == (False, "denied by bucket:NoSecrets")
    assert verdict(call("s3:GetObject", f"{BUCKET}/public/a"), the_documents)[0]


def test_in_one_account_a_resource_policy_naming_the_role_is_enough_without_an_identity_allow():
    bucket_policy = policy(allow("s3:PutObject", f"{BUCKET}/*", Principal={"AWS": ROLE}, Sid="RoleWrites"), name="bucket")

    allowed, reason = verdict(call("s3:PutObject", f"{BUCKET}/a"), documents([], [(BUCKET, bucket_policy)]))

    assert allowed and reason == "allowed by bucket:RoleWrites"


def test_identity_and_resource_allows_add_up():
    """The Carlos example: his identity policy lets him read, the bucket policy lets him write."""
    identity = policy(allow(["s3:GetObject", "s3:ListBucket"], [BUCKET, f"{BUCKET}/*"]))
    bucket_policy = policy(allow("s3:PutObject", f"{BUCKET}/*", Principal={"AWS": [OTHER_ROLE, ROLE]}))
    the_documents = documents([identity], [(BUCKET, bucket_policy)])

    for action in ("s3:GetObject", "s3:PutObject"):
        assert verdict(call(action, f"{BUCKET}/a"), the_documents)[0], action
    assert not verdict(call("s3:DeleteObject", f"{BUCKET}/a"), the_documents)[0]


def test_a_resource_policy_naming_only_the_account_needs_an_identity_allow():
    bucket_policy = policy(allow("s3:GetObject", f"{BUCKET}/*", Principal={"AWS": ACCOUNT}))

    assert not verdict(call("s3:GetObject", f"{BUCKET}/a"), documents([], [(BUCKET, bucket_policy)]))[0]
    assert verdict(call("s3:GetObject", f"{BUCKET}/a"),
                   documents([policy(allow("s3:GetObject", f"{BUCKET}/*"))], [(BUCKET, bucket_policy)]))[0]


def test_a_deny_naming_the_account_root_applies_to_every_principal_of_the_account():
    bucket_policy = policy(deny("s3:*", [BUCKET, f"{BUCKET}/*"], Principal={"AWS": ROOT}, Sid="Locked"), name="bucket")
    the_documents = documents([policy(allow("s3:*", f"{BUCKET}/*"))], [(BUCKET, bucket_policy)])

    assert verdict(call("s3:GetObject", f"{BUCKET}/a"), the_documents) == (False, "denied by bucket:Locked")


def test_a_policy_on_another_resource_does_not_apply():
    other = policy(deny("s3:*", "*", Principal="*"))
    the_documents = documents([policy(allow("s3:GetObject", f"{BUCKET}/*"))], [("arn:aws:s3:::other-bucket", other)])

    assert verdict(call("s3:GetObject", f"{BUCKET}/a"), the_documents)[0]


# ---------------------------------------------------------------- KMS

DEFAULT_KEY_POLICY = policy({"Sid": "Enable IAM User Permissions", "Effect": "Allow",
                             "Principal": {"AWS": ROOT}, "Action": "kms:*", "Resource": "*"}, name="key policy")


def test_the_default_key_policy_delegates_to_iam_so_an_identity_policy_must_allow():
    denied = verdict(call("kms:Decrypt", KEY), documents([], [(KEY, DEFAULT_KEY_POLICY)]))
    allowed = verdict(call("kms:Decrypt", KEY), documents([policy(allow("kms:Decrypt", KEY))], [(KEY, DEFAULT_KEY_POLICY)]))

    assert not denied[0] and "lets IAM policies grant kms:Decrypt" in denied[1]
    assert allowed[0] and "key policy:Enable IAM User Permissions delegates to IAM" in allowed[1]


def test_without_a_key_policy_allowing_it_an_identity_allow_is_not_enough():
    key_policy = policy({"Sid": "Admins", "Effect": "Allow", "Principal": {"AWS": OTHER_ROLE},
                         "Action": "kms:*", "Resource": "*"}, name="key policy")

    allowed, reason = verdict(call("kms:Decrypt", KEY), documents([policy(allow("kms:*", KEY))], [(KEY, key_policy)]))

    assert not allowed and reason == f"no statement of key policy allows {ROLE} kms:Decrypt"


def test_a_key_policy_naming_the_role_is_enough_alone():
    key_policy = policy({"Sid": "NodeUsesKey", "Effect": "Allow", "Principal": {"AWS": ROLE},
                         "Action": ["kms:Decrypt", "kms:GenerateDataKey*"], "Resource": "*"}, name="key policy")

    assert verdict(call("kms:GenerateDataKeyWithoutPlaintext", KEY), documents([], [(KEY, key_policy)])) == (
        True, "allowed by key policy:NodeUsesKey")


def test_a_key_missing_from_the_plan_denies():
    allowed, reason = verdict(call("kms:Decrypt", KEY), documents([policy(allow("kms:Decrypt", KEY))]))

    assert not allowed and reason == f"no key policy for {KEY} in the plan"


def test_kms_via_service_and_caller_account_hold_a_grant_to_one_service():
    """The key policy example for kms:ViaService: any principal of the account, through one service."""
    key_policy = policy({
        "Sid": "ThroughParameterStore", "Effect": "Allow", "Principal": {"AWS": "*"},
        "Action": ["kms:Encrypt", "kms:Decrypt"], "Resource": "*",
        "Condition": {"StringEquals": {"kms:ViaService": ["ssm.us-east-1.amazonaws.com"],
                                       "kms:CallerAccount": ACCOUNT}},
    })
    through_ssm = call("kms:Encrypt", KEY, context={"kms:ViaService": "ssm.us-east-1.amazonaws.com"})
    direct = call("kms:Encrypt", KEY)

    assert verdict(through_ssm, documents([], [(KEY, key_policy)]))[0]
    assert not verdict(direct, documents([], [(KEY, key_policy)]))[0]


def test_the_deployer_is_taken_as_allowed_by_identity_but_still_needs_the_key_policy():
    via_root = verdict(call("kms:Encrypt", KEY, principal="deployer"), documents([], [(KEY, DEFAULT_KEY_POLICY)]))
    only_node = policy({"Sid": "Node", "Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "kms:*", "Resource": "*"})
    without_root = verdict(call("kms:Encrypt", KEY, principal="deployer"), documents([], [(KEY, only_node)]))

    assert via_root[0] and "deployer's own identity policy (not in the plan, taken as allowing)" in via_root[1]
    assert not without_root[0]


# ---------------------------------------------------------------- service principals

TOPIC_POLICY = policy({
    "Sid": "AlarmsPublish", "Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": "sns:Publish", "Resource": TOPIC, "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
}, name="topic policy")


def test_a_service_principal_is_allowed_only_by_a_resource_policy_naming_it():
    alarms = call("sns:Publish", TOPIC, principal="cloudwatch.amazonaws.com", context={"aws:SourceAccount": ACCOUNT})
    budgets = call("sns:Publish", TOPIC, principal="budgets.amazonaws.com", context={"aws:SourceAccount": ACCOUNT})

    assert verdict(alarms, documents([], [(TOPIC, TOPIC_POLICY)])) == (True, "allowed by topic policy:AlarmsPublish")
    denied = verdict(budgets, documents([], [(TOPIC, TOPIC_POLICY)]))
    assert not denied[0] and denied[1] == f"no resource policy allows budgets.amazonaws.com sns:Publish on {TOPIC}"


def test_a_service_principal_from_another_account_is_held_off_by_source_account():
    confused_deputy = call("sns:Publish", TOPIC, principal="cloudwatch.amazonaws.com",
                           context={"aws:SourceAccount": "444455556666"})

    assert not verdict(confused_deputy, documents([], [(TOPIC, TOPIC_POLICY)]))[0]


def test_a_service_principal_without_a_resource_policy_is_denied_and_told_so():
    allowed, reason = verdict(call("sns:Publish", TOPIC, principal="cloudwatch.amazonaws.com"), documents())

    assert not allowed and reason.endswith("(the resource has none in the plan)")


# ---------------------------------------------------------------- VPC endpoints

def test_an_endpoint_policy_must_also_allow_the_call():
    endpoint_policy = policy(allow(["s3:GetObject"], f"{BUCKET}/*", Principal="*"))
    identity = policy(allow("s3:*", ["arn:aws:s3:::*"]))
    the_documents = documents([identity], endpoints={"s3": endpoint_policy})

    assert verdict(call("s3:GetObject", f"{BUCKET}/a", endpoint="s3"), the_documents)[0]
    allowed, reason = verdict(call("s3:GetObject", "arn:aws:s3:::elsewhere/a", endpoint="s3"), the_documents)
    assert not allowed and reason == "no statement of the s3 endpoint policy allows s3:GetObject on arn:aws:s3:::elsewhere/a"


def test_an_endpoint_without_a_policy_keeps_the_full_access_default_and_grants_nothing_itself():
    assert verdict(call("s3:GetObject", f"{BUCKET}/a", endpoint="s3"),
                   documents([policy(allow("s3:GetObject", f"{BUCKET}/*"))]))[0]
    endpoint_policy = policy(allow("*", "*", Principal="*"))
    assert not verdict(call("s3:GetObject", f"{BUCKET}/a", endpoint="s3"), documents([], endpoints={"s3": endpoint_policy}))[0]


def test_an_endpoint_policy_deny_wins():
    endpoint_policy = policy(allow("*", "*", Principal="*"),
                             deny("s3:PutObject", "*", Principal="*", Sid="ReadOnly"))
    the_documents = documents([policy(allow("s3:PutObject", f"{BUCKET}/*"))], endpoints={"ssm": endpoint_policy})

    assert verdict(call("s3:PutObject", f"{BUCKET}/a", endpoint="ssm"), the_documents) == (
        False, "denied by ssm endpoint policy:ReadOnly")
    assert verdict(call("s3:PutObject", f"{BUCKET}/a", endpoint="s3"), the_documents)[0]


def test_an_endpoint_policy_holding_the_account_admits_its_principals_only():
    endpoint_policy = policy(allow("*", "*", Principal="*", Condition={"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}))
    identity = policy(allow("ssm:GetParameter", "*"))
    the_documents = documents([identity], endpoints={"ssm": endpoint_policy})
    stranger = "arn:aws:iam::444455556666:role/x"

    assert verdict(call("ssm:GetParameter", "*", endpoint="ssm"), the_documents)[0]
    assert not verdict(call("ssm:GetParameter", "*", principal=stranger, endpoint="ssm"),
                       Documents({stranger: [identity]}, [], {"ssm": endpoint_policy}, ACCOUNT))[0]


# ---------------------------------------------------------------- Action, Resource and their Not forms

def test_not_action_allows_everything_but_what_it_lists():
    """The doc's example: everything except IAM."""
    identity = policy({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})

    assert verdict(call("s3:ListAllMyBuckets", "*"), documents([identity]))[0]
    assert not verdict(call("iam:CreateUser", "*"), documents([identity]))[0]


def test_not_resource_in_a_deny_denies_every_other_resource():
    identity = policy(allow("s3:*", "*"), {"Sid": "OnlyOneBucket", "Effect": "Deny", "Action": "s3:*",
                                           "NotResource": [BUCKET, f"{BUCKET}/*"]}, name="node")

    assert verdict(call("s3:GetObject", f"{BUCKET}/a"), documents([identity]))[0]
    assert verdict(call("s3:GetObject", "arn:aws:s3:::other/a"), documents([identity])) == (
        False, "denied by node:OnlyOneBucket")


@pytest.mark.parametrize(("pattern", "action", "matches"), [
    ("s3:Get*", "s3:GetObject", True),
    ("S3:getobject", "s3:GetObject", True),  # action names ignore case
    ("s3:Get*", "s3:PutObject", False),
    ("ec2:*Instances", "ec2:DescribeInstances", True),
    ("kms:GenerateDataKey?", "kms:GenerateDataKey", False),
    ("*", "sns:Publish", True),
])
def test_action_wildcards(pattern, action, matches):
    assert verdict(call(action, "*"), documents([policy(allow(pattern, "*"))]))[0] is matches


@pytest.mark.parametrize(("pattern", "resource", "matches"), [
    (f"{BUCKET}/home/*", f"{BUCKET}/home/carlos/notes.txt", True),
    (f"{BUCKET}/home/*", f"{BUCKET}/Home/carlos", False),  # resources keep their case
    (f"{BUCKET}/???/a", f"{BUCKET}/abc/a", True),
    (f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:jobs", f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:jobs:*", False),
    (f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:jobs:*", f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:jobs:*", True),
])
def test_resource_wildcards(pattern, resource, matches):
    assert verdict(call("s3:GetObject", resource), documents([policy(allow("s3:GetObject", pattern))]))[0] is matches


# ---------------------------------------------------------------- conditions

def allowed_with(condition: dict, context: dict) -> bool:
    identity = policy(allow("ec2:RunInstances", "*", Condition=condition))
    return evaluate(call("ec2:RunInstances", "*", context=context), documents([identity])).allowed


def test_a_missing_key_fails_a_condition_and_satisfies_a_negated_one():
    assert not allowed_with({"StringLike": {"aws:RequestTag/team": "ml-*"}}, {})
    assert allowed_with({"StringNotLike": {"aws:RequestTag/team": "ml-*"}}, {})
    assert allowed_with({"ArnNotLike": {"aws:SourceArn": "arn:aws:s3:::x"}}, {})


def test_if_exists_is_true_without_the_key_and_checks_it_when_present():
    """The doc's example: StringEqualsIfExists on ec2:InstanceType."""
    condition = {"StringEqualsIfExists": {"ec2:InstanceType": ["t1.*", "t2.*", "m3.*"]}}

    assert allowed_with(condition, {})
    assert not allowed_with(condition, {"ec2:InstanceType": "p5.48xlarge"})
    assert allowed_with({"StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*", "m3.*"]}}, {"ec2:InstanceType": "t2.micro"})


def test_null_tests_whether_the_key_is_there():
    assert allowed_with({"Null": {"aws:TokenIssueTime": "true"}}, {})
    assert not allowed_with({"Null": {"aws:TokenIssueTime": "true"}}, {"aws:TokenIssueTime": "2026-11-28T10:00:00Z"})
    assert allowed_with({"Null": {"s3:prefix": "false"}}, {"s3:prefix": "jobs/"})
    assert not allowed_with({"Null": {"s3:prefix": "false"}}, {"s3:prefix": ""})


def test_values_of_a_key_are_ored_and_keys_are_anded():
    condition = {"StringEquals": {"aws:PrincipalTag/department": ["finance", "hr", "legal"],
                                  "aws:PrincipalTag/role": ["audit", "security"]}}

    assert allowed_with(condition, {"aws:PrincipalTag/department": "hr", "aws:PrincipalTag/role": "audit"})
    assert not allowed_with(condition, {"aws:PrincipalTag/department": "hr", "aws:PrincipalTag/role": "dev"})
    assert not allowed_with(condition, {"aws:PrincipalTag/department": "hr"})


def test_a_negated_operator_with_several_values_holds_when_none_match():
    condition = {"StringNotEquals": {"aws:PrincipalTag/department": ["finance", "hr"]}}

    assert allowed_with(condition, {"aws:PrincipalTag/department": "legal"})
    assert not allowed_with(condition, {"aws:PrincipalTag/department": "hr"})


def test_condition_key_names_ignore_case_and_string_equals_values_do_not():
    assert allowed_with({"StringEquals": {"AWS:PrincipalTag/Team": "ml"}}, {"aws:principaltag/team": "ml"})
    assert not allowed_with({"StringEquals": {"aws:PrincipalTag/team": "ML"}}, {"aws:PrincipalTag/team": "ml"})
    assert allowed_with({"StringEqualsIgnoreCase": {"aws:PrincipalTag/team": "ML"}}, {"aws:PrincipalTag/team": "ml"})


def test_for_any_value_needs_one_request_value_to_match():
    condition = {"ForAnyValue:StringEquals": {"aws:TagKeys": ["environment", "cost-center"]}}

    assert allowed_with(condition, {"aws:TagKeys": ["owner", "environment"]})
    assert not allowed_with(condition, {"aws:TagKeys": ["owner"]})
    assert not allowed_with(condition, {})


@pytest.mark.parametrize(("tag_keys", "matches"), [
    (["key1:legal"], False),
    (["key1:hr", "key1:personnel"], False),
    (["key2:audit"], True),
    (None, True),  # ForAllValues also holds when the request has no such key
])
def test_for_all_values_table_of_the_multivalued_keys_page(tag_keys, matches):
    """The DenyRestrictedTags example: a Deny that matches unless every tag key starts with key1."""
    identity = policy(allow("iam:TagUser", "*"), deny(["iam:Tag*", "iam:UnTag*"], "*", Sid="DenyRestrictedTags",
                                                       Condition={"ForAllValues:StringNotLike": {"aws:TagKeys": "key1*"}}))
    context = {} if tag_keys is None else {"aws:TagKeys": tag_keys}

    assert (not evaluate(call("iam:TagUser", "*", context=context), documents([identity])).allowed) is matches


def test_arn_conditions_match_each_part_on_its_own():
    alarm = f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:gpu-idle"

    assert allowed_with({"ArnLike": {"aws:SourceArn": f"arn:aws:cloudwatch:*:{ACCOUNT}:alarm:*"}}, {"aws:SourceArn": alarm})
    assert allowed_with({"ArnEquals": {"aws:SourceArn": f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:gpu-*"}},
                        {"aws:SourceArn": alarm})
    assert not allowed_with({"ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:*"}}, {"aws:SourceArn": alarm})


def test_principal_arn_is_known_for_a_role_without_the_call_giving_it():
    assert allowed_with({"ArnEquals": {"aws:PrincipalArn": ROLE}}, {})
    assert not allowed_with({"ArnNotEquals": {"aws:PrincipalArn": ROLE}}, {})
    assert allowed_with({"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}, {})


@pytest.mark.parametrize(("condition", "context", "matches"), [
    ({"Bool": {"aws:SecureTransport": "false"}}, {}, False),  # every call of the SDK is HTTPS
    ({"Bool": {"aws:MultiFactorAuthPresent": "true"}}, {"aws:MultiFactorAuthPresent": "True"}, True),
    ({"NumericLessThanEquals": {"s3:max-keys": "10"}}, {"s3:max-keys": "10"}, True),
    ({"NumericLessThan": {"s3:max-keys": "10"}}, {"s3:max-keys": "10"}, False),
    ({"NumericNotEquals": {"s3:max-keys": "10"}}, {"s3:max-keys": "ten"}, True),
    ({"DateGreaterThan": {"aws:CurrentTime": "2026-01-01T00:00:00Z"}}, {"aws:CurrentTime": "2026-11-28T12:00:00Z"}, True),
    ({"DateLessThan": {"aws:EpochTime": "1000"}}, {"aws:EpochTime": "999"}, True),
    ({"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}, {"aws:SourceIp": "203.0.113.7"}, True),
    ({"NotIpAddress": {"aws:SourceIp": "203.0.113.0/24"}}, {"aws:SourceIp": "203.0.113.7"}, False),
])
def test_other_operators(condition, context, matches):
    assert allowed_with(condition, context) is matches


def test_an_operator_aws_lacks_is_not_evaluated_as_a_pass():
    allowed, reason = verdict(call("ec2:RunInstances", "*"),
                              documents([policy(allow("ec2:RunInstances", "*", Condition={"StringSortOf": {"a": "b"}}))]))

    assert not allowed and reason == "cannot evaluate: unknown condition operator 'StringSortOf'"


def test_a_person_outside_the_plan_is_held_to_the_resource_side_only():
    """Reading the JupyterLab token: the person's own policy is the account's, the key policy is the stack's."""
    person = call("kms:Decrypt", KEY, principal="person:notebookUser",
                  context={"kms:ViaService": "ssm.us-east-1.amazonaws.com"})
    services_only = policy({"Sid": "ThroughEc2", "Effect": "Allow", "Principal": {"AWS": ROOT}, "Action": "kms:Decrypt",
                            "Resource": "*", "Condition": {"StringEquals": {"kms:ViaService": "ec2.us-east-1.amazonaws.com"}}})

    allowed = verdict(person, documents([], [(KEY, DEFAULT_KEY_POLICY)]))
    assert allowed[0] and "person:notebookUser's own identity policy (not in the plan" in allowed[1]
    assert not verdict(person, documents([], [(KEY, services_only)]))[0]


def test_an_anonymous_download_is_decided_by_the_endpoint_policy_alone():
    """Mountpoint's package from AWS's public bucket, unsigned, through the S3 gateway endpoint: a
    statement held to the account's principals does not admit it; one naming everyone does."""
    release = "arn:aws:s3:::mountpoint-s3-release/latest/x86_64/mount-s3.deb"
    account_only = policy(allow("s3:GetObject", "*", Principal="*",
                                Condition={"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}))
    with_release = policy(allow("s3:GetObject", "*", Principal="*",
                                Condition={"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}),
                          allow("s3:GetObject", "arn:aws:s3:::mountpoint-s3-release/*", Principal="*", Sid="Release"))
    download = call("s3:GetObject", release, principal="anonymous", endpoint="s3")

    assert not verdict(download, documents(endpoints={"s3": account_only}))[0]
    allowed, reason = verdict(download, documents(endpoints={"s3": with_release}))
    assert allowed and "public resource's own policy (not in the plan" in reason
