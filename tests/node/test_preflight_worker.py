"""The fabric preflight's worker (node/preflight_worker.py), one rank in this process on the CPU with
gloo: what it measures and how (nccl-tests' algbw and busbw from the slowest rank's time, a burn's
slowest rate, the sizes the floors were recorded at) and what it writes for `gpucloud-node
preflight`. The clock and the other ranks are faked where a figure must come out exact."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist

from gpucloud.node import preflight_worker as worker

CPU = torch.device("cpu")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"


class Clock:
    """perf_counter and monotonic that move only when the test moves them."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    monotonic = perf_counter


class OtherRanks:
    """`dist` as rank 0 of `world` sees it: the slowest other rank took `other_s` per all_reduce."""

    ReduceOp = dist.ReduceOp

    def __init__(self, world: int, other_s: float = 0.0) -> None:
        self.world, self.other_s, self.barriers = world, other_s, 0

    def barrier(self) -> None:
        self.barriers += 1

    def all_reduce(self, tensor, op=dist.ReduceOp.SUM) -> None:
        if op == dist.ReduceOp.MAX:
            tensor.fill_(max(float(tensor.item()), self.other_s))
        else:
            tensor.mul_(self.world)


def test_elapsed_is_seconds_per_timed_call_after_two_untimed_warm_up_calls(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(worker, "time", clock)
    calls = []

    def work():
        calls.append(clock.now)
        clock.now += 100.0 if len(calls) <= 2 else 0.5

    assert worker._elapsed(CPU, work, 4) == 0.5
    assert len(calls) == 6


def rates(monkeypatch, seconds: list[float], step_s: float = 4.0):
    """`_elapsed` faked: each call returns the next of `seconds` and moves the clock `step_s`."""
    clock = Clock()
    monkeypatch.setattr(worker, "time", clock)
    timed = []
    left = iter(seconds)

    def elapsed(device, work, iterations):
        timed.append((work(), iterations))
        clock.now += step_s
        return next(left)

    monkeypatch.setattr(worker, "_elapsed", elapsed)
    return timed


def test_matmul_counts_two_n_cubed_bf16_operations_per_call_on_the_cpu(monkeypatch):
    operations = 2 * 512**3
    timed = rates(monkeypatch, [operations / 37.5e12])
    assert worker.matmul_tflops(CPU, 0.0) == 37.5
    [(product, iterations)] = timed
    assert (product.dtype, tuple(product.shape), iterations) == (torch.bfloat16, (512, 512), 2)


def test_a_burn_keeps_timing_until_its_seconds_are_spent_and_reports_the_slowest_rate(monkeypatch):
    operations = 2 * 512**3
    timed = rates(monkeypatch, [operations / 40e12, operations / 25e12, operations / 30e12])
    assert worker.matmul_tflops(CPU, 6.0) == 25.0, "timed at 4 s and 8 s of a burn that ends at 10 s"
    assert len(timed) == 3


def test_copy_counts_bytes_read_and_written_of_sixteen_mib_on_the_cpu(monkeypatch):
    size = 16 << 20
    timed = rates(monkeypatch, [2 * size / 12.5e9, 2 * size / 10e9, 2 * size / 11e9])
    assert worker.copy_gbps(CPU, 6.0) == 10.0
    target, iterations = timed[0]
    assert (target.dtype, target.numel(), iterations, len(timed)) == (torch.uint8, size, 2, 3)
    assert bool(torch.all(target == 1)), "the copy carries the source's bytes"


def test_a_copy_without_a_burn_is_timed_once(monkeypatch):
    size = 16 << 20
    timed = rates(monkeypatch, [2 * size / 12.5e9])
    assert worker.copy_gbps(CPU, 0.0) == 12.5 and len(timed) == 1


def fake_sweep(monkeypatch, world: int, local_s: float, other_s: float):
    """sweep_point with the other ranks and the tensor's allocation faked (a 1 GiB tensor is not needed)."""
    ranks = OtherRanks(world, other_s)
    monkeypatch.setattr(worker, "dist", ranks)
    asked = []
    monkeypatch.setattr(worker, "torch", SimpleNamespace(
        ones=lambda count, **kwargs: asked.append(count) or torch.ones(4, dtype=kwargs["dtype"]),
        tensor=torch.tensor, float32=torch.float32, float64=torch.float64))
    iterations = []
    monkeypatch.setattr(worker, "_elapsed", lambda device, work, count: iterations.append(count) or local_s)
    return ranks, asked, iterations


def test_a_sweep_point_is_nccl_tests_algbw_and_busbw_of_the_slowest_rank(monkeypatch):
    ranks, asked, iterations = fake_sweep(monkeypatch, world=4, local_s=0.003, other_s=0.004)
    point = worker.sweep_point(CPU, 4, 1 << 30)
    algbw = (1 << 30) / 0.004 / 1e9
    assert point == {"bytes": 1 << 30, "seconds": 0.004, "algbw_gbps": round(algbw, 2),
                     "busbw_gbps": round(algbw * 2 * 3 / 4, 2)}
    assert (point["algbw_gbps"], point["busbw_gbps"]) == (268.44, 402.65)
    assert asked == [(1 << 30) // 4] and isinstance(asked[0], int), "float32 elements of the size, a whole number"
    assert iterations == [5] and ranks.barriers == 1


def test_the_rank_s_own_time_counts_when_it_is_the_slowest(monkeypatch):
    fake_sweep(monkeypatch, world=2, local_s=0.004, other_s=0.001)
    point = worker.sweep_point(CPU, 2, 1 << 30)
    assert point["seconds"] == 0.004 and point["busbw_gbps"] == point["algbw_gbps"] == 268.44


@pytest.mark.parametrize(("size", "expected"), [(256 << 20, 20), ((256 << 20) + 4, 5), (1 << 20, 20)])
def test_sizes_up_to_256_mib_are_timed_twenty_times_and_larger_ones_five(monkeypatch, size, expected):
    _, _, iterations = fake_sweep(monkeypatch, world=2, local_s=0.001, other_s=0.0)
    worker.sweep_point(CPU, 2, size)
    assert iterations == [expected]


def test_all_reduce_is_correct_when_every_element_sums_to_the_world_size(monkeypatch):
    monkeypatch.setattr(worker, "dist", OtherRanks(4))
    assert worker.all_reduce_correct(CPU, 4) is True
    monkeypatch.setattr(worker, "dist", OtherRanks(3))
    assert worker.all_reduce_correct(CPU, 4) is False


def test_the_sweep_sizes_are_the_ones_the_floors_and_the_recordings_were_measured_at():
    """The floors file judges busbw at the quick sweep's largest size (1 GiB); the launcher's
    overhead was recorded at the full sweep's (4 GiB)."""
    recorded = json.loads((FIXTURES / "preflight_nvlink.json").read_text())["runs"][0]["rounds"][0][0]["sweep"]
    assert [mib << 20 for mib in worker.QUICK_SIZES_MIB] == [point["bytes"] for point in recorded]
    assert worker.FULL_SIZES_MIB == (*worker.QUICK_SIZES_MIB, 4096)
    overhead = json.loads((FIXTURES / "preflight_launcher_overhead.json").read_text())
    assert worker.FULL_SIZES_MIB[-1] << 20 == overhead["bytes"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_main(monkeypatch, tmp_path, *argv: str, on_init=lambda: None) -> dict:
    """main() as torchrun starts rank 0 of one, in this process (gloo); the rank file it wrote."""
    for name, value in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "RANK": "0", "WORLD_SIZE": "1",
                        "LOCAL_RANK": "0", "GROUP_RANK": "3"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    initialised = []
    real_init = dist.init_process_group

    def init_process_group(backend, **kwargs):
        initialised.append((backend, kwargs))
        real_init(backend, **kwargs)
        on_init()

    monkeypatch.setattr(dist, "init_process_group", init_process_group)
    (tmp_path / "out").mkdir(parents=True)  # as gpucloud-node preflight makes it before the launch, for every rank
    monkeypatch.setattr(sys, "argv", ["preflight_worker.py", "--out", str(tmp_path / "out"), *argv])
    assert worker.main() == 0
    assert not dist.is_initialized(), "the process group is torn down"
    [(backend, kwargs)] = initialised
    written = json.loads((tmp_path / "out" / "rank-0.json").read_text())
    return {**written, "backend": backend, "timeout_s": kwargs["timeout"].total_seconds()}


def test_a_quick_rank_measures_its_cpu_and_sweeps_the_quick_sizes(monkeypatch, tmp_path):
    swept = []
    monkeypatch.setattr(worker, "sweep_point", lambda device, world, size: swept.append((world, size)) or {"bytes": size})
    result = run_main(monkeypatch, tmp_path, "--timeout-s", "42")
    assert (result["backend"], result["timeout_s"]) == ("gloo", 42.0)
    assert {key: result[key] for key in ("rank", "world_size", "local_rank", "group_rank", "gpu", "nccl", "correct")} == {
        "rank": 0, "world_size": 1, "local_rank": 0, "group_rank": 3, "gpu": "cpu", "nccl": None, "correct": True}
    assert result["torch"] == torch.__version__
    assert isinstance(result["matmul_tflops"], float) and result["copy_gbps"] > 0, "a CPU's bf16 rate rounds to 0.0"
    assert swept == [(1, mib << 20) for mib in worker.QUICK_SIZES_MIB]
    assert result["sweep"] == [{"bytes": mib << 20} for mib in worker.QUICK_SIZES_MIB]
    assert 0 <= result["init_seconds"] <= result["seconds"]


def test_a_full_rank_burns_ten_seconds_and_sweeps_to_four_gib(monkeypatch, tmp_path):
    burns = []
    monkeypatch.setattr(worker, "matmul_tflops", lambda device, burn_s: burns.append(("matmul", burn_s)) or 1.0)
    monkeypatch.setattr(worker, "copy_gbps", lambda device, burn_s: burns.append(("copy", burn_s)) or 2.0)
    monkeypatch.setattr(worker, "sweep_point", lambda device, world, size: {"bytes": size})
    result = run_main(monkeypatch, tmp_path, "--level", "full")
    assert burns == [("matmul", 10.0), ("copy", 10.0)]
    assert (result["matmul_tflops"], result["copy_gbps"]) == (1.0, 2.0)
    assert [point["bytes"] for point in result["sweep"]] == [mib << 20 for mib in worker.FULL_SIZES_MIB]
    assert result["timeout_s"] == 90.0, "the default a worker started by hand gets"


def test_a_quick_rank_burns_nothing(monkeypatch, tmp_path):
    burns = []
    monkeypatch.setattr(worker, "matmul_tflops", lambda device, burn_s: burns.append(burn_s) or 1.0)
    monkeypatch.setattr(worker, "copy_gbps", lambda device, burn_s: burns.append(burn_s) or 2.0)
    run_main(monkeypatch, tmp_path, "--checks", "local")
    assert burns == [0.0, 0.0]


def test_a_bisection_round_runs_the_fabric_alone_and_a_local_round_no_all_reduce(monkeypatch, tmp_path):
    monkeypatch.setattr(worker, "sweep_point", lambda device, world, size: {"bytes": size})
    fabric = run_main(monkeypatch, tmp_path / "fabric", "--checks", "fabric")
    assert "matmul_tflops" not in fabric and "copy_gbps" not in fabric
    assert fabric["correct"] is True and len(fabric["sweep"]) == len(worker.QUICK_SIZES_MIB)
    local = run_main(monkeypatch, tmp_path / "local", "--checks", "local")
    assert "sweep" not in local and "correct" not in local and local["copy_gbps"] > 0


class FakeTensor:
    """What the GPU branch asks of a tensor, without a GPU."""

    def __init__(self, shape, dtype) -> None:
        self.shape, self.dtype = shape, dtype

    def fill_(self, value):
        return self

    def copy_(self, source):
        return self


def gpu_torch(monkeypatch):
    """`torch` as the worker uses it on a GPU, recording what it was asked to allocate and wait for."""
    asked = {"randn": [], "empty": [], "synchronize": []}
    fake = SimpleNamespace(
        bfloat16=torch.bfloat16, uint8=torch.uint8,
        randn=lambda *shape, device, dtype: asked["randn"].append((shape, device.type, dtype)) or FakeTensor(shape, dtype),
        mm=lambda a, b: FakeTensor((a.shape[0], b.shape[1]), a.dtype),
        empty=lambda size, dtype, device: asked["empty"].append((size, dtype, device.type)) or FakeTensor((size,), dtype),
        empty_like=lambda tensor: FakeTensor(tensor.shape, tensor.dtype),
        cuda=SimpleNamespace(synchronize=lambda device: asked["synchronize"].append(device.type)))
    monkeypatch.setattr(worker, "torch", fake)
    return asked


GPU = SimpleNamespace(type="cuda")


def test_on_a_gpu_the_matmul_is_the_floors_8192_cubed_fifty_times(monkeypatch):
    """The floors file's matmul is an 8192 x 8192 x 8192 bf16 torch.mm; its copy 1 GiB."""
    asked = gpu_torch(monkeypatch)
    timed = rates(monkeypatch, [2 * 8192**3 / 700.04e12])
    assert worker.matmul_tflops(GPU, 0.0) == 700.0, "to a tenth of a TFLOP/s"
    assert asked["randn"] == [((8192, 8192), "cuda", torch.bfloat16)] * 2
    [(product, iterations)] = timed
    assert (product.shape, iterations) == ((8192, 8192), 50)
    floors = json.loads((Path(worker.__file__).with_name("preflight_floors.json")).read_text())
    assert "8192 x 8192 x 8192 torch.mm" in floors["about"] and "1 GiB device-to-device copy" in floors["about"]


def test_on_a_gpu_the_copy_is_one_gib_twenty_times(monkeypatch):
    asked = gpu_torch(monkeypatch)
    timed = rates(monkeypatch, [2 * (1 << 30) / 4000.04e9])
    assert worker.copy_gbps(GPU, 0.0) == 4000.0, "to a tenth of a GB/s"
    assert asked["empty"] == [(1 << 30, torch.uint8, "cuda")]
    assert timed[0][1] == 20


def test_on_a_gpu_the_timer_waits_for_the_warm_up_and_for_the_timed_calls_to_finish(monkeypatch):
    asked = gpu_torch(monkeypatch)
    clock = Clock()
    monkeypatch.setattr(worker, "time", clock)
    waits = []
    monkeypatch.setattr(worker.torch.cuda, "synchronize", lambda device: waits.append(clock.now) or setattr(clock, "now", clock.now + 1.0))

    def work():
        clock.now += 0.25

    assert worker._elapsed(GPU, work, 4) == (4 * 0.25 + 1.0) / 4, "the last wait counts: the queued calls ran then"
    assert waits == [0.5, 2.5]


def test_a_rank_reports_its_own_seconds_to_the_hundredth(monkeypatch, tmp_path):
    clock = Clock()
    clock.now = 1000.0

    def measured(seconds, figure):
        def measure(device, burn_s):
            clock.now += seconds
            return figure
        return measure

    monkeypatch.setattr(worker, "matmul_tflops", measured(1.23456, 1.0))
    monkeypatch.setattr(worker, "copy_gbps", measured(0.5, 2.0))
    monkeypatch.setattr(worker, "sweep_point", lambda device, world, size: {"bytes": size})
    monkeypatch.setattr(worker, "time", clock)
    result = run_main(monkeypatch, tmp_path, on_init=lambda: setattr(clock, "now", clock.now + 0.123456))
    assert (result["init_seconds"], result["seconds"]) == (0.12, 1.86)


class Nccl:
    """`torch.distributed` as rank 5 of 8 on a GPU node sees it, recording the calls."""

    def __init__(self) -> None:
        self.calls: list = []

    def init_process_group(self, backend, **kwargs):
        self.calls.append(("init", backend, kwargs))

    def get_rank(self) -> int:
        return 5

    def get_world_size(self) -> int:
        return 8

    def barrier(self) -> None:
        self.calls.append(("barrier",))

    def destroy_process_group(self) -> None:
        self.calls.append(("destroy",))


def test_on_a_gpu_each_rank_uses_nccl_on_its_local_gpu_and_names_the_gpu_the_floors_are_matched_by(monkeypatch, tmp_path):
    devices = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_device", devices.append)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: f"NVIDIA H200 ({device})")
    monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 28, 9))
    nccl = Nccl()
    monkeypatch.setattr(worker, "dist", nccl)
    monkeypatch.setattr(worker, "matmul_tflops", lambda device, burn_s: 700.0)
    monkeypatch.setattr(worker, "copy_gbps", lambda device, burn_s: 4000.0)
    monkeypatch.setattr(worker, "all_reduce_correct", lambda device, world: world == 8)
    monkeypatch.setattr(worker, "sweep_point", lambda device, world, size: {"bytes": size, "device": str(device)})
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("GROUP_RANK", "2")
    monkeypatch.setattr(sys, "argv", ["preflight_worker.py", "--out", str(tmp_path), "--timeout-s", "90"])
    assert worker.main() == 0
    assert devices == [torch.device("cuda", 1)]
    [(_, backend, kwargs)] = [call for call in nccl.calls if call[0] == "init"]
    assert (backend, kwargs["device_id"], kwargs["timeout"].total_seconds()) == ("nccl", torch.device("cuda", 1), 90.0)
    assert nccl.calls[-2:] == [("barrier",), ("destroy",)], "every rank's file is written before any rank leaves"
    result = json.loads((tmp_path / "rank-5.json").read_text())
    assert {key: result[key] for key in ("rank", "world_size", "local_rank", "group_rank", "gpu", "nccl", "correct")} == {
        "rank": 5, "world_size": 8, "local_rank": 1, "group_rank": 2, "gpu": "NVIDIA H200 (cuda:1)", "nccl": "2.28.9",
        "correct": True}
    assert result["sweep"][0]["device"] == "cuda:1"
