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
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import http
import re
import sys
import threading
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
        self._lock = threading.Lock()

    def by_service(self) -> dict[str, list[str]]:
        services: dict[str, list[str]] = {}
        for service, operation in sorted(self.calls):
            services.setdefault(service, []).append(operation)
        return services

    def _add(self, call: tuple[str, str]) -> None:
        with self._lock:
            self.calls.add(call)

    @contextlib.contextmanager
    def recording(self) -> Iterator[AwsCalls]:
        calls = self
        make_api_call, create_client, open_url = (
            BaseClient._make_api_call, Session.create_client, urllib.request.OpenerDirector.open)

        def recorded_api_call(client, operation_name, api_params):
            by_node = _caller_is_node_code()
            if by_node or (by_node is None and getattr(client, "_gpucloud_node_client", False)):
                prefix = client.meta.service_model.endpoint_prefix
                calls._add((ENDPOINT_SERVICES.get(prefix, prefix), operation_name))
            return make_api_call(client, operation_name, api_params)

        def tagged_client(session, *args, **kwargs):
            client = create_client(session, *args, **kwargs)
            client._gpucloud_node_client = _node_code_on_stack()
            return client

        def recorded_open(opener, fullurl, *args, **kwargs):
            if isinstance(fullurl, urllib.request.Request) and _node_code_on_stack():
                call = signed_call(fullurl)
                if call:
                    calls._add(call)
            return open_url(opener, fullurl, *args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(BaseClient, "_make_api_call", recorded_api_call)
            patch.setattr(Session, "create_client", tagged_client)
            patch.setattr(urllib.request.OpenerDirector, "open", recorded_open)
            yield self


def signed_call(request: urllib.request.Request) -> tuple[str, str] | None:
    """The AWS call a SigV4-signed request makes, or None for an unsigned one (IMDS, a scrape)."""
    scope = _SCOPE.search(request.get_header("Authorization") or "")
    if scope is None:
        return None
    if request.get_header("X-prometheus-remote-write-version"):
        return REMOTE_WRITE
    url = urllib.parse.urlsplit(request.full_url)
    try:
        model = _MODELS.get_service_model(scope.group(1))
    except UnknownServiceError:
        return scope.group(1), f"{request.get_method()} {url.path}"
    return model.endpoint_prefix, _operation(model, request, url)


def _operation(model, request: urllib.request.Request, url: urllib.parse.SplitResult) -> str:
    if model.protocol in ("query", "ec2"):
        fields = urllib.parse.parse_qs(url.query) | urllib.parse.parse_qs((request.data or b"").decode())
        return fields["Action"][0]
    target = request.get_header("X-amz-target")
    if target:
        return target.rsplit(".", 1)[-1]
    return _rest_operation(model, request.get_method(), url)


def _rest_operation(model, method: str, url: urllib.parse.SplitResult) -> str:
    """The REST operation whose method and request URI (path template and literal query keys)
    match, the most specific first; path-style addressing, as the tests' local endpoints use."""
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
            matches.append((-len(keys), name))
    if not matches:
        return f"{method} {url.path}"
    return min(matches)[1]
