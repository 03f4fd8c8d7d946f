"""The engine's moto tuning answers as moto does: KMS keys work for every use, only their key
material comes later, moto still finds every action its response classes implement, and what
accounts share (a session per region, the service models, the published image) carries nothing
of one account into the next. The collector's tuning gives back what it froze, and only that."""

from __future__ import annotations

import gc

import boto3
import botocore.loaders
import botocore.session
import moto.core.responses
import moto.kms.models
import moto.kms.utils
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto.core.parse import QueryParser
from moto.core.responses import BaseResponse
from moto.core.utils import method_names_from_class
from moto.ec2.models import ec2_backends
from moto.ec2.models.instance_types import InstanceTypeOfferingBackend
from moto.ec2.responses.instances import InstanceResponse

from gpucloud.lookups import DEEP_LEARNING_AMI_PARAMETER
from gpucloud.testing import moto_account
from gpucloud.testing.moto_setup import (
    GC_THRESHOLDS, _no_parameter_under, collector_tuned, models_parsed_once, moto_answers_sooner, service_models)

QUERY_PARSERS_OWN = QueryParser._gonna_recurse
"""moto's own answer, read when this module is imported: no account is open then, so nothing has
put the engine's in its place."""


def _response_classes() -> list[type]:
    import moto.backends  # noqa: F401 - loads the registry of services
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.ec2.responses import EC2Response
    from moto.kms.responses import KmsResponse
    from moto.s3.responses import S3Response

    return [AutoScalingResponse, EC2Response, KmsResponse, S3Response]


@pytest.mark.parametrize("response_class", _response_classes(), ids=lambda cls: cls.__name__)
def test_the_functions_moto_finds_are_the_ones_getmembers_lists(response_class):
    with moto_answers_sooner():
        found = moto.core.responses.method_names_from_class(response_class)
        listed = method_names_from_class(response_class)

        assert sorted(found) == sorted(listed)
        assert all(name in found for name in listed)
        assert "no_such_action" not in found and 3 not in found


def test_a_method_added_to_a_response_class_later_is_found():
    class Lent(BaseResponse):
        pass

    with moto_answers_sooner():
        found = moto.core.responses.method_names_from_class(Lent)
        assert "complete_lifecycle_action" not in found
        Lent.complete_lifecycle_action = lambda self: "done"
        assert "complete_lifecycle_action" in found


def test_a_symmetric_key_makes_no_rsa_key_and_an_rsa_key_still_signs(monkeypatch):
    made: list[str] = []
    real = moto.kms.utils.generate_private_key
    monkeypatch.setattr(moto.kms.utils, "generate_private_key", lambda spec: made.append(spec) or real(spec))

    with moto_account() as account:
        kms = account.client("kms")
        symmetric = kms.create_key()["KeyMetadata"]["KeyId"]
        ciphertext = kms.encrypt(KeyId=symmetric, Plaintext=b"weights")["CiphertextBlob"]
        assert kms.decrypt(CiphertextBlob=ciphertext)["Plaintext"] == b"weights"
        assert made == []

        signing = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="RSA_2048")["KeyMetadata"]["KeyId"]
        assert made == []
        signature = kms.sign(KeyId=signing, Message=b"m", SigningAlgorithm="RSASSA_PSS_SHA_256")["Signature"]
        assert made == ["RSA_2048"]
        assert kms.verify(KeyId=signing, Message=b"m", Signature=signature, SigningAlgorithm="RSASSA_PSS_SHA_256")["SignatureValid"]
        assert kms.get_public_key(KeyId=signing)["PublicKey"]
        assert made == ["RSA_2048"]


def test_moto_is_left_as_it_was_after_the_account(monkeypatch):
    monkeypatch.setattr(moto.core.responses, "method_names_from_class", method_names_from_class)
    monkeypatch.setattr(moto.kms.models, "generate_private_key", moto.kms.utils.generate_private_key)

    with moto_account():
        assert moto.core.responses.method_names_from_class is not method_names_from_class
        assert moto.kms.models.generate_private_key is not moto.kms.utils.generate_private_key

    assert moto.core.responses.method_names_from_class is method_names_from_class
    assert moto.kms.models.generate_private_key is moto.kms.utils.generate_private_key


def test_the_engine_signs_only_its_s3_requests_and_moto_answers_both_for_the_same_account(account):
    sent: dict[str, bytes | None] = {}
    handlers = {}
    for service in ("ec2", "s3", "sts"):
        handlers[service] = lambda request, service=service, **kwargs: sent.__setitem__(service, request.headers.get("Authorization"))
        account.client(service).meta.events.register_first("before-send", handlers[service])
    try:
        account.client("ec2").describe_vpcs()
        account.client("s3").list_buckets()
        unsigned_account = account.client("sts").get_caller_identity()["Account"]
    finally:
        for service, handler in handlers.items():
            account.client(service).meta.events.unregister("before-send", handler)

    assert sent["ec2"] is None and sent["sts"] is None
    assert sent["s3"].startswith(b"AWS4-HMAC-SHA256 Credential=")
    assert unsigned_account == boto3.client("sts", region_name="us-east-1").get_caller_identity()["Account"]


def test_a_nested_block_leaves_the_outer_blocks_loader_in_place(monkeypatch):
    monkeypatch.setattr(botocore.session, "create_loader", botocore.loaders.create_loader)

    with models_parsed_once():
        shared = botocore.session.create_loader
        with moto_account():
            pass
        assert botocore.session.create_loader is shared is service_models

    assert botocore.session.create_loader is botocore.loaders.create_loader


@pytest.mark.parametrize("regions", [("us-east-1", "us-east-1", "eu-west-1")])
def test_every_account_publishes_the_deep_learning_image_its_own_ec2_describes(regions):
    published = []
    for region in regions:
        with moto_account(region) as account:
            image_id = account.client("ssm").get_parameter(Name=DEEP_LEARNING_AMI_PARAMETER)["Parameter"]["Value"]
            [image] = account.client("ec2").describe_images(ImageIds=[image_id])["Images"]
            assert image["Architecture"] == "x86_64" and "ubuntu" in image["Name"].lower()
            published.append(image_id)

    assert published[0] == published[1]


def test_accounts_of_a_region_share_a_session_and_see_only_their_own_resources():
    with moto_account("eu-west-1") as first:
        first.session.client("s3").create_bucket(Bucket="left-behind", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        session = first.session

    with moto_account("eu-west-1") as second:
        assert second.session is session
        assert second.session.client("s3").list_buckets()["Buckets"] == []
        assert second.client("s3").list_buckets()["Buckets"] == []


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(names=st.lists(st.text("ab.1", max_size=6)), prefix=st.text("ab.1", max_size=4))
def test_a_request_has_parameters_under_a_prefix_exactly_when_moto_says_so(names, prefix):
    params = dict.fromkeys(names, "v")
    parser = QueryParser(None)

    assert _no_parameter_under(parser, params, prefix) == QUERY_PARSERS_OWN(parser, params, prefix)


OFFERING_FILTERS = [
    {"instance-type": ["g5.2xlarge"]},
    {"instance-type": ["g5.xlarge", "p4d.24xlarge", "g5.xlarge", "no.such"]},
    {"instance-type": ["g6.2xlarge"], "location": ["us-east-1b", "us-east-1d"]},
    {"instance-type": ["p5.48xlarge"]},
    {"instance-type": ["no.such"]},
    {"instance-type": []},
    {"location": ["us-east-1a"]},
    {},
    None,
]


@pytest.mark.parametrize("location_type", ["availability-zone", "availability-zone-id", "region", None])
@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_an_instance_types_offerings_are_the_ones_moto_scans_for_in_its_order(location_type, region):
    with moto_account(region) as account:
        backend = ec2_backends[account.account_id][region]
        offered = InstanceTypeOfferingBackend.describe_instance_type_offerings
        found = {str(filters): offered(backend, location_type, filters) for filters in OFFERING_FILTERS}
        scanned = {str(filters): offered.scan(backend, location_type, filters) for filters in OFFERING_FILTERS}

    assert found == scanned
    assert found[str(OFFERING_FILTERS[0])] and found[str(OFFERING_FILTERS[1])]


def offerings_seen_by_the_engine() -> list[dict]:
    with moto_account() as account:
        return account.client("ec2").describe_instance_type_offerings(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["p4d.24xlarge", "g5.xlarge"]}],
        )["InstanceTypeOfferings"]


def test_offerings_reach_the_engines_client_as_moto_answers_them(monkeypatch):
    found = offerings_seen_by_the_engine()
    scan = InstanceTypeOfferingBackend.describe_instance_type_offerings.scan
    monkeypatch.setattr(InstanceTypeOfferingBackend, "describe_instance_type_offerings", scan)
    monkeypatch.setattr("gpucloud.testing.moto_setup._offerings_of_types", lambda scan: scan)
    as_moto_ships_it = offerings_seen_by_the_engine()

    assert found == as_moto_ships_it
    assert {offering["InstanceType"] for offering in found} == {"p4d.24xlarge", "g5.xlarge"}


def every_offering_by_zone() -> list[dict]:
    with moto_account() as account:
        return account.client("ec2").describe_instance_type_offerings(LocationType="availability-zone")["InstanceTypeOfferings"]


def test_every_offering_reaches_the_engines_client_as_moto_serializes_it_each_time(monkeypatch):
    first, again = every_offering_by_zone(), every_offering_by_zone()
    monkeypatch.setattr(InstanceResponse, "describe_instance_type_offerings", InstanceResponse.describe_instance_type_offerings.serialized)
    monkeypatch.setattr("gpucloud.testing.moto_setup._offerings_serialized_once", lambda describe: describe)
    as_moto_serializes_it = every_offering_by_zone()

    assert first == again == as_moto_serializes_it
    assert len(first) > 1000 and {"InstanceType", "Location", "LocationType"} <= set(first[0])


def launch_template_as_stored(data: dict) -> dict:
    with moto_account() as account:
        ec2 = account.client("ec2")
        template = ec2.create_launch_template(LaunchTemplateName="parsed", LaunchTemplateData=data)["LaunchTemplate"]
        return ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"][0]


def test_a_launch_template_request_parses_as_moto_parses_it(monkeypatch):
    data = {"ImageId": "ami-12c6146b", "InstanceType": "g5.xlarge", "UserData": "eA==",
            "BlockDeviceMappings": [{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 200, "VolumeType": "gp3", "Encrypted": True}}],
            "NetworkInterfaces": [{"DeviceIndex": 0, "NetworkCardIndex": card, "InterfaceType": "efa"} for card in range(4)],
            "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
            "TagSpecifications": [{"ResourceType": "instance", "Tags": [{"Key": "team", "Value": "vision"}]}]}

    stored = launch_template_as_stored(data)
    monkeypatch.setattr("gpucloud.testing.moto_setup._no_parameter_under", QUERY_PARSERS_OWN)
    as_moto_ships_it = launch_template_as_stored(data)

    assert stored["LaunchTemplateData"] == as_moto_ships_it["LaunchTemplateData"]
    assert stored["LaunchTemplateData"]["NetworkInterfaces"][3]["NetworkCardIndex"] == 3


@pytest.fixture
def frozen_by_someone_else():
    """Objects frozen by the program that opens the account, before it does."""
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield gc.get_freeze_count()
    finally:
        gc.unfreeze()


def test_an_account_freezes_what_exists_and_gives_it_all_back_on_exit():
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()

    with collector_tuned():
        assert gc.get_freeze_count() > 0 and gc.get_threshold() == GC_THRESHOLDS
        with collector_tuned():
            made_inside = [object() for _ in range(3)]
        assert gc.get_freeze_count() > 0

    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
    assert made_inside


def test_an_account_leaves_what_someone_else_froze_frozen(frozen_by_someone_else):
    thresholds = gc.get_threshold()

    with collector_tuned():
        assert gc.get_threshold() == GC_THRESHOLDS

    # A frozen object may still be freed (its last reference gone); unfrozen, the count is 0.
    assert gc.get_freeze_count() > frozen_by_someone_else // 2 and gc.get_threshold() == thresholds
