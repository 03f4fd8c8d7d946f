"""Independent readers of what the collector sends: Google's protobuf runtime over prompb's
message definitions, and cramjam's snappy; and a remote-write receiver on 127.0.0.1 that answers
as told and keeps what it was sent."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cramjam
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def _write_request_class():
    """prometheus/prometheus prompb/types.proto and remote.proto, the fields remote write 1.0 uses."""
    proto = descriptor_pb2.FileDescriptorProto(name="gpucloud_test_prompb.proto", package="gpucloud_test_prompb")
    field = descriptor_pb2.FieldDescriptorProto
    repeated, optional = field.LABEL_REPEATED, field.LABEL_OPTIONAL
    for name, fields in (
        ("Label", [("name", 1, field.TYPE_STRING, optional, None), ("value", 2, field.TYPE_STRING, optional, None)]),
        ("Sample", [("value", 1, field.TYPE_DOUBLE, optional, None), ("timestamp", 2, field.TYPE_INT64, optional, None)]),
        ("TimeSeries", [("labels", 1, field.TYPE_MESSAGE, repeated, "Label"),
                        ("samples", 2, field.TYPE_MESSAGE, repeated, "Sample")]),
        ("WriteRequest", [("timeseries", 1, field.TYPE_MESSAGE, repeated, "TimeSeries")]),
    ):
        message = proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            message.field.add(name=field_name, number=number, type=kind, label=label,
                              type_name=f".gpucloud_test_prompb.{type_name}" if type_name else None)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("gpucloud_test_prompb.WriteRequest"))


WriteRequest = _write_request_class()


def decode_body(body: bytes) -> list[tuple[dict[str, str], list[tuple[float, int]]]]:
    """A remote-write body as [(labels, [(value, timestamp ms), ...]), ...], labels in sent order."""
    request = WriteRequest.FromString(bytes(cramjam.snappy.decompress_raw(body)))
    return [({label.name: label.value for label in series.labels}, [(s.value, s.timestamp) for s in series.samples])
            for series in request.timeseries]


class Receiver:
    """Answers each POST with the next status of `statuses` (then 204), and keeps headers and bodies."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.answered: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 204
                receiver.answered.append(status)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/write"

    def series(self) -> list[tuple[dict[str, str], list[tuple[float, int]]]]:
        return [series for _, body in self.requests for series in decode_body(body)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def values_of(series: list[tuple[dict[str, str], list[tuple[float, int]]]], name: str,
              where: Callable[[dict[str, str]], bool] = lambda labels: True) -> list[float]:
    return [value for labels, samples in series if labels["__name__"] == name and where(labels) for value, _ in samples]
