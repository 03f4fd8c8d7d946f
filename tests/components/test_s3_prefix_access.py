"""The node role's S3 access is real: a principal holding exactly the generated policy can do what
the config grants and nothing else, with moto enforcing IAM."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.core import set_initial_no_auth_action_count

from support import deploy, deployed_alone, minimal_config, settings_for

BUCKET = "demo-data"


@pytest.fixture(scope="module")
def generated_policy() -> dict:
    """The node role's policy as the stack leaves it in IAM: deployed once for the module, on an
    account of its own; a test that exercises it does so in its own fresh account."""
    with deployed_alone(settings_for(minimal_config())) as deployment:
        iam = deployment.client("iam")
        role = "gpu-cloud-demo-node"
        [policy_name] = iam.list_role_policies(RoleName=role)["PolicyNames"]
        return iam.get_role_policy(RoleName=role, PolicyName=policy_name)["PolicyDocument"]


def denied(call) -> bool:
    with pytest.raises(ClientError) as error:
        call()
    return error.value.response["Error"]["Code"] == "AccessDenied"


def test_write_prefix_allows_put_and_get_and_read_prefix_only_get(account, generated_policy):
    setup_calls = 5

    @set_initial_no_auth_action_count(setup_calls)
    def exercise():
        admin_s3 = account.client("s3")
        admin_s3.create_bucket(Bucket=BUCKET)
        admin_s3.put_object(Bucket=BUCKET, Key="datasets/train.csv", Body=b"a,b\n")
        iam = account.client("iam")
        iam.create_user(UserName="node")
        iam.put_user_policy(UserName="node", PolicyName="generated", PolicyDocument=json.dumps(generated_policy))
        key = iam.create_access_key(UserName="node")["AccessKey"]
        node = boto3.client(
            "s3",
            region_name=account.region,
            aws_access_key_id=key["AccessKeyId"],
            aws_secret_access_key=key["SecretAccessKey"],
        )

        node.put_object(Bucket=BUCKET, Key="runs/epoch-1.ckpt", Body=b"weights")
        assert node.get_object(Bucket=BUCKET, Key="runs/epoch-1.ckpt")["Body"].read() == b"weights"
        assert node.get_object(Bucket=BUCKET, Key="datasets/train.csv")["Body"].read() == b"a,b\n"

        assert denied(lambda: node.put_object(Bucket=BUCKET, Key="datasets/poison.csv", Body=b"x"))
        assert denied(lambda: node.get_object(Bucket=BUCKET, Key="secrets/other-team.txt"))
        assert denied(lambda: node.put_object(Bucket=BUCKET, Key="elsewhere/file", Body=b"x"))
        assert denied(lambda: node.put_object(Bucket=BUCKET, Key="runsX/outside-prefix", Body=b"x"))
        assert denied(lambda: node.delete_bucket(Bucket=BUCKET))

    exercise()


def test_list_bucket_is_limited_to_the_granted_prefixes(generated_policy):
    """moto ignores Condition blocks in identity policies, so the s3:prefix condition is checked here."""
    listing = [s for s in generated_policy["Statement"] if s["Action"] == "s3:ListBucket"]
    assert listing == [
        {
            "Sid": "ListOnlyGrantedPrefixes",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": f"arn:aws:s3:::{BUCKET}",
            "Condition": {"StringLike": {"s3:prefix": ["datasets/*", "runs/*"]}},
        }
    ]


def test_policy_has_no_wildcard_actions_and_star_resources_only_where_aws_requires(generated_policy):
    for statement in generated_policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert "*" not in actions and not any(action.endswith(":*") for action in actions)
        if statement["Resource"] == "*":
            assert "HaveNoResourceLevelPermissions" in statement["Sid"], statement
            assert not any(action.startswith(("s3:", "kms:")) for action in actions)
    kms = [s for s in generated_policy["Statement"] if s["Sid"] == "UseProjectKey"][0]
    assert kms["Resource"].startswith("arn:aws:kms:us-east-1:123456789012:key/")


def test_ssh_instead_of_session_manager_opens_22_and_drops_ssm_permissions(account):
    deploy(settings_for(minimal_config(access={"ssm": False, "sshCidrs": ["10.8.0.0/16"]})), account)
    iam = account.client("iam")
    document = iam.get_role_policy(RoleName="gpu-cloud-demo-node", PolicyName="gpu-cloud-node-access")["PolicyDocument"]
    actions = {a for s in document["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert not any(action.startswith(("ssm:", "ssmmessages:", "ec2messages:")) for action in actions)
    [group] = [g for g in account.client("ec2").describe_security_groups()["SecurityGroups"] if g["GroupName"] != "default"]
    assert [(p["FromPort"], p["IpRanges"][0]["CidrIp"]) for p in group["IpPermissions"]] == [(22, "10.8.0.0/16")]


def test_session_manager_is_granted_by_default(generated_policy):
    sids = {statement["Sid"] for statement in generated_policy["Statement"]}
    assert {"SessionManagerRegistersOwnInstance", "SessionManagerChannelsHaveNoResourceLevelPermissions"} <= sids
