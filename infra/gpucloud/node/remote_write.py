"""Prometheus remote write 1.0 to an Amazon Managed Service for Prometheus workspace.

As the Remote-Write 1.0 specification has it (prometheus.io/docs/specs/remote_write_spec, April
2023, read 2026-11-25): a POST whose body is a snappy-compressed (block format) protobuf
`WriteRequest`, with Content-Encoding: snappy, Content-Type: application/x-protobuf,
X-Prometheus-Remote-Write-Version: 0.1.0 and a User-Agent; labels sorted by name with `__name__`
among them; each series' samples in timestamp order. A 5xx is retried with backoff, and so is a 429
(the spec allows it; AMP throttles with 429); any other 4xx is never retried: its samples are
dropped and counted. The messages are those of prometheus/prometheus prompb/types.proto and
remote.proto: WriteRequest{1: repeated TimeSeries}, TimeSeries{1: repeated Label, 2: repeated
Sample}, Label{1: name, 2: value}, Sample{1: double value, 2: int64 timestamp in ms}; with so few
fields they are encoded here by hand rather than with a protobuf library the node lacks.

Samples wait in a bounded in-memory queue, one batch per scrape, and go out oldest first; when the
queue is full the oldest batch is dropped and counted. Requests are signed with SigV4 for service
`aps` with the instance role's credentials.
"""

from __future__ import annotations

import datetime
import logging
import re
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from gpucloud.node.retry import Backoff
from gpucloud.node.sigv4 import Credentials, CredentialsError, sign
from gpucloud.node.snappy import compress, varint

Labels = tuple[tuple[str, str], ...]
"""A series' labels as (name, value) pairs sorted by name, `__name__` included."""

HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
    "User-Agent": "gpucloud-node-collector/1",
}
SERVICE = "aps"
FAILURE_REASONS = ("3xx", "4xx", "5xx", "throttled", "network", "credentials")
"""Why a request failed: its HTTP status class (429 counts as throttled), no answer, or no
credentials to sign it with."""
DROP_REASONS = ("queue_full", "rejected")
_WORKSPACE_HOST = re.compile(r"^aps-workspaces\.([a-z0-9-]+)\.amazonaws\.com$")

log = logging.getLogger("gpucloud.node.remote_write")


def region_of(url: str) -> str | None:
    """The region of an AMP remote-write URL (aps-workspaces.<region>.amazonaws.com), else None."""
    match = _WORKSPACE_HOST.match(urllib.parse.urlsplit(url).hostname or "")
    return match.group(1) if match else None


def encode_write_request(series: Iterable[tuple[Labels, Sequence[tuple[float, int]]]]) -> bytes:
    """The protobuf WriteRequest for (labels, [(value, timestamp ms), ...]) pairs."""
    out = bytearray()
    for labels, samples in series:
        body = bytearray()
        for name, value in labels:
            _field_bytes(body, 1, _field_bytes(bytearray(), 1, name.encode("utf-8")) + _field_bytes(bytearray(), 2, value.encode("utf-8")))
        for value, timestamp_ms in samples:
            sample = bytearray(b"\x09") + struct.pack("<d", value) + b"\x10" + varint(timestamp_ms & 0xFFFFFFFFFFFFFFFF)
            _field_bytes(body, 2, sample)
        _field_bytes(out, 1, body)
    return bytes(out)


def _field_bytes(out: bytearray, number: int, payload: bytes) -> bytearray:
    """Append a length-delimited field (wire type 2)."""
    out += varint(number << 3 | 2)
    out += varint(len(payload))
    out += payload
    return out


@dataclass
class Batch:
    """One scrape's samples, all stamped with the scrape's time."""

    timestamp_ms: int
    samples: list[tuple[Labels, float]]


@dataclass
class RemoteWriteStats:
    """What the collector reports about its own sending."""

    samples_sent: int = 0
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURE_REASONS, 0))
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    last_success_s: float = 0.0
    """Unix time of the last request the workspace accepted; 0 before the first."""


class RemoteWriter:
    """Queues batches and sends them, oldest first, to one remote-write URL."""

    def __init__(
        self,
        url: str,
        region: str,
        credentials: Callable[[], Credentials],
        max_pending_samples: int = 50_000,
        max_samples_per_request: int = 2_000,
        timeout_s: float = 10.0,
        backoff: Backoff = Backoff(attempts=3, initial_s=1.0, max_s=4.0),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url
        self.region = region
        self.credentials = credentials
        self.max_pending_samples = max_pending_samples
        self.max_samples_per_request = max_samples_per_request
        self.timeout_s = timeout_s
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock
        self.stats = RemoteWriteStats()
        self._queue: deque[Batch] = deque()
        self._pending = 0

    @property
    def pending_samples(self) -> int:
        return self._pending

    def enqueue(self, batch: Batch) -> None:
        self._queue.append(batch)
        self._pending += len(batch.samples)
        while self._pending > self.max_pending_samples and self._queue:
            oldest = self._queue.popleft()
            self._pending -= len(oldest.samples)
            self.stats.dropped["queue_full"] += len(oldest.samples)
            log.warning("remote-write queue full: dropped %d samples from %d", len(oldest.samples), oldest.timestamp_ms)

    def flush(self) -> bool:
        """Send until the queue is empty (True), or a request still fails after its retries or
        cannot be signed (False: its samples stay queued, first in line for the next flush)."""
        while self._queue:
            count = self._head_batches()
            batches = [self._queue[index] for index in range(count)]
            outcome = self._send_with_retries(batches)
            if outcome == "retry-later":
                return False
            for _ in range(count):
                self._pending -= len(self._queue.popleft().samples)
            size = sum(len(batch.samples) for batch in batches)
            if outcome == "sent":
                self.stats.samples_sent += size
                self.stats.last_success_s = self.clock()
            else:
                self.stats.dropped["rejected"] += size
        return True

    def _head_batches(self) -> int:
        """How many batches from the head make one request: at least one, and as many more as fit."""
        count, size = 1, len(self._queue[0].samples)
        while count < len(self._queue) and size + len(self._queue[count].samples) <= self.max_samples_per_request:
            size += len(self._queue[count].samples)
            count += 1
        return count

    def _send_with_retries(self, batches: list[Batch]) -> str:
        body = compress(encode_write_request(_series(batches)))
        delays = self.backoff.delays()
        while True:
            try:
                credentials = self.credentials()
            except CredentialsError as error:
                self.stats.failures["credentials"] += 1
                log.error("remote write: %s", error)
                return "retry-later"
            reason, detail = self._post(body, credentials)
            if reason is None:
                return "sent"
            self.stats.failures[reason] += 1
            if reason in ("3xx", "4xx"):
                log.error("remote write rejected, %d samples dropped: %s", sum(len(b.samples) for b in batches), detail)
                return "rejected"
            delay = next(delays, None)
            if delay is None:
                log.warning("remote write failed (%s), keeping %d samples queued: %s", reason, self._pending, detail)
                return "retry-later"
            log.info("remote write failed (%s): %s; retrying in %.1f s", reason, detail, delay)
            self.sleep(delay)

    def _post(self, body: bytes, credentials: Credentials) -> tuple[str | None, str]:
        """(None, '') when the workspace took it, else (failure reason, what it said)."""
        now = datetime.datetime.fromtimestamp(self.clock(), datetime.timezone.utc)
        headers = sign("POST", self.url, HEADERS, body, credentials, self.region, SERVICE, now)
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as error:
            status = error.code
            detail = f"HTTP {error.code}: {error.read(512).decode('utf-8', 'replace').strip()}"
            return ("throttled" if status == 429 else f"{status // 100}xx"), detail
        except (urllib.error.URLError, OSError) as error:
            return "network", str(error)
        return None, ""


def _series(batches: Sequence[Batch]) -> list[tuple[Labels, list[tuple[float, int]]]]:
    """Each series once per request, its samples oldest first (batches come oldest first)."""
    by_labels: dict[Labels, list[tuple[float, int]]] = {}
    for batch in batches:
        for labels, value in batch.samples:
            by_labels.setdefault(labels, []).append((value, batch.timestamp_ms))
    return list(by_labels.items())
