"""Where `storage.s3Mount.install: download` fetches mount-s3 from: Mountpoint's release bucket in
us-east-1. An S3 gateway endpoint carries only its own region's buckets (VPC user guide, "Gateway
endpoints for Amazon S3"), so in another region the download leaves through the NAT gateway and no
endpoint policy sees it; with no NAT (`network.egress: endpointsOnly`) the stack is refused."""

from __future__ import annotations

import pytest

from gpucloud.config.errors import ConfigError
from gpucloud.documents.buckets import MOUNTPOINT_RELEASE_BUCKET, gateway_endpoint_reaches
from gpucloud.plan.preview import plan_stack
from support import minimal_config, settings_for

DOWNLOAD = {"s3Mount": {"install": "download"}}


def test_only_us_east_1_s_gateway_endpoint_carries_the_release_bucket():
    assert gateway_endpoint_reaches("aws", "us-east-1", MOUNTPOINT_RELEASE_BUCKET)
    assert not gateway_endpoint_reaches("aws", "us-west-2", MOUNTPOINT_RELEASE_BUCKET)
    assert gateway_endpoint_reaches("aws", "us-west-2", "demo-data")


def test_a_download_outside_us_east_1_plans_with_no_call_denied():
    plan = plan_stack(settings_for(minimal_config(storage=DOWNLOAD), stack="west", region="us-west-2"))

    access = plan.to_preview_json()["access"]
    assert access["denied"] == []
    assert not [finding.message for finding in plan.findings if finding.rule == "access-denied"]


def test_a_download_outside_us_east_1_with_no_nat_is_refused():
    values = minimal_config(storage=DOWNLOAD, network={"egress": "endpointsOnly"})

    with pytest.raises(ConfigError) as error:
        settings_for(values, stack="west", region="us-west-2")
    [(key, reason)] = [(key, reason) for key, reason in error.value.problems if key.endswith("s3Mount.install")]
    assert key == "gpu-cloud:storage.s3Mount.install" and "\n" not in reason
    assert "install: ami" in reason and "egress: nat" in reason
