"""What a stack names but does not create, put into the moto account from account facts: the
data bucket in its region, the account's ECR repositories, security groups under their ids, ACM
certificates under their ARNs, SSM parameters and Secrets Manager secrets (without their values)."""

from __future__ import annotations

import re

from gpucloud.testing.registry import Account

ECR_REPOSITORY_URI = re.compile(
    r"(?P<account>[0-9]{12})\.dkr\.ecr[^.]*\.(?P<region>[a-z0-9-]+)\.[a-z.]+/(?P<repository>.+)")


def seed_repository(account: Account, repository: str) -> None:
    """The repository, in its region, where it is the engine account's own."""
    match = ECR_REPOSITORY_URI.fullmatch(repository)
    if match and match["account"] == account.account_id:
        account.session.client("ecr", region_name=match["region"]).create_repository(repositoryName=match["repository"])


def seed_security_group(ec2, group_id: str, vpc_id: str) -> None:
    """The group under its id, in its VPC where the facts seeded that VPC, else in the default one
    (moto draws group ids from a module function and takes no custom one)."""
    import moto.ec2.models.security_groups as groups

    in_vpc = {"VpcId": vpc_id} if ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Vpcs"] else {}
    original = groups.random_security_group_id
    groups.random_security_group_id = lambda: group_id
    try:
        ec2.create_security_group(GroupName=group_id, Description="from account facts", **in_vpc)
    finally:
        groups.random_security_group_id = original


def seed_bucket(account: Account, name: str, region: str) -> None:
    """The bucket, in its own region (a client of that region creates it there)."""
    s3 = account.session.client("s3", region_name=region)
    where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    s3.create_bucket(Bucket=name, **where)


def seed_certificate(account: Account, arn: str, domain: str = "", status: str = "ISSUED") -> None:
    """The certificate in moto's ACM under its ARN, in its region (moto draws a certificate's ARN
    itself: the bundle is filed again under the one given)."""
    from moto.acm.models import CertBundle, acm_backends

    region = arn.split(":")[3]
    backend = acm_backends[account.account_id][region]
    if arn in backend._certificates:
        return
    bundle = CertBundle.generate_cert(domain or "certificate.example.com", account_id=account.account_id, region=region)
    bundle.arn, bundle.status, bundle.type = arn, status, "AMAZON_ISSUED"
    backend._certificates[arn] = bundle


def seed_parameter(account: Account, name: str, parameter_type: str, key_id: str) -> None:
    """The parameter, with a stand-in value: its value is never a fact."""
    extra = {"KeyId": key_id} if parameter_type == "SecureString" and key_id else {}
    account.client("ssm").put_parameter(Name=name, Value="(not recorded)", Type=parameter_type, **extra)


def seed_secret(account: Account, name: str) -> None:
    """The secret, by name, with a stand-in value: its value is never a fact."""
    account.client("secretsmanager").create_secret(Name=name, SecretString="(not recorded)")
