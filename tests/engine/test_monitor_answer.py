"""The engine's monitor answers a registration with only what the engine changed or added, and
builds that answer without the SDK's async serializer where the values are plain data. What the
program sees must be what the SDK's own mock monitor would have given it."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime import rpc
from pulumi.runtime.sync_await import _sync_await

from gpucloud.testing import run_program
from gpucloud.testing.engine import _struct

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(properties=st.dictionaries(st.text(min_size=1, max_size=8), JSON, max_size=6))
def test_plain_properties_serialize_as_the_sdk_serializes_them(properties):
    assert _struct(properties) == _sync_await(rpc.serialize_properties(properties, {}))


def test_secrets_and_assets_serialize_as_the_sdk_serializes_them():
    secret = {rpc._special_sig_key: rpc._special_secret_sig, "value": "s3cr3t"}
    asset = {rpc._special_sig_key: rpc._special_asset_sig, "text": "#!/bin/bash"}
    properties = {"password": secret, "tags": {"nested": [secret]}, "script": asset}

    assert _struct(properties) == _sync_await(rpc.serialize_properties(properties, {}))


def test_what_is_not_json_data_goes_through_the_sdk_and_fails_as_it_would():
    import datetime

    import pytest

    with pytest.raises(ValueError, match="datetime"):
        _struct({"created": datetime.datetime(2026, 11, 27)})


def test_outputs_the_engine_did_not_change_resolve_to_the_inputs_and_the_rest_to_aws(account):
    """The answer leaves out every input the engine returned unchanged: the SDK resolves those from
    the inputs it sent, so the program reads the same values as before, and AWS's own outputs."""
    seen = {}

    def program():
        key = aws.kms.Key("key", description="project key", deletion_window_in_days=7, enable_key_rotation=True)
        pulumi.Output.all(key.description, key.deletion_window_in_days, key.enable_key_rotation, key.arn, key.key_id).apply(
            lambda values: seen.update(zip(["description", "window", "rotation", "arn", "key_id"], values))
        )

    deployment = run_program(program, account)

    [key] = [resource for resource in deployment.resources if resource.type == "aws:kms/key:Key"]
    assert seen["description"] == "project key" and seen["window"] == 7 and seen["rotation"] is True
    assert seen["key_id"] == key.id
    assert seen["arn"] == account.client("kms").describe_key(KeyId=key.id)["KeyMetadata"]["Arn"]
