"""The Auto Scaling service-linked role the project key names: looked up, created where it is
missing unless the config says not to, kept on destroy; and the engine refuses, as KMS does, a key policy naming a role that does not exist."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest
from botocore.exceptions import ClientError

from support import deploy, minimal_config, settings_for
from gpucloud.config import ConfigError
from gpucloud.testing import run_program

SERVICE_ROLE = "AWSServiceRoleForAutoScaling"


def without_creating(**changes):
    return minimal_config(account={"createServiceLinkedRole": False}, **changes)


def test_a_missing_role_is_a_config_error_with_the_command_that_creates_it(account):
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(without_creating()), account)
    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:account.createServiceLinkedRole"
    assert "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com" in reason
    assert account.client("kms").list_keys()["Keys"] == []


def test_a_missing_role_is_created_first_and_kept_on_destroy_by_default(account):
    deployment = deploy(settings_for(minimal_config(account={})), account)
    [role] = deployment.of_type("aws:iam/serviceLinkedRole:ServiceLinkedRole")
    [key] = deployment.of_type("aws:kms/key:Key")
    assert role.retain_on_delete
    assert role.urn in key.dependencies
    created = account.client("iam").get_role(RoleName=SERVICE_ROLE)["Role"]
    assert created["Path"] == "/aws-service-role/autoscaling.amazonaws.com/"
    statements = json.loads(account.client("kms").get_key_policy(KeyId=key.id, PolicyName="default")["Policy"])["Statement"]
    assert created["Arn"] in [statement["Principal"].get("AWS") for statement in statements]


@pytest.mark.parametrize("create", [None, False])
def test_an_existing_role_is_used_as_it_is(account, create):
    """Never declared where it exists: AWS refuses a second one ("Service role name ... has been taken")."""
    account.client("iam").create_service_linked_role(AWSServiceName="autoscaling.amazonaws.com")
    deployment = deploy(settings_for(minimal_config(account={} if create is None else {"createServiceLinkedRole": create})), account)
    assert deployment.of_type("aws:iam/serviceLinkedRole:ServiceLinkedRole") == []
    assert deployment.of_type("aws:kms/key:Key")


def test_the_engine_refuses_a_key_policy_naming_a_role_that_does_not_exist(account):
    missing = f"arn:aws:iam::{account.account_id}:role/nobody"
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account.account_id}:root"}, "Action": "kms:*", "Resource": "*"},
        {"Effect": "Allow", "Principal": {"AWS": [missing]}, "Action": "kms:Decrypt", "Resource": "*"},
    ]}

    with pytest.raises(ClientError, match=f"MalformedPolicyDocumentException.*{missing} does not exist"):
        run_program(lambda: aws.kms.Key("key", policy=json.dumps(policy)), account)
    assert account.client("kms").list_keys()["Keys"] == []


def test_the_engine_takes_a_key_policy_naming_roles_that_exist(account):
    account.client("iam").create_role(RoleName="somebody", AssumeRolePolicyDocument="{}")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account.account_id}:root"}, "Action": "kms:*", "Resource": "*"},
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account.account_id}:role/somebody"},
         "Action": "kms:Decrypt", "Resource": "*"},
    ]}
    run_program(lambda: aws.kms.Key("key", policy=json.dumps(policy)), account)
    assert len(account.client("kms").list_keys()["Keys"]) == 1
