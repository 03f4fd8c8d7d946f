"""The data bucket's policy statements for the project's FSx for Lustre file system: what it may
reach of `data.bucket` (its prefixes) and what it may not (everything else).

The data bucket is the user's and the stack never manages its policy, so these statements are a
stack output (`dataBucketPolicyForFileSystem`) for the bucket's owner to add. Facts (read
2026-11-25):
- FSx reaches S3 for a linked file system through a service-linked role it creates per file
  system, `AWSServiceRoleForFSxS3Access_<file system id>`, under the path
  `/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/` (FSx for Lustre user guide, "Using
  service-linked roles for Amazon FSx",
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-service-linked-roles.html; the path is
  the one AWS's managed policy FSxDeleteServiceLinkedRoleAccess names,
  https://docs.aws.amazon.com/aws-managed-policy/latest/reference/FSxDeleteServiceLinkedRoleAccess.html).
  That role's own policy reaches the whole bucket; within one account an explicit Deny in the
  bucket policy is what narrows it (IAM user guide, "Policy evaluation logic").
- Automatic import follows the bucket's event notifications, which FSx sets on the bucket
  (s3:GetBucketNotification / s3:PutBucketNotification on the bucket itself); listing is
  s3:ListBucket with the `s3:prefix` condition key (S3 user guide, "Bucket policy examples using
  condition keys").
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.documents.services import Document

FSX_S3_ROLE_PATH = "/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
FSX_S3_ROLE_PREFIX = "AWSServiceRoleForFSxS3Access_"

OBJECT_READ_ACTIONS = ["s3:GetObject", "s3:GetObjectVersion"]
OBJECT_WRITE_ACTIONS = ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:PutObject"]
LIST_ACTIONS = ["s3:ListBucket", "s3:ListBucketVersions"]
NOTIFICATION_ACTIONS = ["s3:GetBucketNotification", "s3:PutBucketNotification"]


def fsx_s3_role_arn(partition: str, account_id: str, file_system_id: str) -> str:
    """The role FSx reaches S3 with for one file system."""
    return f"arn:{partition}:iam::{account_id}:role{FSX_S3_ROLE_PATH}{FSX_S3_ROLE_PREFIX}{file_system_id}"


def file_system_bucket_policy(
    partition: str,
    account_id: str,
    file_system_id: str,
    bucket: str,
    read_prefixes: Sequence[str],
    write_prefixes: Sequence[str],
) -> Document:
    """Statements that let the file system's S3 role read the read prefixes, read and write the
    write prefixes, list only under them and keep the bucket's import notifications, and deny it
    every object outside them, writes to the read prefixes, listings elsewhere and every other
    change to the bucket. Only its own
    role is named: the statements change no other principal's access."""
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    role = {"AWS": fsx_s3_role_arn(partition, account_id, file_system_id)}
    read_only = [prefix for prefix in dict.fromkeys(read_prefixes) if prefix not in write_prefixes]
    writable = list(dict.fromkeys(write_prefixes))
    linked = [*read_only, *writable]
    objects = {prefix: f"{bucket_arn}/{prefix}*" for prefix in linked}
    listed = [f"{prefix}*" for prefix in linked]
    statements: list[dict] = [
        {
            "Sid": "FileSystemListsItsPrefixes",
            "Effect": "Allow",
            "Principal": role,
            "Action": LIST_ACTIONS,
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": listed}},
        },
        {
            "Sid": "FileSystemFollowsBucketEvents",
            "Effect": "Allow",
            "Principal": role,
            "Action": NOTIFICATION_ACTIONS,
            "Resource": bucket_arn,
        },
    ]
    if read_only:
        statements.append({
            "Sid": "FileSystemReadsReadPrefixes",
            "Effect": "Allow",
            "Principal": role,
            "Action": OBJECT_READ_ACTIONS,
            "Resource": [objects[prefix] for prefix in read_only],
        })
    if writable:
        statements.append({
            "Sid": "FileSystemReadsAndWritesWritePrefixes",
            "Effect": "Allow",
            "Principal": role,
            "Action": [*OBJECT_READ_ACTIONS, *OBJECT_WRITE_ACTIONS],
            "Resource": [objects[prefix] for prefix in writable],
        })
    statements.append({
        "Sid": "FileSystemReachesNoOtherObjects",
        "Effect": "Deny",
        "Principal": role,
        "Action": "s3:*",
        # Bucket-level actions (listing, notifications) are left to the statements on them.
        "NotResource": [bucket_arn, *objects.values()],
    })
    if read_only:
        statements.append({
            "Sid": "FileSystemWritesNoReadPrefix",
            "Effect": "Deny",
            "Principal": role,
            "Action": OBJECT_WRITE_ACTIONS,
            "Resource": [objects[prefix] for prefix in read_only],
        })
    statements.append({
        "Sid": "FileSystemChangesNothingElseOnTheBucket",
        "Effect": "Deny",
        "Principal": role,
        # Bucket-level reads stay (the role's own policy has them); every bucket-level write but
        # the import notifications is denied: its policy, ACL, lifecycle, deletion.
        "NotAction": [*LIST_ACTIONS, "s3:ListBucketMultipartUploads", "s3:Get*", "s3:PutBucketNotification"],
        "Resource": bucket_arn,
    })
    statements.append({
        "Sid": "FileSystemListsNothingElse",
        "Effect": "Deny",
        "Principal": role,
        "Action": LIST_ACTIONS,
        "Resource": bucket_arn,
        # Only a listing that names a prefix outside the list: S3 authorises HeadBucket as
        # s3:ListBucket with no prefix, and FSx's calls when it creates an association are not
        # documented, so a deny without a prefix could fail `pulumi up`. Key names of the whole
        # bucket stay listable; no object outside the prefixes can be read or written.
        "Condition": {"StringNotLike": {"s3:prefix": listed}, "Null": {"s3:prefix": "false"}},
    })
    return {"Version": "2012-10-17", "Statement": statements}
