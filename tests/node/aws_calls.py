"""Which AWS (service, operation) the node's own code calls, recorded while a node test runs.

Two ways out of the node reach AWS: boto3 (the agent) and requests that the bootstrap stub and the
collector sign with SigV4 themselves (urllib). Both are wrapped for the length of one test:
`BaseClient._make_api_call` gives botocore's own service and operation; for a signed urllib request
the service is the credential scope's and the operation comes from the botocore model of that
service (the query `Action`, the JSON target, or the REST method and path). A Prometheus
remote-write request is AMP's data plane (`aps-workspaces`, IAM action `aps:RemoteWrite`, AMP user
guide "Using Amazon Managed Service for Prometheus with interface VPC endpoints", read 2026-11-25).

A call counts as the node's when the innermost frame outside the AWS libraries is node code (not
a test's fake or assertion), or, on a library's worker thread (s3transfer uploads), when node code
created the client. The service recorded is the one whose endpoint the call needs: botocore's
`endpointPrefix` (`monitoring` for CloudWatch), the name of its VPC endpoint service, except where
they differ (ECR's API: `api.ecr` in botocore, the `ecr.api` endpoint; node_endpoints.ENDPOINT_SERVICES).

Each call is also kept whole (`requests`: parameters, answer, the node config in the calling frames)
for gpucloud/data/access_calls.json (tests/access_recording.py).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import http
import re
import sys
import threading
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import botocore
import pytest
import s3transfer
import botocore.loaders
from botocore.client import BaseClient
from botocore.exceptions import UnknownServiceError
from botocore.session import Session

import gpucloud.node
from access_placeholders import ACCOUNT, values_in_frames
from access_recording import Request
from gpucloud.config.node_endpoints import ENDPOINT_SERVICES
import gpucloud.userdata

REMOTE_WRITE = ("aps-workspaces", "RemoteWrite")
_NODE_CODE = (str(Path(gpucloud.node.__file__).parent) + "/", str(Path(gpucloud.userdata.__file__).parent / "bootstrap_stub.py"))
_LIBRARIES = tuple(
    str(Path(module.__file__).parent) + "/" for module in (botocore, boto3, s3transfer, concurrent.futures, urllib, http)
) + (threading.__file__, __file__)
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")
_MODELS = Session()
# A loader of its own: botocore rewrites an S3 operation's requestUri in the loaded model the first
# time a client calls it (botocore/handlers.py, remove_bucket_from_url_paths_from_model), so a
# loader shared with clients that made calls no longer holds the model's own URIs.
_MODELS.register_component("data_loader", botocore.loaders.create_loader())


def _caller_is_node_code(depth: int = 2) -> bool | None:
    """True when the innermost frame outside the AWS and HTTP libraries is node code; None when
    every frame is library code (a worker thread)."""
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_LIBRARIES):
            return filename.startswith(_NODE_CODE)
        frame = frame.f_back
    return None


def _node_code_on_stack() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_NODE_CODE):
            return True
        frame = frame.f_back
    return False


class AwsCalls:
    """The (service, operation) pairs node code called while `recording()` was active."""

    def __init__(self) -> None:
        self.calls: set[tuple[str, str]] = set()
        self.requests: list[Request] = []
        self.last_values: dict[str, str] = {}
        self._lock = threading.Lock()

    def by_service(self) -> dict[str, list[str]]:
        services: dict[str, list[str]] = {}
        for service, operation in sorted(self.calls):
            services.setdefault(service, []).append(operation)
        return services

    def _add(self, call: tuple[str, str], request: Request | None = None) -> None:
        with self._lock:
            self.calls.add(call)
            if request is not None:
                self.requests.append(request)

    @contextlib.contextmanager
    def recording(self) -> Iterator[AwsCalls]:
        calls = self
        make_api_call, create_client, open_url = (
            BaseClient._make_api_call, Session.create_client, urllib.request.OpenerDirector.open)

        def recorded_api_call(client, operation_name, api_params):
            by_node = _caller_is_node_code()
            if not (by_node or (by_node is None and getattr(client, "_gpucloud_node_client", False))):
                return make_api_call(client, operation_name, api_params)
            prefix = client.meta.service_model.endpoint_prefix
            service = ENDPOINT_SERVICES.get(prefix, prefix)
            # On a library's worker thread no node frame is left: the values node code held for its
            # last call on this test's own thread stand (sync_to_s3 lists, then uploads).
            values = (getattr(client, "_gpucloud_node_values", {}) | (calls.last_values if by_node is None else {})
                      | values_in_frames(sys._getframe(1), _NODE_CODE))
            if by_node:
                calls.last_values = values
            request = Request(service, operation_name, dict(api_params), values=values,
                              encrypted_volumes=_encrypted(client, operation_name, api_params))
            calls._add((service, operation_name), request)
            request.response = make_api_call(client, operation_name, api_params)
            return request.response

        def tagged_client(session, *args, **kwargs):
            client = create_client(session, *args, **kwargs)
            client._gpucloud_node_client = _node_code_on_stack()
            if client._gpucloud_node_client:
                client._gpucloud_node_values = values_in_frames(sys._getframe(1), _NODE_CODE)
            return client

        def recorded_open(opener, fullurl, *args, **kwargs):
            request = None
            if isinstance(fullurl, urllib.request.Request) and _node_code_on_stack():
                request = signed_request(fullurl)
                if request:
                    request.values = values_in_frames(sys._getframe(1), _NODE_CODE)
                    calls._add((request.service, request.operation), request)
            try:
                response = open_url(opener, fullurl, *args, **kwargs)
            except urllib.error.HTTPError as error:
                if request:
                    request.response = _sse(error.headers)
                raise
            if request:
                request.response = _sse(response.headers)
            return response

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(BaseClient, "_make_api_call", recorded_api_call)
            patch.setattr(Session, "create_client", tagged_client)
            patch.setattr(urllib.request.OpenerDirector, "open", recorded_open)
            yield self


def signed_call(request: urllib.request.Request) -> tuple[str, str] | None:
    """The AWS call a SigV4-signed request makes, or None for an unsigned one (IMDS, a scrape)."""
    found = signed_request(request)
    return (found.service, found.operation) if found else None


def signed_request(request: urllib.request.Request) -> Request | None:
    """The AWS call a SigV4-signed request makes, with the parameters its URL and body carry."""
    scope = _SCOPE.search(request.get_header("Authorization") or "")
    if scope is None:
        return None
    if request.get_header("X-prometheus-remote-write-version"):
        return Request(*REMOTE_WRITE, {})
    url = urllib.parse.urlsplit(request.full_url)
    try:
        model = _MODELS.get_service_model(scope.group(1))
    except UnknownServiceError:
        return Request(scope.group(1), f"{request.get_method()} {url.path}", {})
    return Request(model.endpoint_prefix, *_operation(model, request, url))


def _operation(model, request: urllib.request.Request, url: urllib.parse.SplitResult) -> tuple[str, dict]:
    if model.protocol in ("query", "ec2"):
        fields = urllib.parse.parse_qs(url.query) | urllib.parse.parse_qs((request.data or b"").decode())
        return fields["Action"][0], {name: values[0] for name, values in fields.items() if name not in ("Action", "Version")}
    target = request.get_header("X-amz-target")
    if target:
        return target.rsplit(".", 1)[-1], json.loads(request.data or b"{}")
    return _rest_operation(model, request.get_method(), url)


def _sse(headers) -> dict:
    """What an S3 answer says of its object's encryption, as botocore names it."""
    return {"ServerSideEncryption": headers.get("x-amz-server-side-encryption"),
            "BucketKeyEnabled": headers.get("x-amz-server-side-encryption-bucket-key-enabled") == "true"}


def _encrypted(client, operation: str, params) -> frozenset[str]:
    """The volume AttachVolume attaches, when moto holds it encrypted (EC2 then makes a KMS grant)."""
    if operation != "AttachVolume":
        return frozenset()
    from moto.ec2.models import ec2_backends

    volume = ec2_backends[ACCOUNT][client.meta.region_name].volumes.get(params.get("VolumeId"))
    return frozenset({volume.id}) if volume is not None and volume.encrypted else frozenset()


def _rest_operation(model, method: str, url: urllib.parse.SplitResult) -> tuple[str, dict]:
    """The REST operation whose method and request URI (path template and literal query keys)
    match, the most specific first, with the URI's parameters; path-style addressing, as the
    tests' local endpoints use."""
    query = set(urllib.parse.parse_qs(url.query, keep_blank_values=True))
    matches = []
    for name in model.operation_names:
        http_spec = model.operation_model(name).http
        if http_spec.get("method") != method:
            continue
        template, _, literal = http_spec["requestUri"].partition("?")
        keys = {item.split("=")[0] for item in literal.split("&") if item and not item.startswith("x-id")}
        pattern = "".join(
            ".+" if part.endswith("+}") else "[^/]+" if part.startswith("{") else re.escape(part)
            for part in re.split(r"(\{[^}]+\})", template)
        )
        if keys <= query and re.fullmatch(pattern, url.path):
            matches.append((-len(keys), name, template))
    if not matches:
        return f"{method} {url.path}", {}
    _, name, template = min(matches)
    names = re.findall(r"\{([^}+]+)\+?\}", template)
    pattern = "".join("(.+)" if part.endswith("+}") else "([^/]+)" if part.startswith("{") else re.escape(part)
                      for part in re.split(r"(\{[^}]+\})", template))
    found = re.fullmatch(pattern, url.path)
    shapes = model.operation_model(name).input_shape.members
    params = {member: urllib.parse.unquote(value) for member, value in zip(
        [next((key for key, shape in shapes.items() if shape.serialization.get("name") == uri), uri) for uri in names],
        found.groups())}
    return name, params
