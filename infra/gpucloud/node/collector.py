"""`collect`: every scrape interval, read the watch's readings at 127.0.0.1:9835/metrics and
remote-write them, with the collector's own readings, to the stack's Prometheus workspace (AMP).

Why the agent collects, and not Prometheus in agent mode or the ADOT collector: the default AMI
(Deep Learning Base OSS Nvidia Driver GPU AMI, Ubuntu 22.04) ships neither, so either would be a
Go binary of tens of megabytes (Debian's prometheus 2.42 alone is 49,921,048 bytes, `ls -l
/usr/bin/prometheus` on the development machine, 2026-11-25) fetched at boot from GitHub releases
or a public S3 bucket, plus its own memory for scraping and a write-ahead log. That breaks
the rule that a node installs nothing from the internet (issue 13), and cannot work at all under
`network.egress: endpointsOnly`, where only the aps-workspaces interface endpoint answers. The
agent already runs on the image's own Python and reads the instance role's credentials through
IMDSv2; all `collect` adds is an exposition-text parser, a protobuf and snappy encoder and a SigV4
signer, in the standard library. It is a process of its own (gpucloud-node-collect.service), so a
crash of the collector never stops the watch, nor the other way round.

Footprint, measured 2026-11-25 on the development machine with the bundle run as the node runs
it (`.venv/bin/python tests/node/collector_footprint.py ~/.pyenv/versions/3.10.13/bin/python3.10
200`: Python 3.10 -S, an 8-GPU node's readings, 109 samples and 29,173 bytes of text a scrape):
each remote-write request (one scrape plus the collector's 15 readings) is 3,179-3,198 bytes
snappy-compressed; peak RSS 23.0 MB with a workspace that accepts (22.5 MB of it the interpreter
and imports), 28.8 MB with the workspace down and the queue full at 50,000 samples; 6.2 ms of CPU
a cycle (10.5 ms while every request is refused); a 1,962-sample request after an outage takes
6.6 ms to encode and compress (66,066 bytes of protobuf, 4,888 compressed).

The collector's own readings go into every batch it queues (so the workspace sees a failure once
samples arrive again) and into a textfile and 127.0.0.1:9836/metrics for an operator on the node:
scrapes and their failures by reason, samples sent, requests failed by reason, samples dropped by
reason, samples pending, and the time of the last accepted request. Every reason's counter starts
at 0, so that increase() sees the first failure.
"""

from __future__ import annotations

import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpucloud.node.exporter import write_textfile
from gpucloud.node.remote_write import DROP_REASONS, FAILURE_REASONS, Batch, Labels, RemoteWriter

DEFAULT_SCRAPE_URL = "http://127.0.0.1:9835/metrics"
DEFAULT_READINGS_LISTEN = "127.0.0.1:9836"
SCRAPE_TARGET = "watch"
SCRAPE_FAILURE_REASONS = ("unreachable", "http", "invalid")
"""No answer; an answer other than 200; a line that is not exposition text (the whole scrape is
then refused, as Prometheus refuses it)."""
MAX_CACHED_SERIES = 20_000

log = logging.getLogger("gpucloud.node.collector")

_METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE_LINE = re.compile(rf"^({_METRIC_NAME})(?:\{{(.*)\}})?[ \t]+(\S+)[ \t]*$")
_LABEL_PAIR = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*(,|$)')
_VALUE = re.compile(r"^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$", re.IGNORECASE)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class ExpositionError(ValueError):
    """A line of the scraped text is not what the exporter writes."""


def parse_exposition(
    text: str, extra_labels: Mapping[str, str], cache: dict[str, Labels] | None = None
) -> list[tuple[Labels, float]]:
    """Samples of Prometheus text format 0.0.4 as the exporter writes it: `#` lines and blank lines
    skipped, `name{label="value",...} value`, values escaped with \\\\, \\" and \\n, no
    timestamps. `extra_labels` are added where a series lacks them. `cache` maps a series' text to
    its labels, so that every scrape shares one tuple per series (the queue holds many scrapes)."""
    cache = {} if cache is None else cache
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _SAMPLE_LINE.match(line)
        if not match or not _VALUE.match(match.group(3)):
            raise ExpositionError(f"line {number}: not a sample: {line[:200]!r}")
        series = line[:match.start(3)].rstrip()
        labels = cache.get(series)
        if labels is None:
            labels = _labels(match.group(1), match.group(2) or "", extra_labels, number)
            if len(cache) >= MAX_CACHED_SERIES:
                cache.clear()
            cache[series] = labels
        samples.append((labels, float(match.group(3))))
    return samples


def _labels(name: str, text: str, extra_labels: Mapping[str, str], number: int) -> Labels:
    found = {"__name__": name}
    position = 0
    while position < len(text):
        pair = _LABEL_PAIR.match(text, position)
        if not pair or pair.end() == position:
            raise ExpositionError(f"line {number}: bad labels at {text[position:position + 60]!r}")
        label, value = pair.group(1), pair.group(2)
        if label in found:
            raise ExpositionError(f"line {number}: label {label} twice")
        found[label] = re.sub(r"\\(.)", lambda escape: _unescape(escape.group(1), number), value)
        position = pair.end()
        if pair.group(3) != "," and position < len(text):
            raise ExpositionError(f"line {number}: bad labels at {text[position:position + 60]!r}")
    for label, value in extra_labels.items():
        found.setdefault(label, value)
    return tuple(sorted(found.items()))


def _unescape(character: str, number: int) -> str:
    if character not in _ESCAPES:
        raise ExpositionError(f"line {number}: unknown escape \\{character}")
    return _ESCAPES[character]


@dataclass
class ScrapeStats:
    scrapes: int = 0
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCRAPE_FAILURE_REASONS, 0))


READINGS_HELP = {
    "gpucloud_collector_scrapes_total": ("counter", "Scrapes of the agent's readings the collector attempted."),
    "gpucloud_collector_scrape_failures_total": ("counter", "Scrapes that yielded no readings, by reason."),
    "gpucloud_remote_write_samples_total": ("counter", "Samples the workspace accepted."),
    "gpucloud_remote_write_failures_total": ("counter", "Remote-write requests that failed, by reason."),
    "gpucloud_remote_write_dropped_samples_total": ("counter", "Samples given up on, by reason."),
    "gpucloud_remote_write_pending_samples": ("gauge", "Samples queued from earlier scrapes, not yet accepted."),
    "gpucloud_remote_write_last_success_timestamp_seconds": ("gauge", "When the workspace last accepted a request (0: never)."),
}


def own_readings(scrape: ScrapeStats, writer: RemoteWriter, node_labels: Mapping[str, str]) -> list[tuple[Labels, float]]:
    """The collector's readings, labelled like the node's."""
    stats = writer.stats
    rows: list[tuple[str, dict[str, str], float]] = [
        ("gpucloud_collector_scrapes_total", {"target": SCRAPE_TARGET}, scrape.scrapes),
        *(("gpucloud_collector_scrape_failures_total", {"target": SCRAPE_TARGET, "reason": reason}, count)
          for reason, count in scrape.failures.items()),
        ("gpucloud_remote_write_samples_total", {}, stats.samples_sent),
        *(("gpucloud_remote_write_failures_total", {"reason": reason}, stats.failures[reason]) for reason in FAILURE_REASONS),
        *(("gpucloud_remote_write_dropped_samples_total", {"reason": reason}, stats.dropped[reason]) for reason in DROP_REASONS),
        ("gpucloud_remote_write_pending_samples", {}, writer.pending_samples),
        ("gpucloud_remote_write_last_success_timestamp_seconds", {}, stats.last_success_s),
    ]
    return [(tuple(sorted({"__name__": name, **node_labels, **labels}.items())), float(value)) for name, labels, value in rows]


def exposition_text(samples: list[tuple[Labels, float]]) -> str:
    """The readings as Prometheus text, for the textfile and the local /metrics."""
    lines: list[str] = []
    described: set[str] = set()
    for labels, value in samples:
        name = dict(labels)["__name__"]
        if name in READINGS_HELP and name not in described:
            kind, help_text = READINGS_HELP[name]
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            described.add(name)
        pairs = ",".join(f'{label}="{_escape(text)}"' for label, text in labels if label != "__name__")
        lines.append(f"{name}{{{pairs}}} {value!r}")
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass(frozen=True)
class CollectorSettings:
    interval_s: float = 30.0
    scrape_url: str = DEFAULT_SCRAPE_URL
    scrape_timeout_s: float = 10.0
    textfile: Path = Path("/var/lib/node_exporter/textfile_collector/gpucloud-collector.prom")


def scrape_text(url: str, timeout_s: float) -> str:
    """The target's exposition text; raises urllib.error.HTTPError on a status other than 200."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout_s) as response:
        if response.status != 200:
            raise urllib.error.HTTPError(url, response.status, "not 200", response.headers, None)
        return response.read().decode("utf-8")


class Collector:
    """One scrape and one flush per cycle; `run` repeats the cycle every interval."""

    def __init__(
        self,
        settings: CollectorSettings,
        node_labels: Mapping[str, str],
        writer: RemoteWriter,
        fetch: Callable[[str, float], str] = scrape_text,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.node_labels = dict(node_labels)
        self.writer = writer
        self.fetch = fetch
        self.clock = clock
        self.scrape = ScrapeStats()
        self._series_cache: dict[str, Labels] = {}

    def cycle(self) -> None:
        """Scrape, stamp the scrape's time, queue with the collector's readings, send, and write
        the readings for the operator."""
        started = self.clock()
        samples = self._scrape()
        readings = own_readings(self.scrape, self.writer, self.node_labels)
        self.writer.enqueue(Batch(int(started * 1000), samples + readings))
        self.writer.flush()
        write_textfile(self.settings.textfile, exposition_text(own_readings(self.scrape, self.writer, self.node_labels)))

    def _scrape(self) -> list[tuple[Labels, float]]:
        self.scrape.scrapes += 1
        try:
            text = self.fetch(self.settings.scrape_url, self.settings.scrape_timeout_s)
            return parse_exposition(text, self.node_labels, self._series_cache)
        except urllib.error.HTTPError as error:
            reason, detail = "http", f"HTTP {error.code}"
        except (urllib.error.URLError, OSError) as error:
            reason, detail = "unreachable", str(error)
        except (ExpositionError, UnicodeDecodeError) as error:
            reason, detail = "invalid", str(error)
        self.scrape.failures[reason] += 1
        log.warning("scrape of %s failed (%s): %s", self.settings.scrape_url, reason, detail)
        return []

    def run(
        self,
        max_cycles: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Cycle every interval, on a fixed schedule (a slow cycle shortens the next pause; one
        slower than the interval starts the next at once)."""
        cycles = 0
        next_start = monotonic()
        while max_cycles is None or cycles < max_cycles:
            self.cycle()
            cycles += 1
            if max_cycles is not None and cycles >= max_cycles:
                return
            next_start = max(next_start + self.settings.interval_s, monotonic())
            sleep(max(0.0, next_start - monotonic()))
