"""Test doubles for the node agent: recorded nvidia-smi output and an IMDSv2 stub."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
from gpucloud.node.commands import CommandResult
from gpucloud.node.imds import InstanceMetadata
from gpucloud.node.nvidia import PERSISTENCE_FIELDS, query_argv
from gpucloud.node.retry import Backoff

NVIDIA_SMI_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_smi"
REGION = "us-east-1"
ZONE = "us-east-1a"
GROUP = "ml-train-gpu"
LAUNCH_HOOK = "ml-train-launch"
TERMINATE_HOOK = "ml-train-terminate"
NO_WAIT = Backoff(attempts=3, initial_s=0.001, max_s=0.001)


def fixture_text(relative: str) -> str:
    return (NVIDIA_SMI_FIXTURES / relative).read_text()


@dataclass
class Reply:
    """What a faked command prints and how it ends."""

    stdout: str = ""
    returncode: int | None = 0
    stderr: str = ""
    timed_out: bool = False
    not_found: bool = False


@dataclass
class FakeNvidiaSmi:
    """Answers nvidia-smi invocations from recorded output and records each call.

    A list of replies is consumed in order, for commands whose answer changes (re-queries).
    """

    query: Reply | list[Reply]
    persistence: Reply | list[Reply] | None = None
    enable_persistence: Reply | None = None
    nvlink: Reply | None = None
    topology: Reply | None = None
    details: Reply | None = None
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(
        self, argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        argv = tuple(argv)
        self.calls.append(argv)
        kind = self.kind_of(argv)
        reply = getattr(self, kind)
        if reply is None:
            raise AssertionError(f"unexpected command {argv}")
        if isinstance(reply, list):
            reply = reply.pop(0) if len(reply) > 1 else reply[0]
        return CommandResult(
            argv,
            returncode=None if reply.timed_out or reply.not_found else reply.returncode,
            stdout=reply.stdout,
            stderr=reply.stderr,
            timed_out=reply.timed_out,
            not_found=reply.not_found,
        )

    @staticmethod
    def kind_of(argv: tuple[str, ...]) -> str:
        if argv == tuple(query_argv(argv[0], PERSISTENCE_FIELDS)):
            return "persistence"
        if argv[1].startswith("--query-gpu="):
            return "query"
        return {"-pm": "enable_persistence", "nvlink": "nvlink", "topo": "topology", "-q": "details"}[argv[1]]

    def kinds_called(self) -> list[str]:
        return [self.kind_of(argv) for argv in self.calls]


def recorded(name: str) -> Reply:
    return Reply(stdout=fixture_text(name))


class MetadataStub:
    """An IMDSv2 look-alike on 127.0.0.1: PUT a token first; a GET without a valid token gets 401.

    `routes` maps a path to its body, or to a callable returning the body (None = 404).
    While `failing_gets` is above zero, each GET answers 500 and counts it down (an outage).
    """

    def __init__(self) -> None:
        self.routes: dict[str, str | Callable[[], str | None]] = {}
        self.failing_gets = 0
        self.valid_tokens: set[str] = set()
        self.tokens_issued = 0
        self.requests: list[tuple[str, str, int]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                if self.path != "/latest/api/token" or not self.headers.get(
                    "X-aws-ec2-metadata-token-ttl-seconds"
                ):
                    self._reply(400, "")
                    return
                stub.tokens_issued += 1
                token = f"token-{stub.tokens_issued}"
                stub.valid_tokens.add(token)
                self._reply(200, token)

            def do_GET(self) -> None:
                if self.headers.get("X-aws-ec2-metadata-token") not in stub.valid_tokens:
                    self._reply(401, "")
                    return
                if stub.failing_gets > 0:
                    stub.failing_gets -= 1
                    self._reply(500, "")
                    return
                route = stub.routes.get(self.path)
                body = route() if callable(route) else route
                self._reply(404, "") if body is None else self._reply(200, body)

            def _reply(self, status: int, body: str) -> None:
                stub.requests.append((self.command, self.path, status))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    @property
    def requests_failed(self) -> int:
        return sum(1 for _, _, status in self.requests if status == 500)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def serve_instance(self, instance_id: str, region: str = REGION, zone: str = ZONE) -> None:
        self.routes["/latest/meta-data/instance-id"] = instance_id
        self.routes["/latest/meta-data/placement/region"] = region
        self.routes["/latest/meta-data/placement/availability-zone"] = zone

    def expire_tokens(self) -> None:
        self.valid_tokens.clear()

    def client(self) -> InstanceMetadata:
        return InstanceMetadata(self.endpoint, timeout_s=2.0, backoff=NO_WAIT, sleep=lambda seconds: None)


# One botocore session for all tests: each new session parses the (large) service models again,
# which would cost most of this suite's time; moto intercepts clients of any session.
_SESSION = boto3.session.Session()


@functools.cache
def aws_client(service: str, region: str = REGION):
    """One client per service and region for all tests, as the agent keeps one per process: moto
    resets its backends, not the clients, and making a client cost 10 ms, 5.7 s of the suite's CPU
    in these tests' fixtures and agents (py-spy, 2026-11-27)."""
    return _SESSION.client(service, region_name=region)


def write_rank_files(out: Path, ranks: Sequence[dict], nccl_log: str, log_name: str) -> None:
    """What the preflight worker and NCCL leave in a run's folder: a JSON file per rank and NCCL's init log."""
    for item in ranks:
        (out / f"rank-{item['rank']}.json").write_text(json.dumps(item))
    if nccl_log:
        (out / log_name).write_text(nccl_log)
