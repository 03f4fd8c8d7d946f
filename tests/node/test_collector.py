"""The collector's pieces, each against an independent reference: its snappy and protobuf read back
by cramjam and Google's protobuf runtime, its SigV4 signature equal to botocore's, its retries and
drops as the remote-write spec asks, against a receiver on 127.0.0.1."""

from __future__ import annotations

import datetime
import json
import os
import urllib.error
from pathlib import Path
from unittest import mock

import cramjam
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotocoreCredentials
from gpucloud.node import snappy
from gpucloud.node.collector import Collector, CollectorSettings, ExpositionError, exposition_text, parse_exposition
from gpucloud.node.remote_write import HEADERS, Batch, RemoteWriter, encode_write_request, region_of
from gpucloud.node.retry import Backoff
from gpucloud.node.sigv4 import Credentials, CredentialsError, InstanceRoleCredentials, sign
from node_fakes import fixture_text
from remote_write_checks import Receiver, decode_body, values_of

RUN = "h100-watch/run-2026-11-25"
NODE = {"project": "llm", "group": "llm-train", "instance_id": "i-0abc", "instance_type": "p5.48xlarge"}
KEYS = Credentials("ASIAEXAMPLE", "secret", "session-token")
NO_WAIT = Backoff(attempts=3, initial_s=1.0, max_s=4.0)


@pytest.mark.parametrize("data", [
    b"", b"a", b"abcd" * 1000, os.urandom(70_000), b"x" * 200_000,
    fixture_text(f"{RUN}/healthy-interval-4.prom").encode() * 8,
], ids=["empty", "one-byte", "repeats", "random", "run", "eight-interval-files"])
def test_snappy_output_is_read_back_by_an_independent_decoder(data):
    compressed = snappy.compress(data)

    assert bytes(cramjam.snappy.decompress_raw(compressed)) == data


def test_snappy_uses_copies_so_exposition_text_shrinks():
    text = fixture_text(f"{RUN}/healthy-interval-4.prom").encode()

    assert len(snappy.compress(text)) < len(text) / 3


def test_write_request_decodes_with_googles_protobuf_runtime():
    labels = (("UUID", "GPU-2a6a"), ("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("gpu", "0"), ("note", "é\n\"x\""))
    body = snappy.compress(encode_write_request([(labels, [(39.0, 1764043200000), (float("inf"), 1764043230000)])]))

    [(decoded, samples)] = decode_body(body)

    assert list(decoded.items()) == list(labels)
    assert samples == [(39.0, 1764043200000), (float("inf"), 1764043230000)]


def test_parsing_the_exporters_text_sorts_labels_and_adds_the_node_labels_only_where_missing():
    samples = parse_exposition(fixture_text(f"{RUN}/healthy-interval-4.prom"), {**NODE, "instance_id": "i-other"})
    by_name = {dict(labels)["__name__"]: (dict(labels), value) for labels, value in samples}

    labels, value = by_name["DCGM_FI_DEV_GPU_TEMP"]
    assert value == 39 and labels["UUID"] == "GPU-2a6ac75e-286e-d2b7-b98d-7ab75dc6b06e"
    assert labels["instance_id"] == "i-device" and labels["project"] == "device"
    assert all([name for name, _ in labels] == sorted(name for name, _ in labels) for labels, _ in samples)
    assert len(samples) == sum(1 for line in fixture_text(f"{RUN}/healthy-interval-4.prom").splitlines()
                               if line and not line.startswith("#"))


def test_parsing_unescapes_label_values_and_shares_one_label_tuple_per_series():
    cache: dict = {}
    text = 'up{path="C:\\\\dir",quote="say \\"hi\\"",lines="a\\nb",} 1\n'

    first = parse_exposition(text, {}, cache)
    second = parse_exposition(text, {}, cache)

    assert dict(first[0][0]) == {"__name__": "up", "path": "C:\\dir", "quote": 'say "hi"', "lines": "a\nb"}
    assert first[0][0] is second[0][0]


@pytest.mark.parametrize("line", [
    'up{a="1"} one', 'up{a="1" 1', 'up{a="1",a="2"} 1', 'up{a="\\t"} 1', '1up 1', 'up{a=1} 1', 'up 1 1764043200000',
    'up 1_000',
])
def test_parsing_refuses_what_the_exporter_never_writes(line):
    with pytest.raises(ExpositionError):
        parse_exposition(f"# HELP up fine\n{line}\n", {})


def test_the_collectors_own_text_parses_back_to_its_readings():
    writer = RemoteWriter("http://127.0.0.1:9/api/v1/write", "us-east-1", lambda: KEYS)
    collector = Collector(CollectorSettings(), {**NODE, "group": 'odd "name"'}, writer)
    from gpucloud.node.collector import own_readings

    readings = own_readings(collector.scrape, writer, collector.node_labels)

    assert parse_exposition(exposition_text(readings), {}) == readings


def test_sigv4_signature_equals_botocores_for_the_same_credentials_time_and_request():
    url = "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-0f3c-42/api/v1/remote_write"
    now = datetime.datetime(2026, 11, 25, 12, 0, 5, tzinfo=datetime.timezone.utc)
    body = snappy.compress(b"readings" * 50)
    request = AWSRequest("POST", url, data=body, headers=dict(HEADERS))
    with mock.patch("botocore.auth.get_current_datetime", return_value=now.replace(tzinfo=None)):
        SigV4Auth(BotocoreCredentials(KEYS.access_key_id, KEYS.secret_access_key, KEYS.session_token),
                  "aps", "eu-west-1").add_auth(request)

    signed = sign("POST", url, HEADERS, body, KEYS, region_of(url), "aps", now)

    assert region_of(url) == "eu-west-1"
    assert signed["Authorization"] == request.headers["Authorization"]
    assert signed["X-Amz-Date"] == request.headers["X-Amz-Date"] == "20261125T120005Z"
    assert signed["X-Amz-Security-Token"] == "session-token"


def test_role_credentials_come_from_imdsv2_and_are_fetched_again_near_expiry(metadata_stub):
    issued = []

    def role() -> str:
        issued.append(len(issued) + 1)
        return json.dumps({"Code": "Success", "AccessKeyId": f"ASIA{len(issued)}", "SecretAccessKey": "s",
                           "Token": "t", "Expiration": "2026-11-25T18:00:00Z"})

    metadata_stub.routes["/latest/meta-data/iam/security-credentials/"] = "gpu-cloud-node\n"
    metadata_stub.routes["/latest/meta-data/iam/security-credentials/gpu-cloud-node"] = role
    expiry = datetime.datetime(2026, 11, 25, 18, tzinfo=datetime.timezone.utc).timestamp()
    now = [expiry - 3600]
    provider = InstanceRoleCredentials(metadata_stub.client(), clock=lambda: now[0])

    first, again = provider.get(), provider.get()
    now[0] = expiry - 300
    refreshed = provider.get()

    assert (first.access_key_id, again.access_key_id, refreshed.access_key_id) == ("ASIA1", "ASIA1", "ASIA2")
    assert first.session_token == "t" and first.expires_at == expiry
    assert all(method == "PUT" or status == 200 for method, _, status in metadata_stub.requests)


def test_no_instance_role_is_a_credentials_error(metadata_stub):
    with pytest.raises(CredentialsError):
        InstanceRoleCredentials(metadata_stub.client()).get()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def writer_for(receiver: Receiver, **options) -> tuple[RemoteWriter, list[float]]:
    pauses: list[float] = []
    return RemoteWriter(receiver.url, "us-east-1", lambda: KEYS, backoff=NO_WAIT, sleep=pauses.append, **options), pauses


def batch(at_ms: int, count: int = 3) -> Batch:
    return Batch(at_ms, [((("__name__", "up"), ("gpu", str(index))), float(at_ms)) for index in range(count)])


@pytest.mark.node_aws_calls("prometheus")
def test_5xx_and_429_are_retried_with_backoff_then_sent(receiver):
    receiver.statuses = [500, 429]
    writer, pauses = writer_for(receiver)
    writer.enqueue(batch(1000))

    assert writer.flush() is True

    assert receiver.answered == [500, 429, 204] and pauses == [1.0, 2.0]
    assert writer.stats.failures["5xx"] == writer.stats.failures["throttled"] == 1
    assert writer.stats.samples_sent == 3 and writer.pending_samples == 0 and writer.stats.last_success_s > 0
    headers, _ = receiver.requests[-1]
    assert {name: headers[name] for name in HEADERS} == HEADERS
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/")


@pytest.mark.node_aws_calls("prometheus")
def test_a_400_is_never_retried_its_samples_are_dropped_and_the_next_batch_goes(receiver):
    receiver.statuses = [400]
    writer, pauses = writer_for(receiver, max_samples_per_request=3)
    writer.enqueue(batch(1000))
    writer.enqueue(batch(2000))

    assert writer.flush() is True

    assert receiver.answered == [400, 204] and pauses == []
    assert writer.stats.failures["4xx"] == 1 and writer.stats.dropped["rejected"] == 3
    assert values_of(receiver.series()[-3:], "up") == [2000.0] * 3


@pytest.mark.node_aws_calls("prometheus")
def test_failing_past_the_retries_keeps_samples_queued_and_sends_them_first_next_time(receiver):
    receiver.statuses = [503, 503, 503]
    writer, _ = writer_for(receiver)
    writer.enqueue(batch(1000))

    assert writer.flush() is False
    assert writer.pending_samples == 3 and writer.stats.failures["5xx"] == 3

    writer.enqueue(batch(2000))
    assert writer.flush() is True
    [(labels, samples), *_] = decode_body(receiver.requests[-1][1])
    assert samples == [(1000.0, 1000), (2000.0, 2000)]


def test_a_full_queue_drops_the_oldest_scrape_and_counts_it():
    writer = RemoteWriter("http://127.0.0.1:9/api/v1/write", "us-east-1", lambda: KEYS, max_pending_samples=7)
    for at in (1000, 2000, 3000):
        writer.enqueue(batch(at))

    assert writer.pending_samples == 6 and writer.stats.dropped["queue_full"] == 3


@pytest.mark.node_aws_calls("prometheus")
def test_an_unreachable_workspace_and_missing_credentials_are_counted_apart():
    closed = RemoteWriter("http://127.0.0.1:9/api/v1/write", "us-east-1", lambda: KEYS, backoff=Backoff(attempts=1))

    def no_role() -> Credentials:
        raise CredentialsError("the instance has no IAM role")

    unsigned = RemoteWriter("http://127.0.0.1:9/api/v1/write", "us-east-1", no_role)
    for writer in (closed, unsigned):
        writer.enqueue(batch(1000))
        assert writer.flush() is False

    assert closed.stats.failures["network"] == 1 and closed.stats.failures["credentials"] == 0
    assert unsigned.stats.failures["credentials"] == 1 and unsigned.pending_samples == 3


@pytest.mark.node_aws_calls("prometheus")
def test_a_cycle_stamps_the_scrape_time_adds_the_collectors_readings_and_counts_a_failed_scrape(receiver, tmp_path):
    texts = [fixture_text(f"{RUN}/healthy-interval-4.prom"), urllib.error.URLError("refused"), "up{ 1\n"]

    def fetch(url: str, timeout_s: float) -> str:
        text = texts.pop(0)
        if isinstance(text, Exception):
            raise text
        return text

    writer, _ = writer_for(receiver)
    collector = Collector(CollectorSettings(textfile=tmp_path / "collector.prom"), NODE, writer, fetch=fetch,
                          clock=iter([1764043200.25, 1764043230.25, 1764043260.25]).__next__)
    for _ in range(3):
        collector.cycle()

    series = receiver.series()
    temperatures = [samples for labels, samples in series if labels["__name__"] == "DCGM_FI_DEV_GPU_TEMP"]
    assert temperatures == [[(39.0, 1764043200250)]]
    failures = {labels["reason"]: samples[0] for labels, samples in series
                if labels["__name__"] == "gpucloud_collector_scrape_failures_total" and samples[0][1] == 1764043260250}
    assert failures == {"unreachable": (1.0, 1764043260250), "http": (0.0, 1764043260250), "invalid": (1.0, 1764043260250)}
    readings = [labels for labels, _ in series if labels["__name__"].startswith("gpucloud_remote_write_")]
    assert readings and all({key: labels[key] for key in NODE} == NODE for labels in readings)
    local = (tmp_path / "collector.prom").read_text()
    assert 'gpucloud_collector_scrape_failures_total{group="llm-train",instance_id="i-0abc"' in local
    assert 'reason="invalid",target="watch"} 1.0' in local


@pytest.mark.node_aws_calls("prometheus")
def test_the_collect_command_signs_with_the_instance_roles_credentials_and_labels_from_metadata(
    metadata_stub, receiver, tmp_path, monkeypatch
):
    from gpucloud.node.cli import main
    from gpucloud.node.exporter import serve_textfile

    metadata_stub.serve_instance("i-0123456789abcdef0")
    metadata_stub.routes["/latest/meta-data/instance-type"] = "p5.48xlarge"
    metadata_stub.routes["/latest/meta-data/iam/security-credentials/"] = "gpu-cloud-node\n"
    metadata_stub.routes["/latest/meta-data/iam/security-credentials/gpu-cloud-node"] = json.dumps(
        {"Code": "Success", "AccessKeyId": "ASIAROLE", "SecretAccessKey": "s", "Token": "role-token",
         "Expiration": "2099-01-01T00:00:00Z"})
    (tmp_path / "watch.prom").write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 97\n')
    watch = serve_textfile(tmp_path / "watch.prom", "127.0.0.1:0")
    config = tmp_path / "node.json"
    config.write_text(json.dumps({"project": "llm", "group_name": "llm-train", "prometheus_remote_write_url": receiver.url,
                                  "prometheus_scrape_interval_s": 10}))
    monkeypatch.setenv("GPUCLOUD_IMDS_ENDPOINT", metadata_stub.endpoint)
    try:
        status = main(["--config", str(config), "collect", "--cycles", "1", "--listen", "",
                       "--scrape-url", f"http://127.0.0.1:{watch.server_address[1]}/metrics",
                       "--textfile", str(tmp_path / "collector.prom")])
    finally:
        watch.shutdown()

    assert status == 0
    [(labels, samples)] = [(labels, samples) for labels, samples in receiver.series()
                           if labels["__name__"] == "DCGM_FI_DEV_GPU_UTIL"]
    assert labels == {"UUID": "GPU-1", "__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "group": "llm-train",
                      "instance_id": "i-0123456789abcdef0", "instance_type": "p5.48xlarge", "project": "llm"}
    headers, _ = receiver.requests[0]
    assert headers["X-Amz-Security-Token"] == "role-token"
    assert "Credential=ASIAROLE/" in headers["Authorization"] and "/us-east-1/aps/aws4_request" in headers["Authorization"]
