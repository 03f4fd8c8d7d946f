"""S3 buckets, their settings and policies, and objects (the artifacts bucket and agent bundle)."""

from __future__ import annotations

import base64
import fnmatch
import ipaddress
import json
import re
import urllib.parse
from typing import Any

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.handlers.statements import allows, listed, principals, statements
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
    account.bucket_policies[bucket] = document
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
    # The provider reads what it uploaded back (internal/service/s3/object.go: resourceObjectUpload
    # ends in resourceObjectRead, a HeadObject; read 2026-11-28): the bucket's policy decides it too.
    account.client("s3").head_object(Bucket=inputs["bucket"], Key=inputs["key"])
    return Created(
        id=inputs["key"],
        outputs={
            "etag": answer["ETag"].strip('"'),
            "versionId": answer.get("VersionId", ""),
            "arn": f"arn:aws:s3:::{inputs['bucket']}/{inputs['key']}",
        },
    )


LIFECYCLE_RULE_LIMIT = 1000
LIFECYCLE_RULE_ID_LIMIT = 255
"""S3 API reference, PutBucketLifecycleConfiguration and LifecycleRule: at most 1,000 rules, an ID
of at most 255 characters, day counts positive (read 2026-11-25); moto checks only the XML."""


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A provider lifecycle rule (wire names) as S3's API takes it, refused where S3 would."""
    if len(rule.get("id") or "") > LIFECYCLE_RULE_ID_LIMIT:
        raise refused("PutBucketLifecycleConfiguration", "InvalidArgument",
                      f"lifecycle rule ID {rule['id']!r} is longer than {LIFECYCLE_RULE_ID_LIMIT} characters")
    days = {
        ("Expiration", "Days"): (rule.get("expiration") or {}).get("days"),
        ("NoncurrentVersionExpiration", "NoncurrentDays"): (rule.get("noncurrentVersionExpiration") or {}).get("noncurrentDays"),
        ("AbortIncompleteMultipartUpload", "DaysAfterInitiation"):
            (rule.get("abortIncompleteMultipartUpload") or {}).get("daysAfterInitiation"),
    }
    for (element, field), value in days.items():
        if value is not None and int(value) < 1:
            raise refused("PutBucketLifecycleConfiguration", "InvalidArgument",
                          f"lifecycle rule {rule.get('id')!r}: {element} {field} must be a positive integer, got {value}")
    filter_ = rule.get("filter") or {}
    return drop_none({
        "ID": rule.get("id"),
        "Status": rule["status"],
        "Filter": {"Prefix": filter_.get("prefix") or ""},
        **{element: {field: int(value)} for (element, field), value in days.items() if value is not None},
    })


@resource("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
def set_lifecycle(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    rules = [_lifecycle_rule(rule) for rule in inputs.get("rules") or []]
    if not 1 <= len(rules) <= LIFECYCLE_RULE_LIMIT:
        raise refused("PutBucketLifecycleConfiguration", "MalformedXML",
                      f"a lifecycle configuration takes 1 to {LIFECYCLE_RULE_LIMIT} rules, got {len(rules)}")
    account.client("s3").put_bucket_lifecycle_configuration(
        Bucket=inputs["bucket"], LifecycleConfiguration={"Rules": rules}
    )
    return Created(id=inputs["bucket"])


def _default_encryption(account: Account, bucket: str) -> str | None:
    s3 = account.client("s3")
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    except s3.exceptions.ClientError:
        return None
    return next((rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] for rule in rules
                 if "ApplyServerSideEncryptionByDefault" in rule), None)


LOG_DELIVERY = "logging.s3.amazonaws.com"


def _log_delivery_allowed(policy: dict[str, Any] | None, target: str, prefix: str) -> bool:
    """Whether a target bucket's policy lets S3's log delivery put objects under the prefix: with
    ACLs disabled (bucket owner enforced) that grant is the only way in (S3 user guide, "Enabling
    Amazon S3 server access logging", permissions for the logging service principal; read
    2026-11-25). Its conditions (the source bucket and account) are not evaluated here."""
    key = f"arn:aws:s3:::{target}/{prefix}"
    return any(
        allows(statement, "s3:PutObject") and LOG_DELIVERY in principals(statement, "Service")
        and any(fnmatch.fnmatchcase(key, re.sub(r"^arn:aws[a-z-]*:", "arn:aws:", pattern)) for pattern in listed(statement.get("Resource")))
        for statement in statements(policy or {})
    )


@resource("aws:s3/bucketLogging:BucketLogging")
def set_logging(account: Account, request: ResourceRequest) -> Created:
    """Server access logging into a target bucket that must exist in the bucket's Region and
    account (S3 refuses the call otherwise: InvalidTargetBucketForLogging,
    CrossLocationLoggingProhibited), and whose default encryption is not SSE-KMS: S3 accepts that
    call but delivers no log (S3 user guide, "Enabling Amazon S3 server access logging", read
    2026-11-25), so the engine refuses it as a configuration that cannot work.

    The target's permission for `logging.s3.amazonaws.com` lives in its bucket policy, which the
    engine checks and records without sending to moto (`set_bucket_policy`); moto would refuse the
    call for want of it, so the logging status is set on moto's bucket directly."""
    inputs = request.inputs
    bucket, target = inputs["bucket"], inputs["targetBucket"]
    s3 = account.client("s3")
    try:
        s3.head_bucket(Bucket=target)
    except s3.exceptions.ClientError:
        raise refused("PutBucketLogging", "InvalidTargetBucketForLogging",
                      f"The target bucket for logging ({target}) does not exist") from None
    regions = {name: s3.get_bucket_location(Bucket=name).get("LocationConstraint") or "us-east-1" for name in (bucket, target)}
    if regions[bucket] != regions[target]:
        raise refused("PutBucketLogging", "CrossLocationLoggingProhibited",
                      f"{bucket} is in {regions[bucket]}, its log target {target} in {regions[target]}")
    if _default_encryption(account, target) == "aws:kms":
        raise refused("PutBucketLogging", "InvalidTargetBucketForLogging",
                      f"{target} encrypts by default with SSE-KMS: S3 delivers no server access logs to it (use SSE-S3)")
    if not _log_delivery_allowed(account.bucket_policies.get(target), target, inputs.get("targetPrefix") or ""):
        raise refused("PutBucketLogging", "InvalidTargetBucketForLogging",
                      f"{target}'s bucket policy lets {LOG_DELIVERY} put no object under {inputs.get('targetPrefix') or '/'}: "
                      "S3 would deliver no log (declare the policy before the logging, which depends on it)")
    from moto.s3.models import s3_backends

    partition = account.arn("s3", "").split(":")[1]
    s3_backends[account.account_id][partition].get_bucket(bucket).logging = {
        "TargetBucket": target, "TargetPrefix": inputs.get("targetPrefix") or "",
    }
    return Created(id=bucket)


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
