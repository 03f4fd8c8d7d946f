"""The bootstrap stub on its own: its limits are the layout's, its signatures are botocore's, it
retries with backoff and refuses a bundle whose hash is not the pinned one, and it never unpacks
outside the agent directory."""

from __future__ import annotations

import ast
import datetime
import hashlib
import io
import zipfile

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from gpucloud.userdata import bootstrap_stub as stub
from gpucloud.userdata import layout
from gpucloud.userdata.render import bootstrap_stub_source

CREDENTIALS = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token/with+chars=")
NOW = datetime.datetime(2026, 11, 25, 12, 30, 45, tzinfo=datetime.timezone.utc)


def test_stub_limits_and_places_are_the_layouts():
    assert stub.FETCH_ATTEMPTS == layout.BUNDLE_FETCH_ATTEMPTS
    assert stub.FETCH_TIMEOUT_S == layout.BUNDLE_FETCH_TIMEOUT_SECONDS
    assert (stub.BACKOFF_FIRST_S, stub.BACKOFF_MAX_S) == layout.BUNDLE_BACKOFF_SECONDS
    assert "/" + stub.NODE_CONFIG == layout.NODE_CONFIG_PATH and "/" + stub.AGENT_LIB == layout.AGENT_LIB_DIR


def test_stub_is_standard_library_python_3_9():
    tree = ast.parse(bootstrap_stub_source(), feature_version=(3, 9))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert imported <= {"datetime", "hashlib", "hmac", "json", "os", "shutil", "sys", "time", "urllib", "zipfile", "boto3"}


def botocore_signature(request: AWSRequest, signer) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("botocore.auth.get_current_datetime", lambda: NOW.replace(tzinfo=None))
        signer.add_auth(request)
    return request.headers["Authorization"]


@pytest.mark.parametrize("key", ["agent/gpucloud-node-" + "a" * 64 + ".zip", "agent/with space+plus=eq~tilde.zip"])
def test_s3_get_is_signed_exactly_as_botocore_signs_it(key):
    url = stub.object_url("gpu-cloud-ml-1a2b3c4d-123456789012", key, "eu-west-1")

    ours = stub.sign("GET", url, "eu-west-1", "s3", CREDENTIALS, now=NOW)

    request = AWSRequest(method="GET", url=url, headers={"x-amz-content-sha256": hashlib.sha256(b"").hexdigest()})
    theirs = botocore_signature(request, S3SigV4Auth(Credentials(*CREDENTIALS), "s3", "eu-west-1"))
    assert ours["Authorization"] == theirs


def test_autoscaling_post_is_signed_exactly_as_botocore_signs_it():
    url = stub.service_url("autoscaling", "us-east-1")
    body = b"Action=CompleteLifecycleAction&Version=2011-01-01&InstanceId=i-0123"
    headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}

    ours = stub.sign("POST", url, "us-east-1", "autoscaling", CREDENTIALS, body, headers, now=NOW)

    request = AWSRequest(method="POST", url=url, data=body, headers={
        **headers, "x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    assert ours["Authorization"] == botocore_signature(request, SigV4Auth(Credentials(*CREDENTIALS), "autoscaling", "us-east-1"))


def test_object_urls_are_virtual_hosted_on_aws_and_path_style_on_a_local_endpoint(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    assert stub.object_url("b", "agent/x.zip", "cn-north-1") == "https://b.s3.cn-north-1.amazonaws.com.cn/agent/x.zip"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000/")
    assert stub.object_url("b", "agent/x.zip", "us-east-1") == "http://127.0.0.1:5000/b/agent/x.zip"


CONFIG = {"agent_bucket": "b", "agent_key": "agent/k.zip", "agent_sha256": hashlib.sha256(b"good").hexdigest(), "region": "us-east-1"}


def test_fetch_retries_with_doubling_pauses_and_refuses_every_wrong_hash(monkeypatch):
    answers = iter([OSError("connection reset"), b"tampered", b"tampered", OSError("timed out"), b"x", b"y"])

    def fetch(config, metadata):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    pauses: list[float] = []
    monkeypatch.setattr(stub, "fetch_bundle", fetch)

    assert stub.fetch_verified(CONFIG, metadata=None, sleep=pauses.append) is None
    assert pauses == [5, 10, 20, 40, 60]
    assert sum(pauses) + stub.FETCH_ATTEMPTS * stub.FETCH_TIMEOUT_S == layout.BUNDLE_FETCH_WORST_SECONDS


def test_fetch_returns_the_first_bundle_with_the_pinned_hash(monkeypatch):
    answers = iter([b"tampered", b"good"])
    monkeypatch.setattr(stub, "fetch_bundle", lambda config, metadata: next(answers))

    assert stub.fetch_verified(CONFIG, metadata=None, sleep=lambda seconds: None) == b"good"


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_unpack_replaces_the_agent_directory_whole(tmp_path):
    target = tmp_path / "opt" / "gpucloud" / "lib"
    target.mkdir(parents=True)
    (target / "stale.py").write_text("old agent")

    stub.unpack(zipped({"gpucloud/node/cli.py": b"new"}), str(target))

    assert sorted(path.name for path in target.rglob("*")) == ["cli.py", "gpucloud", "node"]


@pytest.mark.parametrize("member", ["../escape.py", "gpucloud/../../escape.py"])
def test_unpack_refuses_members_outside_the_agent_directory(tmp_path, member):
    target = tmp_path / "lib"

    with pytest.raises(ValueError, match="outside the agent directory"):
        stub.unpack(zipped({member: b"x"}), str(target))

    assert not (tmp_path / "escape.py").exists() and not target.exists()
