"""storage.lustre placement (`zone`, cross-zone groups) and the data bucket's policy statements for the
file system's S3 role: pure functions, no engine run."""

from __future__ import annotations

import fnmatch

import pytest

from gpucloud.config.errors import ConfigError
from gpucloud.documents.file_system_bucket import file_system_bucket_policy, fsx_s3_role_arn
from gpucloud.lookups.facts import Subnet
from gpucloud.lookups.problems import Problems
from gpucloud.lookups.resolved import ResolvedGroup
from gpucloud.lookups.storage import check_file_system_placement, file_system_zone
from gpucloud.policy import iam_documents, iam_lint
from support import minimal_config, settings_for

ROLE = "arn:aws:iam::123456789012:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_fs-0123456789abcdef0"


def policy(read=("datasets/imagenet/",), write=("runs/vision/",)):
    return file_system_bucket_policy("aws", "123456789012", "fs-0123456789abcdef0", "demo-data", list(read), list(write))


def effect(document, action: str, resource: str, prefix: str | None = None) -> str:
    """What the document decides for the file system's role: Deny wins, then Allow, else none."""
    decisions = set()
    for statement in document["Statement"]:
        assert statement["Principal"] == {"AWS": ROLE}, statement["Sid"]
        named = statement.get("Action", statement.get("NotAction"))
        actions = named if isinstance(named, list) else [named]
        if any(fnmatch.fnmatchcase(action, pattern) for pattern in actions) != ("Action" in statement):
            continue
        if "Resource" in statement:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            if not any(fnmatch.fnmatchcase(resource, pattern) for pattern in resources):
                continue
        elif any(fnmatch.fnmatchcase(resource, pattern) for pattern in statement["NotResource"]):
            continue
        for operator, values in statement.get("Condition", {}).items():
            if operator == "Null":
                if (prefix is None) != (values["s3:prefix"] == "true"):
                    break
                continue
            patterns = values["s3:prefix"]
            matched = prefix is not None and any(fnmatch.fnmatchcase(prefix, pattern) for pattern in patterns)
            if matched != (operator == "StringLike"):
                break
        else:
            decisions.add(statement["Effect"])
    return "Deny" if "Deny" in decisions else "Allow" if "Allow" in decisions else "none"


def test_role_is_fsx_s3_service_linked_role_of_the_file_system():
    assert fsx_s3_role_arn("aws", "123456789012", "fs-0123456789abcdef0") == ROLE
    assert fsx_s3_role_arn("aws-cn", "1", "fs-1").startswith("arn:aws-cn:iam::1:role/aws-service-role/")


@pytest.mark.parametrize(("action", "key", "expected"), [
    ("s3:GetObject", "datasets/imagenet/train/0001.tar", "Allow"),
    ("s3:PutObject", "datasets/imagenet/train/0001.tar", "Deny"),
    ("s3:DeleteObject", "datasets/imagenet/x", "Deny"),
    ("s3:PutObject", "runs/vision/step-100/model.pt", "Allow"),
    ("s3:GetObject", "runs/vision/step-100/model.pt", "Allow"),
    ("s3:AbortMultipartUpload", "runs/vision/x", "Allow"),
    ("s3:GetObject", "datasets/other/secret.csv", "Deny"),
    ("s3:GetObject", "datasets/imagenet", "Deny"),
    ("s3:PutObject", "runs/other/x", "Deny"),
    ("s3:GetObject", "payroll.csv", "Deny"),
])
def test_objects_reachable_only_under_the_prefixes(action, key, expected):
    assert effect(policy(), action, f"arn:aws:s3:::demo-data/{key}") == expected


@pytest.mark.parametrize(("prefix", "expected"), [
    ("datasets/imagenet/", "Allow"),
    ("datasets/imagenet/train/", "Allow"),
    ("runs/vision/", "Allow"),
    ("datasets/", "Deny"),
    ("", "Deny"),
    # No prefix (HeadBucket, a whole-bucket listing): neither allowed nor denied here, so the role's
    # own policy decides; only key names are listed, and no object outside the prefixes is readable.
    (None, "none"),
])
def test_listing_only_under_the_prefixes(prefix, expected):
    assert effect(policy(), "s3:ListBucket", "arn:aws:s3:::demo-data", prefix) == expected


@pytest.mark.parametrize(("action", "expected"), [
    ("s3:PutBucketNotification", "Allow"),
    ("s3:GetBucketLocation", "none"),
    ("s3:PutBucketPolicy", "Deny"),
    ("s3:DeleteBucket", "Deny"),
    ("s3:PutLifecycleConfiguration", "Deny"),
])
def test_on_the_bucket_itself_only_import_notifications_change(action, expected):
    assert effect(policy(), action, "arn:aws:s3:::demo-data") == expected


def test_a_prefix_both_read_and_written_is_writable():
    document = policy(read=("shared/",), write=("shared/",))
    assert effect(document, "s3:PutObject", "arn:aws:s3:::demo-data/shared/x") == "Allow"
    assert not any(statement["Sid"] == "FileSystemWritesNoReadPrefix" for statement in document["Statement"])


def test_bucket_policy_lints_clean_with_parliament_and_the_resource_policy_rules():
    document = policy()
    findings = iam_lint.lint_policy(document)
    assert not iam_lint.has_medium_or_worse(findings), iam_lint.summarize(findings)
    assert iam_documents.resource_policy_problems(iam_documents.parse_document(document)) == []
    # The same linter does judge this document: a condition key S3 does not have is a finding.
    document["Statement"][0]["Condition"] = {"StringLike": {"s3:prefixes": ["datasets/*"]}}
    assert iam_lint.has_medium_or_worse(iam_lint.lint_policy(document))


def group(name: str, zones: tuple[str, ...], subnets: tuple[Subnet, ...] = ()) -> ResolvedGroup:
    settings = settings_for(minimal_config())
    return ResolvedGroup(config=settings.config.groups[0].model_copy(update={"name": name}), instance_types=(),
                         subnets=subnets, ami=None, zones=zones)


def placement(lustre: dict, network_zones, groups):
    settings = settings_for(minimal_config(storage={"lustre": lustre}))
    problems = Problems(settings)
    check_file_system_placement(settings, network_zones, groups, problems)
    return problems


def test_file_system_defaults_to_the_first_groups_first_zone_and_warns_of_cross_zone_groups():
    groups = [group("workers", ("us-east-1b", "us-east-1a")), group("eval", ("us-east-1b",))]
    assert file_system_zone(None, groups) == "us-east-1b"
    problems = placement({}, ("us-east-1a", "us-east-1b"), groups)
    problems.raise_if_any()
    [cross] = [reason for key, reason in problems.warnings if key == "gpu-cloud:storage.lustre.zone"]
    assert "group workers runs in us-east-1a" in cross and "https://aws.amazon.com/fsx/lustre/pricing/" in cross
    [unchecked] = [reason for key, reason in problems.warnings if key == "gpu-cloud:data.bucket"]
    assert unchecked.startswith("not checked: the policy of demo-data") and "dataBucketPolicyForFileSystem" in unchecked


def test_named_zone_places_it_and_names_the_groups_elsewhere():
    groups = [group("workers", ("us-east-1a",)), group("eval", ("us-east-1b",))]
    problems = placement({"zone": "us-east-1b"}, ("us-east-1a", "us-east-1b"), groups)
    problems.raise_if_any()
    assert [reason.split(":")[0] for key, reason in problems.warnings if key == "gpu-cloud:storage.lustre.zone"] == [
        "the file system is in us-east-1b and group workers runs in us-east-1a"]


def test_zone_outside_the_stack_is_a_one_line_error_naming_the_key():
    listed = (Subnet("subnet-1", "us-east-1a", "vpc-1"),)
    problems = placement({"zone": "us-east-1c"}, (), [group("workers", ("us-east-1a",), listed)])
    with pytest.raises(ConfigError) as error:
        problems.raise_if_any()
    [line] = [line for line in str(error.value).splitlines() if "storage.lustre.zone" in line]
    assert "gpu-cloud:storage.lustre.zone: us-east-1c is not one of the stack's zones (us-east-1a)" in line
    assert "stacks/Pulumi.demo.yaml" in str(error.value)
