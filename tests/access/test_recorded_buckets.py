"""Every bucket in gpucloud/data/access_calls.json is a placeholder the plan fills with the stack's
own bucket, or one of AWS's buckets that gpucloud.documents.buckets names and cites: a test's own
bucket name left in a recording (`example-model-artifacts`) is a call no stack ever makes, and the
plan then denies it in every stack that uses the feature."""

from __future__ import annotations

import re

from gpucloud.documents.buckets import MOUNTPOINT_RELEASE_BUCKET, aws_owned_package_buckets

import access_recording

_BUCKET = re.compile(r"^arn:\$\{partition\}:s3:::([^/]+)")
_PLACEHOLDER = re.compile(r"^\$\{[A-Za-z][A-Za-z0-9]*\}$")
AWS_OWNED = {*aws_owned_package_buckets("${region}"), MOUNTPOINT_RELEASE_BUCKET}


def test_every_recorded_bucket_is_a_placeholder_or_aws_s_own():
    literal = sorted({(found[1], entry["measuredBy"]) for entry in access_recording.recorded()
                      if (found := _BUCKET.match(str(entry["resource"])))
                      and not _PLACEHOLDER.match(found[1]) and found[1] not in AWS_OWNED})

    assert literal == [], ("buckets named by a test, not by placeholders (tests/access_placeholders.py maps a "
                           f"value to its placeholder from what node code holds): {literal}")
