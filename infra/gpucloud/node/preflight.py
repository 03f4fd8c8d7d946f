"""`gpucloud-node preflight`: one node's share of the fabric preflight `gpucloud run` sends before
a job's ranks start (node/preflight_search.py decides what the results mean across nodes).

On this node: the GPU gate's checks (`run_node_check`, the same as `gpucloud-node check`); on an
EFA type, the EFA devices libfabric lists (`fi_info -p efa`) against the count the type has; then
`preflight_worker.py` under torchrun, started through the job launcher (`Launch`) with the job's
own rendezvous and NCCL environment: a bf16 matrix multiply and a device-memory copy per GPU
against the GPU model's floors, and an all_reduce sweep across the set's nodes, with NCCL's init
log (NCCL_DEBUG=INFO) read back to see which network NCCL chose. Every step has a time limit, and
what cannot run (no torchrun, no PyTorch, no NCCL) is a problem in the result, not a hang.

The result is one JSON object: on stdout after RESULT_MARKER (Run Command keeps the first 24,000
characters of stdout, SSM API reference, GetCommandInvocation; read 2026-11-28), in the job's
directory as preflight.json, and as Prometheus readings in node_exporter's textfile directory,
beside the watch's. Exit status (node/preflight_search.py EXIT_*): 0 no problem, 1 a problem on this
node, 2 the set's all_reduce below its floor, 3 the set's test could not run; the job supervisor's
search reads these alone (the figures say which).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucloud.node.commands import CommandRunner
from gpucloud.node.exporter import _labels, write_textfile
from gpucloud.node.nvidia import model_matches
from gpucloud.node.preflight_search import EXIT_BELOW_FLOOR, EXIT_NODE_PROBLEM, EXIT_NOT_RUN
from gpucloud.node.tuning import FI_INFO

RESULT_MARKER = "GPUCLOUD-PREFLIGHT "
FLOORS_PATH = Path(__file__).with_name("preflight_floors.json")
WORKER_PATH = Path(__file__).with_name("preflight_worker.py")
TEXTFILE = Path("/var/lib/node_exporter/textfile_collector/gpucloud_preflight.prom")
TIMEOUTS_S = {"quick": 100, "full": 600}
"""The most the torchrun step may take, start-up and NCCL's init included."""
EXIT_TIMEOUT = 124
"""coreutils `timeout`'s status when the limit ended the command."""
NCCL_LOG_ENVIRONMENT = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}

log = logging.getLogger("gpucloud.node.preflight")

_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$", re.MULTILINE)
_VIA_NET = re.compile(r"via NET/([A-Za-z ]+?)/\d")


@dataclass(frozen=True)
class PreflightSpec:
    """What `gpucloud run` asked this node to test, with whom."""

    job_id: str
    nodes: tuple[str, ...]
    port: int
    level: str = "quick"
    checks: tuple[str, ...] = ("local", "fabric")
    gpus_per_node: int | None = None
    image: str | None = None
    instance_type: str = ""
    efa_devices: int | None = None
    """EFA devices this type must show; None: the floors file's count for the type (0: not EFA)."""


def load_floors(path: Path = FLOORS_PATH) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def busbw_floor(floors: Mapping[str, Any], kind: str, nodes: int) -> float | None:
    """The floor of an instance type (or a recording host) for a set of `nodes` nodes: the entry for
    the largest node count not above it. None: the type has no floor, so bandwidth is not judged."""
    entry = floors.get("instance_types", {}).get(kind) or floors.get("hosts", {}).get(kind)
    if not entry:
        return None
    counts = sorted(int(count) for count in entry["busbw_gbps"] if int(count) <= nodes)
    return float(entry["busbw_gbps"][str(counts[-1])]) if counts else None


def fabric_problem(result: Mapping[str, Any], floors: Mapping[str, Any]) -> str | None:
    """The set's bus bandwidth against the type's floor for its node count, judged on each node too,
    so a preflight step that reads only exit statuses (the job supervisor's) stops on a slow fabric."""
    nodes = len(result["set"])
    floor = busbw_floor(floors, result["instance_type"], nodes)
    busbw = result.get("busbw_gbps")
    if floor is None or busbw is None or (result.get("world_size") or 0) < 2 or busbw >= floor:
        return None
    return (f"all_reduce bus bandwidth {busbw:g} GB/s across {nodes} node(s) is below the {result['instance_type']} "
            f"floor of {floor:g} GB/s")


def efa_device_count(fi_info_output: str) -> int:
    """EFA devices in `fi_info -p efa`: one reliable-datagram (`-rdm`) domain per device (EC2 user
    guide, "Get started with EFA and NCCL", step "Confirm that the EFA software components were
    successfully installed"; read 2026-11-28)."""
    domains = re.findall(r"^\s*domain:\s*(\S+)\s*$", fi_info_output, re.MULTILINE)
    return len({domain for domain in domains if domain.endswith("-rdm")})


def nccl_network(log_text: str) -> str | None:
    """The network NCCL chose, from its INIT/NET lines: `Using network Libfabric` (the OFI plugin:
    NVIDIA/nccl#1597), `AWS Libfabric` in older plugins (aws/aws-ofi-nccl#24), `Socket` when it
    fell back to TCP (aws/aws-k8s-tester#464), or the `via NET/<name>/` of a channel line."""
    named = _NETWORK.findall(log_text)
    if named:
        return named[-1].strip()
    via = _VIA_NET.findall(log_text)
    return via[-1].strip() if via else None


def network_problem(network: str | None, efa_devices: int, nodes: int) -> str | None:
    """On an EFA type NCCL must go between nodes through the OFI plugin; TCP sockets there run a
    job many times slower without an error (aws/aws-ofi-nccl#1055: 1.73 against 12.01 GB/s)."""
    if efa_devices <= 0 or nodes < 2:
        return None
    if network is None:
        return "NCCL logged no network choice (NCCL_DEBUG=INFO): cannot tell whether it uses EFA"
    if "libfabric" not in network.lower() and "ofi" not in network.lower():
        return (f"NCCL chose NET/{network}, not the OFI plugin (Libfabric) on an EFA type: the job would "
                "run on TCP sockets; check /opt/aws-ofi-nccl/lib is on LD_LIBRARY_PATH and FI_PROVIDER=efa")
    return None


def gpu_floor(floors: Mapping[str, Any], gpu_name: str) -> tuple[str, Mapping[str, Any]] | None:
    for model, floor in floors.get("gpu_models", {}).items():
        if model_matches(model, gpu_name):
            return model, floor
    return None


def local_problems(ranks: Sequence[Mapping[str, Any]], floors: Mapping[str, Any]) -> list[str]:
    """Each GPU's matmul and copy against its model's floors (a model without floors is not judged)."""
    problems = []
    for item in ranks:
        found = gpu_floor(floors, item.get("gpu", ""))
        if found is None:
            continue
        model, floor = found
        for key, unit in (("matmul_tflops", "TFLOP/s bf16 matmul"), ("copy_gbps", "GB/s device copy")):
            value = item.get(key)
            if value is not None and value < floor[key]:
                problems.append(f"GPU {item.get('local_rank')} ({item.get('gpu')}): {value:g} {unit}, below the "
                                f"{model} floor of {floor[key]:g} (throttled, degraded or mis-clocked)")
    return problems


def worker_argv(spec: PreflightSpec, out: Path, worker: Path, torchrun: str = "torchrun") -> list[str]:
    """torchrun with the job's `$` rendezvous words (the launcher fills them), under `timeout`."""
    limit = TIMEOUTS_S[spec.level]
    return ["timeout", "-k", "10", str(limit), torchrun, "--nnodes", "$NNODES", "--nproc-per-node", "$NPROC_PER_NODE",
            "--node-rank", "$NODE_RANK", "--rdzv-backend", "c10d", "--rdzv-endpoint", "$MASTER_ADDR:$MASTER_PORT",
            "--rdzv-id", "$GPUCLOUD_JOB_ID", str(worker), "--out", str(out), "--checks", ",".join(spec.checks),
            "--level", spec.level, "--timeout-s", str(limit - 10)]


def worker_status_problem(status: int, level: str) -> str | None:
    if status == 0:
        return None
    if status == EXIT_TIMEOUT:
        return f"the preflight's torchrun step did not end within {TIMEOUTS_S[level]} s (a rendezvous or NCCL hang)"
    if status == 127:
        return ("torchrun not found: no PyTorch on this node (the Base DLAMI has no framework): use an AMI or a "
                "job image (--image) with PyTorch")
    return f"the preflight's torchrun step exited with status {status} (see its output above)"


def read_ranks(out: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(out.glob("rank-*.json"))]


def read_nccl_logs(out: Path) -> str:
    return "".join(path.read_text(encoding="utf-8", errors="replace") for path in sorted(out.glob("nccl.*.log")))


def summarize(spec: PreflightSpec, node: str, ranks: Sequence[Mapping[str, Any]], problems: list[str],
              network: str | None, efa_devices: int | None, status: int) -> dict[str, Any]:
    """The node's result: its problems and figures, and the set's sweep as this node's ranks saw it."""
    sweep = next((item["sweep"] for item in ranks if item.get("sweep")), [])
    return {
        "node": node, "set": list(spec.nodes), "instance_type": spec.instance_type, "level": spec.level,
        "checks": list(spec.checks), "ok": not problems, "problems": problems, "exit_status": status,
        "seconds": max((item.get("seconds", 0.0) for item in ranks), default=None),
        "gpus": [{key: item.get(key) for key in ("local_rank", "rank", "gpu", "matmul_tflops", "copy_gbps")}
                 for item in ranks],
        "efa_devices": efa_devices, "network": network,
        "busbw_gbps": sweep[-1]["busbw_gbps"] if sweep else None, "sweep": sweep,
        "correct": all(item.get("correct", True) for item in ranks),
        "world_size": ranks[0]["world_size"] if ranks else None,
        "versions": {key: ranks[0].get(key) for key in ("torch", "nccl")} if ranks else {},
    }


def render_readings(result: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """The result as Prometheus readings, labelled like the watch's."""
    node_labels = {**labels, "job": result.get("job", ""), "level": result["level"]}
    lines = ["# HELP gpucloud_preflight_ok Whether the node passed its last preflight (1) or not (0).",
             "# TYPE gpucloud_preflight_ok gauge", f"gpucloud_preflight_ok{_labels(node_labels)} {int(result['ok'])}"]
    if result.get("busbw_gbps") is not None:
        lines += ["# HELP gpucloud_preflight_busbw_gbps all_reduce bus bandwidth at the sweep's largest size, GB/s.",
                  "# TYPE gpucloud_preflight_busbw_gbps gauge",
                  f"gpucloud_preflight_busbw_gbps{_labels({**node_labels, 'nodes': str(len(result['set']))})} "
                  f"{result['busbw_gbps']:g}"]
    for key, help_text in (("matmul_tflops", "bf16 matmul TFLOP/s of each GPU."),
                           ("copy_gbps", "device-memory copy GB/s of each GPU.")):
        samples = [(gpu, gpu.get(key)) for gpu in result["gpus"] if gpu.get(key) is not None]
        if samples:
            lines += [f"# HELP gpucloud_preflight_{key} {help_text}", f"# TYPE gpucloud_preflight_{key} gauge"]
            lines += [f"gpucloud_preflight_{key}{_labels({**node_labels, 'gpu': str(gpu['local_rank'])})} {value:g}"
                      for gpu, value in samples]
    if result.get("efa_devices") is not None:
        lines += ["# HELP gpucloud_preflight_efa_devices EFA devices fi_info -p efa lists.",
                  "# TYPE gpucloud_preflight_efa_devices gauge",
                  f"gpucloud_preflight_efa_devices{_labels(node_labels)} {result['efa_devices']}"]
    return "\n".join(lines) + "\n"


@dataclass
class Preflight:
    """One node's preflight; `gate`, `run` and `launch` are injected (tests pass recordings)."""

    spec: PreflightSpec
    node: str
    directory: Path
    """The job's directory on this node (the launcher's), where the worker writes its figures."""
    gate: Callable[[], Any]
    """The GPU gate's check: returns a report with `.problems`."""
    run: CommandRunner
    launch: Callable[[list[str], Mapping[str, str]], int]
    """Runs an argv through the job launcher with extra environment; returns its exit status."""
    floors: Mapping[str, Any]
    fi_info: str = FI_INFO

    def __call__(self) -> dict[str, Any]:
        spec = self.spec
        problems: list[str] = []
        if "local" in spec.checks:
            problems += [f"GPU gate: {problem}" for problem in self.gate().problems]
        efa_expected = self._efa_expected()
        efa_found = None
        if efa_expected and "local" in spec.checks:
            efa_found = self._efa_devices(problems)
            if efa_found is not None and efa_found < efa_expected:
                problems.append(f"fi_info -p efa lists {efa_found} EFA device(s); {spec.instance_type} has {efa_expected}")
        out = self.directory / "preflight"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        worker = out / WORKER_PATH.name
        shutil.copyfile(WORKER_PATH, worker)  # under the job directory, which a job container mounts too
        environment = {**NCCL_LOG_ENVIRONMENT, "NCCL_DEBUG_FILE": str(out / "nccl.%h.%p.log")}
        status = self.launch(worker_argv(spec, out, worker), environment)
        problem = worker_status_problem(status, spec.level)
        set_problems = [problem] if problem else []
        ranks = read_ranks(out)
        if "local" in spec.checks:
            problems += local_problems(ranks, self.floors)
        network = nccl_network(read_nccl_logs(out))
        problem = network_problem(network, efa_expected, len(spec.nodes)) if "fabric" in spec.checks else None
        problems += [problem] if problem else []
        if ranks and not all(item.get("correct", True) for item in ranks):
            set_problems.append("all_reduce gave a wrong sum")
        result = summarize(spec, self.node, ranks, problems, network, efa_found, status)
        result["set_problems"] = set_problems
        problem = fabric_problem(result, self.floors) if "fabric" in spec.checks else None
        result["fabric_problems"] = [problem] if problem else []
        result["ok"] = not problems and not set_problems and not problem
        result["job"] = spec.job_id
        return result

    def _efa_expected(self) -> int:
        if self.spec.efa_devices is not None:
            return self.spec.efa_devices
        return int(self.floors.get("instance_types", {}).get(self.spec.instance_type, {}).get("efa_devices", 0))

    def _efa_devices(self, problems: list[str]) -> int | None:
        result = self.run([self.fi_info, "-p", "efa"], 30.0)
        if not result.ok:
            problems.append(f"EFA: {result.describe_failure(30.0)}")
            return None
        return efa_device_count(result.stdout)


def report(result: Mapping[str, Any], labels: Mapping[str, str], directory: Path, textfile: Path = TEXTFILE) -> int:
    """Print, keep and export the result; the exit status says whether this node has a problem."""
    text = json.dumps(result, separators=(",", ":"))
    (directory / "preflight.json").write_text(text + "\n", encoding="utf-8")
    try:
        write_textfile(textfile, render_readings(result, labels))
    except OSError as error:
        log.warning("could not write the preflight readings to %s: %s", textfile, error)
    for problem in [*result["problems"], *result.get("set_problems", []), *result.get("fabric_problems", [])]:
        log.error("preflight: %s", problem)
    sys.stdout.write(RESULT_MARKER + text + "\n")
    sys.stdout.flush()
    return node_exit_status(result)


def node_exit_status(result: Mapping[str, Any]) -> int:
    """What the node's result says, in the order the search needs it: its own problems first."""
    if result["problems"]:
        return EXIT_NODE_PROBLEM
    if result.get("set_problems"):
        return EXIT_NOT_RUN
    if result.get("fabric_problems"):
        return EXIT_BELOW_FLOOR
    return 0
