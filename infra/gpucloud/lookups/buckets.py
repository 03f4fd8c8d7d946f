"""The data bucket (`data.bucket`): the stack names it but does not create it, so it is looked up.

A bucket that does not exist planned clean before: nodes then hit NoSuchBucket at run time and the
file system's data repository association fails at `pulumi up`. The program reads it with
pulumi-aws's `aws.s3.getBucket` (exists, region), so `pulumi preview` stops on it; account facts
add its owner and default encryption; offline without facts it is one not-checked line.
"""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups
from gpucloud.lookups.problems import Problems

KEY = "data.bucket"


def check_data_bucket(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> None:
    """Missing, in another region than the stack, or of another account: one problem naming the
    key; not known: one warning saying it was not checked."""
    data = settings.config.data
    if data is None:
        return
    found = lookups.bucket(data.bucket)
    if found.exists is None:
        problems.warn(KEY, f"data bucket not checked: whether {data.bucket} exists, its region and its owner "
                      "are not known here (offline, give the plan account facts from `gpucloud account snapshot`)")
    elif not found.exists:
        problems.add(KEY, f"bucket {data.bucket} does not exist (S3 HeadBucket: not found): create it, or name one that "
                     "exists; nodes would fail with NoSuchBucket and the file system's data association at `pulumi up`")
    elif found.region and found.region != settings.region:
        problems.add(KEY, f"bucket {data.bucket} is in {found.region}, the stack in {settings.region}: name a bucket "
                     f"in {settings.region}, or deploy the stack there")
    elif found.owned_by_account is False:
        problems.add(KEY, f"bucket {data.bucket} belongs to another account (S3 HeadBucket with ExpectedBucketOwner "
                     "refused): name a bucket of the deploying account")
