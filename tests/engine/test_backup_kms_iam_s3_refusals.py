"""What AWS Backup, KMS, IAM, S3 and VPC refuse but moto accepts, refused by the engine first:
backup names over 50 characters, a key policy that would lock its creator out, a role's inline
policies over IAM's 10,240 characters, access logs to a bucket S3 cannot deliver them to, a
lifecycle rule of zero days, an endpoint policy over 20,480 characters."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pytest
from botocore.exceptions import ClientError

from gpucloud.testing import run_program

TOO_LONG = "gpu-cloud-" + "b" * 41
"""51 characters: one over AWS Backup's limit for plan and selection names."""


def test_a_backup_plan_name_over_fifty_characters_is_refused(account):
    def program():
        vault = aws.backup.Vault("vault", name="gpu-cloud-team")
        aws.backup.Plan("plan", name=TOO_LONG, rules=[{"rule_name": "daily", "target_vault_name": vault.name}])

    with pytest.raises(ClientError, match=f"backup plan name '{TOO_LONG}' \\(51 characters\\)"):
        run_program(program, account)


def test_a_backup_selection_name_over_fifty_characters_is_refused(account):
    def program():
        vault = aws.backup.Vault("vault", name="gpu-cloud-team")
        plan = aws.backup.Plan("plan", name="gpu-cloud-team", rules=[{"rule_name": "daily", "target_vault_name": vault.name}])
        role = aws.iam.Role("backup", name="backup", assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": []}))
        aws.backup.Selection("selection", name=TOO_LONG, plan_id=plan.id, iam_role_arn=role.arn)

    # The provider's own rule (selection.go: 1 to 50) or AWS Backup's, whichever the engine checks first.
    with pytest.raises(Exception, match=r"gpu-cloud-b{41}\W.*51"):
        run_program(program, account)


def test_a_key_policy_that_would_not_let_the_account_change_it_is_refused(account):
    root = f"arn:aws:iam::{account.account_id}:root"
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": root}, "Action": ["kms:Describe*", "kms:Enable*"], "Resource": "*"},
    ]}

    def program():
        aws.kms.Key("key", policy=json.dumps(policy))

    with pytest.raises(ClientError, match="will not allow you to update the key policy"):
        run_program(program, account)


def test_inline_policies_over_iams_limit_for_one_role_are_refused(account):
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket/" + "p" * 5200}

    def program():
        role = aws.iam.Role("node", name="node", assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": []}))
        first = aws.iam.RolePolicy("first", role=role.name, name="first",
                                   policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]}))
        aws.iam.RolePolicy("second", role=role.name, name="second",
                           policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
                           opts=pulumi.ResourceOptions(depends_on=[first]))

    with pytest.raises(ClientError, match="Maximum policy size of 10240 bytes exceeded for role node"):
        run_program(program, account)


def test_access_logs_to_a_bucket_encrypted_with_kms_by_default_are_refused(account):
    def program():
        key = aws.kms.Key("key")
        source = aws.s3.Bucket("source", bucket="team-artifacts-source")
        logs = aws.s3.Bucket("logs", bucket="team-artifacts-logs")
        encryption = aws.s3.BucketServerSideEncryptionConfiguration(
            "logs", bucket=logs.id,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms", "kms_master_key_id": key.arn}}])
        aws.s3.BucketLogging("logging", bucket=source.id, target_bucket=logs.id, target_prefix="source/",
                             opts=pulumi.ResourceOptions(depends_on=[encryption]))

    with pytest.raises(ClientError, match="SSE-KMS: S3 delivers no server access logs"):
        run_program(program, account)


def logging_into(policy_for_delivery):
    """A program that logs one bucket into another whose policy `policy_for_delivery(logs_arn)` makes."""
    def program():
        source = aws.s3.Bucket("source", bucket="team-artifacts-source")
        logs = aws.s3.Bucket("logs", bucket="team-artifacts-logs")
        policy = aws.s3.BucketPolicy("logs", bucket=logs.id,
                                     policy=logs.arn.apply(lambda arn: json.dumps(policy_for_delivery(arn))))
        aws.s3.BucketLogging("logging", bucket=source.id, target_bucket=logs.id, target_prefix="source/",
                             opts=pulumi.ResourceOptions(depends_on=[policy]))
    return program


def delivery_statement(resource: str) -> dict:
    return {"Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"},
            "Action": "s3:PutObject", "Resource": resource}


def test_access_logs_to_a_bucket_whose_policy_lets_log_delivery_write_nothing_there_are_refused(account):
    other_prefix = logging_into(lambda arn: {"Version": "2012-10-17", "Statement": [delivery_statement(f"{arn}/other/*")]})

    with pytest.raises(ClientError, match="lets logging.s3.amazonaws.com put no object under source/"):
        run_program(other_prefix, account)


def test_access_logs_to_a_bucket_whose_policy_lets_log_delivery_write_under_the_prefix_are_taken(account):
    deployment = run_program(
        logging_into(lambda arn: {"Version": "2012-10-17", "Statement": [delivery_statement(f"{arn}/source/*")]}), account)

    assert [r.type for r in deployment.resources if r.type == "aws:s3/bucketLogging:BucketLogging"]


def test_a_lifecycle_rule_of_zero_days_is_refused(account):
    def program():
        bucket = aws.s3.Bucket("bucket", bucket="team-lifecycle")
        aws.s3.BucketLifecycleConfiguration("rules", bucket=bucket.id, rules=[{
            "id": "expire", "status": "Enabled", "filter": {"prefix": ""}, "noncurrent_version_expiration": {"noncurrent_days": 0},
        }])

    # The provider's own rule (at least 1) or S3's, whichever the engine checks first.
    with pytest.raises(Exception, match=r"(?i)noncurrentDays.{0,40}\b0\b"):
        run_program(program, account)


def test_an_endpoint_policy_over_the_vpc_limit_is_refused(account):
    statement = {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/" + "p" * 20500}

    def program():
        vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
        aws.ec2.VpcEndpoint("s3", vpc_id=vpc.id, service_name="com.amazonaws.us-east-1.s3", vpc_endpoint_type="Gateway",
                            policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]}))

    with pytest.raises(ClientError, match="over the 20480 AWS takes"):
        run_program(program, account)


def endpoint_program(service: str, policy: dict | None):
    def program():
        vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
        subnet = aws.ec2.Subnet("nodes", vpc_id=vpc.id, cidr_block="10.0.0.0/24", availability_zone="us-east-1a")
        aws.ec2.VpcEndpoint(service, vpc_id=vpc.id, service_name=f"com.amazonaws.us-east-1.{service}",
                            vpc_endpoint_type="Interface", subnet_ids=[subnet.id],
                            policy=json.dumps(policy) if policy else None)
    return program


ACCOUNT_ONLY = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*",
    "Condition": {"StringEquals": {"aws:PrincipalAccount": "123456789012"}}}]}


def test_an_endpoint_policy_on_a_service_that_takes_none_is_refused(account):
    with pytest.raises(ClientError, match="ssmmessages does not support VPC endpoint policies"):
        run_program(endpoint_program("ssmmessages", ACCOUNT_ONLY), account)


def test_a_changed_endpoint_policy_is_applied_in_place(account):
    """Interface endpoints got policies after stacks were deployed without: the update reaches
    moto (ModifyVpcEndpoint), and dropping the policy brings back AWS's default."""
    first = run_program(endpoint_program("logs", None), account)
    second = run_program(endpoint_program("logs", ACCOUNT_ONLY), account, previous=first)
    [endpoint] = account.client("ec2").describe_vpc_endpoints()["VpcEndpoints"]
    assert json.loads(endpoint["PolicyDocument"]) == ACCOUNT_ONLY

    run_program(endpoint_program("logs", None), account, previous=second)
    [endpoint] = account.client("ec2").describe_vpc_endpoints()["VpcEndpoints"]
    assert json.loads(endpoint["PolicyDocument"])["Statement"] == [
        {"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"}]
