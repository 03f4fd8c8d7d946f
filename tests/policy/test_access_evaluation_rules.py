"""The access evaluator's rules that test_access_evaluation.py leaves without a case, each from the
page that states it (IAM user guide "Policy evaluation logic", "Cross-account policy evaluation
logic", "IAM JSON policy elements: NotPrincipal", "AWS global condition context keys"; KMS
developer guide "Default key policy" and "Allowing users in other accounts to use a KMS key";
all read 2026-11-28)."""

from __future__ import annotations

from gpucloud.policy.access import Call, Documents, evaluate

ACCOUNT = "111122223333"
OTHER_ACCOUNT = "444455556666"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/gpu-node"
STRANGER = f"arn:aws:iam::{OTHER_ACCOUNT}:role/partner"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
BUCKET = "arn:aws:s3:::amzn-s3-demo-bucket"
TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"


def policy(*statements: dict, name: str = "policy") -> dict:
    return {"Version": "2012-10-17", "Id": name, "Statement": list(statements)}


def grant(action, resource="*", effect="Allow", sid="Grant", **extra) -> dict:
    return {"Sid": sid, "Effect": effect, "Action": action, "Resource": resource, **extra}


def decide(action: str, resource: str, principal: str = ROLE, identity=None, resource_policies=(), context=None):
    documents = Documents(identity={principal: list(identity)} if identity is not None else {},
                          resource=list(resource_policies), endpoints={}, account=ACCOUNT)
    return evaluate(Call(actor="x", principal=principal, action=action, resource=resource, context=context or {},
                         endpoint=None), documents)


# ---------------------------------------------------------------- another account's principal

SHARED = (BUCKET, policy(grant("s3:GetObject", f"{BUCKET}/*", Principal={"AWS": STRANGER}), name="bucket"))


def test_another_account_s_role_needs_the_bucket_policy_even_with_its_identity_allow():
    allowed = decide("s3:GetObject", f"{BUCKET}/a", STRANGER, identity=[policy(grant("s3:GetObject", f"{BUCKET}/*"))])

    assert not allowed.allowed
    assert allowed.reason == (f"{STRANGER} is of account {OTHER_ACCOUNT}: no resource policy on {BUCKET}/a allows it "
                              "s3:GetObject, and its identity policy alone cannot")


def test_another_account_s_role_named_by_the_bucket_policy_still_needs_its_own_identity_allow():
    without = decide("s3:GetObject", f"{BUCKET}/a", STRANGER, identity=[policy(grant("s3:PutObject", f"{BUCKET}/*"))],
                     resource_policies=[SHARED])
    outside = decide("s3:GetObject", f"{BUCKET}/a", STRANGER, resource_policies=[SHARED])

    assert not without.allowed and "no identity policy of" in without.reason
    assert outside.allowed
    assert outside.reason == (f"allowed by bucket:Grant and {STRANGER}'s identity policy in its own account "
                              f"{OTHER_ACCOUNT} (not in the plan, taken as allowing)")


def test_a_bucket_policy_naming_another_account_lets_that_account_s_iam_decide():
    to_account = (BUCKET, policy(grant("s3:GetObject", f"{BUCKET}/*", Principal={"AWS": OTHER_ACCOUNT}), name="bucket"))

    assert decide("s3:GetObject", f"{BUCKET}/a", STRANGER, identity=[policy(grant("s3:*", "*"))],
                  resource_policies=[to_account]).allowed
    assert not decide("s3:GetObject", f"{BUCKET}/a", STRANGER, identity=[], resource_policies=[to_account]).allowed


def test_a_key_policy_naming_another_account_s_role_needs_that_role_s_identity_allow():
    key_policy = policy(grant(["kms:Decrypt"], Principal={"AWS": STRANGER}), name="key policy")

    denied = decide("kms:Decrypt", KEY, STRANGER, identity=[policy(grant("s3:GetObject"))], resource_policies=[(KEY, key_policy)])
    assert not denied.allowed and "no identity policy of" in denied.reason
    assert decide("kms:Decrypt", KEY, STRANGER, identity=[policy(grant("kms:Decrypt", KEY))],
                  resource_policies=[(KEY, key_policy)]).allowed


def test_another_account_s_identity_allow_does_not_open_a_key_whose_policy_names_only_this_account():
    default = policy(grant("kms:*", Principal={"AWS": ROOT}, sid="Enable IAM User Permissions"), name="key policy")

    assert not decide("kms:Decrypt", KEY, STRANGER, identity=[policy(grant("kms:*"))], resource_policies=[(KEY, default)]).allowed


# ---------------------------------------------------------------- other rules without a case yet

def test_not_principal_in_a_deny_denies_everyone_but_the_principals_it_names():
    only_node = (BUCKET, policy(grant("s3:*", [BUCKET, f"{BUCKET}/*"], "Deny", "OnlyTheNode",
                                      NotPrincipal={"AWS": [ROLE]}), name="bucket"))
    reader = [policy(grant("s3:GetObject", f"{BUCKET}/*"))]
    other = f"arn:aws:iam::{ACCOUNT}:role/someone-else"

    assert decide("s3:GetObject", f"{BUCKET}/a", ROLE, identity=reader, resource_policies=[only_node]).allowed
    assert decide("s3:GetObject", f"{BUCKET}/a", other, identity=reader, resource_policies=[only_node]).reason == (
        "denied by bucket:OnlyTheNode")


def test_a_policy_that_is_no_policy_is_not_evaluated_as_a_pass():
    decision = decide("s3:GetObject", f"{BUCKET}/a", identity=[{"Version": "2012-10-17"}])

    assert not decision.allowed and decision.reason == "cannot evaluate: a policy is not a policy: no top-level Statement"


def test_a_kms_action_on_no_key_is_decided_by_the_identity_policy_alone():
    """kms:ListAliases has no key to hold a key policy: the identity policy decides."""
    assert decide("kms:ListAliases", "*", identity=[policy(grant("kms:ListAliases"))]).allowed
    assert not decide("kms:ListAliases", "*", identity=[]).allowed


def test_the_account_root_statement_of_a_key_policy_admits_no_aws_service():
    """The default key policy delegates to the account's IAM policies; a service principal has
    none, so the key policy must name the service."""
    default = policy(grant("kms:*", Principal={"AWS": ROOT}), name="key policy")
    naming_logs = policy(grant(["kms:GenerateDataKey*"], Principal={"Service": "logs.us-east-1.amazonaws.com"}), name="key policy")

    assert not decide("kms:GenerateDataKey", KEY, "logs.us-east-1.amazonaws.com", resource_policies=[(KEY, default)]).allowed
    assert decide("kms:GenerateDataKey", KEY, "logs.us-east-1.amazonaws.com", resource_policies=[(KEY, naming_logs)]).allowed


def test_a_service_principal_s_calls_carry_its_service_name():
    topic_policy = (TOPIC, policy(grant("sns:Publish", TOPIC, Principal="*",
                                        Condition={"StringEquals": {"aws:PrincipalServiceName": "budgets.amazonaws.com"}}),
                                  name="topic policy"))

    assert decide("sns:Publish", TOPIC, "budgets.amazonaws.com", resource_policies=[topic_policy]).allowed
    assert not decide("sns:Publish", TOPIC, "cloudwatch.amazonaws.com", resource_policies=[topic_policy]).allowed


def test_an_identity_deny_wins_over_a_key_policy_naming_the_role():
    key_policy = policy(grant("kms:Decrypt", Principal={"AWS": ROLE}, sid="NodeDecrypts"), name="key policy")
    no_kms = policy(grant("kms:*", effect="Deny", sid="NoKms"), name="node")

    assert decide("kms:Decrypt", KEY, identity=[no_kms], resource_policies=[(KEY, key_policy)]).reason == "denied by node:NoKms"


def test_a_bucket_policy_naming_everyone_allows_a_role_of_the_account_without_its_identity_allow():
    everyone = (BUCKET, policy(grant("s3:GetObject", f"{BUCKET}/*", Principal="*"), name="bucket"))

    assert decide("s3:GetObject", f"{BUCKET}/a", identity=[], resource_policies=[everyone]).reason == "allowed by bucket:Grant"


def test_every_signed_call_is_taken_as_made_over_tls():
    tls_only = (BUCKET, policy(grant("s3:*", "*", "Deny", "TlsOnly", Principal="*",
                                     Condition={"Bool": {"aws:SecureTransport": "false"}}), name="bucket"))
    reader = [policy(grant("s3:GetObject", f"{BUCKET}/*"))]

    assert decide("s3:GetObject", f"{BUCKET}/a", identity=reader, resource_policies=[tls_only]).allowed
    assert not decide("s3:GetObject", f"{BUCKET}/a", identity=reader, resource_policies=[tls_only],
                      context={"aws:SecureTransport": "false"}).allowed


def test_an_endpoint_policy_naming_the_account_admits_its_principals_and_no_other():
    """An endpoint policy grants nothing itself; naming the account root lets every principal of
    the account through (VPC user guide, "Control access to VPC endpoints using endpoint policies";
    read 2026-11-28)."""
    endpoint = policy(grant("s3:GetObject", "*", Principal={"AWS": ROOT}), name="s3 endpoint policy")
    identity = [policy(grant("s3:GetObject", f"{BUCKET}/*"))]

    def through(principal: str) -> bool:
        documents = Documents(identity={principal: identity}, resource=[SHARED], endpoints={"s3": endpoint}, account=ACCOUNT)
        return evaluate(Call("x", principal, "s3:GetObject", f"{BUCKET}/a", {}, "s3"), documents).allowed

    assert through(ROLE)
    assert not through(STRANGER)
