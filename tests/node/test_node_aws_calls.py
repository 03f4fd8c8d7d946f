"""gpucloud/data/node_aws_calls.json is measured, not kept by hand: each marked node test checks its
own entry as it runs (conftest.py); these check that every entry names a test that still measures
that feature, that every node feature was measured, and that the recorder names calls as botocore does."""

from __future__ import annotations

import ast
import functools
import typing
import urllib.request

import pytest
from aws_calls import REMOTE_WRITE, signed_call
from gpucloud.config.network import InterfaceEndpoint
from gpucloud.config.node_endpoints import GATEWAY_ENDPOINTS, MEASURED_CALLS_PATH, NODE_FEATURES, measured_calls
from gpucloud.userdata import bootstrap_stub as stub
from support import ROOT

CREDENTIALS = ("AKIDEXAMPLE", "secret", "token")


@functools.cache
def marked_features(module: str) -> dict[str, str]:
    """test function name -> the feature its node_aws_calls marker names, read from the source
    (once per module: the measurements name a few modules many times)."""
    tree = ast.parse((ROOT / module).read_text())
    marked = {}
    for node in tree.body:
        for decorator in getattr(node, "decorator_list", []):
            if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.node_aws_calls":
                marked[node.name] = decorator.args[0].value
    return marked


def test_every_measurement_names_a_test_that_still_measures_that_feature():
    for feature, tests in measured_calls().items():
        for test_id in tests:
            module, _, name = test_id.partition("::")
            assert marked_features(module).get(name) == feature, f"{test_id} no longer measures {feature}"


def test_every_node_feature_was_measured_and_nothing_else():
    assert list(measured_calls()) == list(NODE_FEATURES)
    assert [feature for feature, tests in measured_calls().items() if not tests] == []
    assert "GPUCLOUD_MEASURE_NODE_CALLS=1" in MEASURED_CALLS_PATH.read_text()


def test_every_measured_service_is_an_endpoint_the_stack_can_create():
    creatable = set(typing.get_args(InterfaceEndpoint)) | set(GATEWAY_ENDPOINTS)
    measured = {service for tests in measured_calls().values() for calls in tests.values() for service in calls}
    assert measured <= creatable


@pytest.mark.parametrize(("method", "url", "body", "call"), [
    ("GET", "http://127.0.0.1:5000/bucket/agent/bundle.zip", b"", ("s3", "GetObject")),
    ("GET", "http://127.0.0.1:5000/bucket?list-type=2&prefix=x", b"", ("s3", "ListObjectsV2")),
    ("POST", "http://127.0.0.1:5000/", b"Action=CompleteLifecycleAction&Version=2011-01-01", ("autoscaling", "CompleteLifecycleAction")),
])
def test_a_signed_request_is_named_by_the_botocore_model_of_its_service(method, url, body, call):
    service = call[0]
    headers = stub.sign(method, url, "us-east-1", service, CREDENTIALS, body)
    request = urllib.request.Request(url, data=body or None, headers=headers, method=method)

    assert signed_call(request) == call


def test_a_remote_write_is_the_prometheus_data_plane_and_an_unsigned_request_no_aws_call():
    url = "http://127.0.0.1:9090/api/v1/write"
    headers = {**stub.sign("POST", url, "us-east-1", "aps", CREDENTIALS, b"x"), "X-Prometheus-Remote-Write-Version": "0.1.0"}

    assert signed_call(urllib.request.Request(url, data=b"x", headers=headers)) == REMOTE_WRITE
    assert signed_call(urllib.request.Request("http://169.254.169.254/latest/meta-data/instance-id")) is None
