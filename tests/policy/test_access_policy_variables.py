"""Policy variables in the access evaluator, on the cases of the IAM user guide's "IAM policy
elements: Variables and tags" and "AWS global condition context keys", and the Session Manager
user guide's "Additional sample IAM policies for Session Manager" (Example 3, ending only the
sessions one started); all read 2026-11-28."""

from __future__ import annotations

from gpucloud.policy.access import Call, Documents, evaluate

ACCOUNT = "111122223333"
DAVID = f"arn:aws:iam::{ACCOUNT}:user/David"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/notebook"
BUCKET = "arn:aws:s3:::amzn-s3-demo-bucket"
SESSION = f"arn:aws:ssm:us-east-1:{ACCOUNT}:session"
ANNA = "AROADBQP57FF2AEXAMPLE:anna"
BEN = "AROADBQP57FF2AEXAMPLE:ben"


def allowed(principal: str, action: str, resource: str, *statements: dict, context=None, version="2012-10-17") -> bool:
    document = {"Statement": list(statements), **({"Version": version} if version else {})}
    call = Call(actor="person", principal=principal, action=action, resource=resource, context=context or {}, endpoint=None)
    return evaluate(call, Documents(identity={principal: [document]}, resource=[], endpoints={}, account=ACCOUNT)).allowed


def statement(action: str, resource: str, effect: str = "Allow", **extra) -> dict:
    return {"Effect": effect, "Action": action, "Resource": resource, **extra}


HOME = statement("s3:GetObject", f"{BUCKET}/${{aws:username}}/*")


def test_a_user_s_name_in_the_resource_holds_each_user_to_their_own_folder():
    assert allowed(DAVID, "s3:GetObject", f"{BUCKET}/David/notes.txt", HOME)
    assert not allowed(DAVID, "s3:GetObject", f"{BUCKET}/Adele/notes.txt", HOME)


def test_a_role_has_no_user_name_so_a_statement_using_it_matches_nothing():
    assert not allowed(ROLE, "s3:GetObject", f"{BUCKET}/notebook/notes.txt", HOME)
    assert not allowed(ROLE, "s3:GetObject", f"{BUCKET}/${{aws:username}}/notes.txt", HOME), "never the literal text"


def test_an_unresolvable_variable_voids_a_deny_too():
    """A Deny whose negated condition names `${aws:username}`: for a user outside his folder it
    denies; for a role the statement is invalid, so it denies nothing."""
    everything = statement("s3:ListBucket", BUCKET, Sid="List")
    outside_home = statement("s3:ListBucket", BUCKET, "Deny", Condition={"StringNotLike": {"s3:prefix": "${aws:username}/*"}})

    assert not allowed(DAVID, "s3:ListBucket", BUCKET, everything, outside_home, context={"s3:prefix": "Adele/"})
    assert allowed(DAVID, "s3:ListBucket", BUCKET, everything, outside_home, context={"s3:prefix": "David/"})
    assert allowed(ROLE, "s3:ListBucket", BUCKET, everything, outside_home, context={"s3:prefix": "Adele/"})


def test_a_role_ends_only_the_sessions_tagged_with_its_own_user_id():
    own_sessions = statement("ssm:TerminateSession", f"{SESSION}/*",
                             Condition={"StringLike": {"ssm:resourceTag/aws:ssmmessages:session-id": "${aws:userid}"}})

    def terminate(owner: str, caller: str = ANNA) -> bool:
        return allowed(ROLE, "ssm:TerminateSession", f"{SESSION}/anna-0a1b2c3d4e5f67890", own_sessions,
                       context={"aws:userid": caller, "ssm:resourceTag/aws:ssmmessages:session-id": owner})

    assert terminate(ANNA)
    assert not terminate(BEN)
    assert not allowed(ROLE, "ssm:TerminateSession", f"{SESSION}/anna-0a1b2c3d4e5f67890", own_sessions,
                       context={"ssm:resourceTag/aws:ssmmessages:session-id": ANNA}), "no user id: nothing matches"


def test_a_principal_tag_names_the_resource():
    department = statement("s3:GetObject", f"{BUCKET}/${{aws:PrincipalTag/department}}/*")

    assert allowed(ROLE, "s3:GetObject", f"{BUCKET}/finance/q3.csv", department, context={"aws:PrincipalTag/department": "finance"})
    assert not allowed(ROLE, "s3:GetObject", f"{BUCKET}/hr/q3.csv", department, context={"aws:PrincipalTag/department": "finance"})
    assert not allowed(ROLE, "s3:GetObject", f"{BUCKET}/finance/q3.csv", department), "an untagged principal"


def test_without_the_2012_version_a_variable_is_plain_text():
    assert allowed(ROLE, "s3:GetObject", f"{BUCKET}/${{aws:username}}/x", HOME, version=None)
    assert not allowed(DAVID, "s3:GetObject", f"{BUCKET}/David/x", HOME, version="2008-10-17")


def test_only_the_resource_part_of_an_arn_takes_a_variable():
    queue = statement("sqs:SendMessage", "arn:aws:sqs:us-east-2:${aws:PrincipalAccount}:${aws:username}-queue")

    assert not allowed(DAVID, "sqs:SendMessage", f"arn:aws:sqs:us-east-2:{ACCOUNT}:David-queue", queue)
    assert allowed(DAVID, "sqs:SendMessage", "arn:aws:sqs:us-east-2:${aws:PrincipalAccount}:David-queue", queue)


def test_a_default_stands_in_for_a_missing_key():
    shared = statement("s3:GetObject", f"{BUCKET}/${{aws:username, 'shared'}}/*")

    assert allowed(ROLE, "s3:GetObject", f"{BUCKET}/shared/readme", shared)
    assert allowed(DAVID, "s3:GetObject", f"{BUCKET}/David/readme", shared)
    assert not allowed(DAVID, "s3:GetObject", f"{BUCKET}/shared/readme", shared)


def test_the_special_variables_are_their_characters_never_wildcards():
    star = statement("s3:GetObject", f"{BUCKET}/literal${{*}}")

    assert allowed(ROLE, "s3:GetObject", f"{BUCKET}/literal*", star)
    assert not allowed(ROLE, "s3:GetObject", f"{BUCKET}/literalX", star)


def test_a_user_name_with_wildcard_meaning_in_a_string_like_value_matches_only_itself():
    """The variable's value is matched as it is; the policy's own `*` keeps its meaning."""
    like = statement("s3:ListBucket", BUCKET, Condition={"StringLike": {"s3:prefix": "${aws:PrincipalTag/team}/*"}})

    assert allowed(ROLE, "s3:ListBucket", BUCKET, like, context={"aws:PrincipalTag/team": "ml?", "s3:prefix": "ml?/runs"})
    assert not allowed(ROLE, "s3:ListBucket", BUCKET, like, context={"aws:PrincipalTag/team": "ml?", "s3:prefix": "mlx/runs"})


def test_variables_count_in_string_and_arn_conditions_only():
    numeric = statement("s3:ListBucket", BUCKET, Condition={"NumericEquals": {"s3:max-keys": "${aws:PrincipalTag/limit}"}})
    equals = statement("s3:ListBucket", BUCKET, Condition={"StringEquals": {"s3:prefix": "${aws:PrincipalTag/team}"}})
    arn = statement("s3:ListBucket", BUCKET, Condition={"ArnLike": {"aws:SourceArn": "arn:aws:sns:*:*:${aws:PrincipalTag/team}"}})
    tags = {"aws:PrincipalTag/limit": "10", "aws:PrincipalTag/team": "ml"}

    assert not allowed(ROLE, "s3:ListBucket", BUCKET, numeric, context={**tags, "s3:max-keys": "10"})
    assert allowed(ROLE, "s3:ListBucket", BUCKET, equals, context={**tags, "s3:prefix": "ml"})
    assert allowed(ROLE, "s3:ListBucket", BUCKET, arn, context={**tags, "aws:SourceArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:ml"})
    assert not allowed(ROLE, "s3:ListBucket", BUCKET, arn, context={**tags, "aws:SourceArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:cv"})
