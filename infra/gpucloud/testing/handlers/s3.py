"""S3 buckets, their settings and policies, and objects (the artifacts bucket and agent bundle)."""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import urllib.parse
from typing import Any

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.handlers.statements import listed, statements
from gpucloud.testing.registry import (
    Account,
    Created,
    ResourceRequest,
    aws_tags,
    drop_none,
    invoke,
    refused,
    resource,
)

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
OBJECT_TAG_LIMIT = 10
"""S3 user guide, "Categorizing your objects using tags": up to 10 tags per object (read 2026-11-25)."""


def bucket_name_problem(name: str) -> str | None:
    """Why S3 refuses a general purpose bucket name, or None (S3 user guide, "General purpose bucket
    naming rules", https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html,
    read 2026-11-24). moto checks only the length and characters."""
    if not _BUCKET_NAME.match(name):
        return "must be 3-63 characters of lowercase letters, digits, '.' and '-', starting and ending with a letter or digit"
    if ".." in name:
        return "must not contain two adjacent periods"
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return "must not be formatted as an IP address"
    if name.startswith(_RESERVED_PREFIXES) or name.endswith(_RESERVED_SUFFIXES):
        return "uses a prefix or suffix that S3 keeps reserved"
    return None


@resource("aws:s3/bucket:Bucket")
def create_bucket(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name("bucket")
    problem = bucket_name_problem(name)
    if problem:
        raise refused("CreateBucket", "InvalidBucketName", f"The specified bucket {name!r} is not valid: it {problem}")
    s3 = account.client("s3")
    configuration = {} if account.region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": account.region}}
    s3.create_bucket(Bucket=name, **configuration)
    if inputs.get("tags"):
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": aws_tags(inputs["tags"])})
    return Created(
        id=name,
        outputs={
            "arn": f"arn:aws:s3:::{name}",
            "bucket": name,
            "bucketDomainName": f"{name}.s3.amazonaws.com",
            "bucketRegionalDomainName": f"{name}.s3.{account.region}.amazonaws.com",
            "region": account.region,
            "forceDestroy": bool(inputs.get("forceDestroy")),
        },
    )


@resource("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
def block_public_access(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    settings = {
        "BlockPublicAcls": "blockPublicAcls",
        "IgnorePublicAcls": "ignorePublicAcls",
        "BlockPublicPolicy": "blockPublicPolicy",
        "RestrictPublicBuckets": "restrictPublicBuckets",
    }
    account.client("s3").put_public_access_block(
        Bucket=inputs["bucket"],
        PublicAccessBlockConfiguration={field: bool(inputs.get(name)) for field, name in settings.items()},
    )
    return Created(id=inputs["bucket"])


@resource("aws:s3/bucketOwnershipControls:BucketOwnershipControls")
def set_ownership(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    account.client("s3").put_bucket_ownership_controls(
        Bucket=inputs["bucket"],
        OwnershipControls={"Rules": [{"ObjectOwnership": inputs["rule"]["objectOwnership"]}]},
    )
    return Created(id=inputs["bucket"])


@resource("aws:s3/bucketVersioning:BucketVersioning")
def set_versioning(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    account.client("s3").put_bucket_versioning(
        Bucket=inputs["bucket"],
        VersioningConfiguration={"Status": inputs["versioningConfiguration"]["status"]},
    )
    return Created(id=inputs["bucket"])


@resource("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
def set_default_encryption(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    rules = []
    for rule in inputs["rules"]:
        default = rule.get("applyServerSideEncryptionByDefault") or {}
        require_key(account, default.get("kmsMasterKeyId"), request.name)
        rules.append(drop_none({
            "ApplyServerSideEncryptionByDefault": drop_none({
                "SSEAlgorithm": default.get("sseAlgorithm"), "KMSMasterKeyID": default.get("kmsMasterKeyId"),
            }),
            "BucketKeyEnabled": rule.get("bucketKeyEnabled"),
        }))
    account.client("s3").put_bucket_encryption(
        Bucket=inputs["bucket"], ServerSideEncryptionConfiguration={"Rules": rules}
    )
    return Created(id=inputs["bucket"])


def _resources_outside(bucket: str, policy: dict[str, Any]) -> list[str]:
    """Resources a bucket policy names that are neither the bucket nor its objects: S3 refuses such
    a policy with "Policy has invalid resource" (S3 user guide, "Bucket policy examples"; moto
    stores it). Partitions are matched loosely, as the policy may name any of them."""
    allowed = re.compile(rf"^arn:aws[a-z-]*:s3:::{re.escape(bucket)}(/.*)?$")
    found = []
    for statement in statements(policy):
        for arn in listed(statement.get("Resource")):
            if not allowed.match(arn):
                found.append(arn)
    return found


@resource("aws:s3/bucketPolicy:BucketPolicy")
def set_bucket_policy(account: Account, request: ResourceRequest) -> Created:
    """Checked, then recorded without reaching moto: moto applies a bucket policy's statements to
    every object request with their conditions ignored (moto.s3.models, put_bucket_policy:
    "Conditions are not taken into account"), so a TLS-only or principal-scoped Deny would refuse
    every read and write, which AWS does not."""
    inputs = request.inputs
    bucket, policy = inputs["bucket"], inputs["policy"]
    account.client("s3").head_bucket(Bucket=bucket)
    try:
        document = json.loads(policy)
    except ValueError as error:
        raise refused("PutBucketPolicy", "MalformedPolicy", f"Policies must be valid JSON: {error}") from None
    outside = _resources_outside(bucket, document)
    if outside:
        raise refused("PutBucketPolicy", "MalformedPolicy", f"Policy has invalid resource: {', '.join(outside)}")
    return Created(
        id=bucket,
        validated=False,
        note="bucket policy checked (JSON, resources) and recorded; moto would enforce it without its conditions",
    )


@resource("aws:s3/bucketObjectv2:BucketObjectv2")
def put_object(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    tags = inputs.get("tags") or {}
    if len(tags) > OBJECT_TAG_LIMIT:
        raise refused("PutObject", "InvalidTag", f"Object tags cannot be greater than {OBJECT_TAG_LIMIT}")
    require_key(account, inputs.get("kmsKeyId"), request.name)
    if "contentBase64" in inputs:
        body = base64.b64decode(inputs["contentBase64"])
    else:
        body = (inputs.get("content") or "").encode("utf-8")
    answer = account.client("s3").put_object(
        **drop_none({
            "Bucket": inputs["bucket"],
            "Key": inputs["key"],
            "Body": body,
            "ContentType": inputs.get("contentType"),
            "ServerSideEncryption": inputs.get("serverSideEncryption"),
            "SSEKMSKeyId": inputs.get("kmsKeyId"),
            "BucketKeyEnabled": inputs.get("bucketKeyEnabled"),
            "Tagging": urllib.parse.urlencode(tags) or None,
        })
    )
    return Created(
        id=inputs["key"],
        outputs={
            "etag": answer["ETag"].strip('"'),
            "versionId": answer.get("VersionId", ""),
            "arn": f"arn:aws:s3:::{inputs['bucket']}/{inputs['key']}",
        },
    )


_ASSUMED_ROLE = re.compile(r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/(?P<session>.+)$")


@invoke("aws:iam/getSessionContext:getSessionContext")
def session_context(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """The IAM principal behind an STS ARN: an assumed role's role (with its path, looked up as the
    provider does), or the ARN itself for users and roots."""
    arn = args["arn"]
    match = _ASSUMED_ROLE.match(arn)
    if not match:
        return {"arn": arn, "id": arn, "issuerArn": arn, "issuerId": "", "issuerName": "", "sessionName": ""}
    role = account.client("iam").get_role(RoleName=match["role"])["Role"]
    return {
        "arn": arn,
        "id": arn,
        "issuerArn": role["Arn"],
        "issuerId": role["RoleId"],
        "issuerName": role["RoleName"],
        "sessionName": match["session"],
    }
