"""The watch's Prometheus readings: dcgm-exporter's names and labels, from nvidia-smi output
recorded on an H100, and Xid events as a counter that loses none between scrapes."""

from __future__ import annotations

import re

from gpucloud.node.exporter import WATCH_FIELDS, bus_key, render_textfile, write_textfile
from gpucloud.node.kernel_log import xid_events, xid_table
from gpucloud.node.nvidia import parse_gpu_query
from node_fakes import fixture_text

NODE = {"project": "vision-train", "group": "trainers", "instance_id": "i-0123456789abcdef0", "instance_type": "p5.48xlarge"}
SAMPLE = re.compile(r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<labels>\{.*\})? (?P<value>-?[0-9.e+]+)$')


def recorded_gpus():
    gpus, stray = parse_gpu_query(fixture_text("h100-watch/query-watch.csv"), WATCH_FIELDS)
    assert stray == []
    return gpus


def samples(text: str) -> dict[str, list[tuple[str, float]]]:
    found: dict[str, list[tuple[str, float]]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [A-Za-z_:][A-Za-z0-9_:]* .+$", line), line
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        found.setdefault(match["name"], []).append((match["labels"] or "", float(match["value"])))
    return found


def test_the_recorded_h100_reads_under_dcgm_exporters_names_and_labels():
    text = render_textfile(recorded_gpus(), {}, {}, NODE)
    found = samples(text)

    assert found["DCGM_FI_DEV_GPU_TEMP"][0][1] == 41
    assert found["DCGM_FI_DEV_GPU_UTIL"][0][1] == 0
    assert found["DCGM_FI_DEV_FB_FREE"][0][1] == 81079
    assert found["DCGM_FI_DEV_POWER_USAGE"][0][1] == 93.5
    assert found["DCGM_FI_DEV_ROW_REMAP_FAILURE"][0][1] == 0
    assert found["DCGM_FI_DEV_XID_ERRORS"][0][1] == 0
    labels = found["DCGM_FI_DEV_GPU_TEMP"][0][0]
    for expected in ('gpu="0"', 'UUID="GPU-faf61053-8af5-d0a8-85af-f8bcdb2c5fc7"', 'pci_bus_id="00000000:00:06.0"',
                     'modelName="NVIDIA H100 80GB HBM3"', 'instance_type="p5.48xlarge"', 'group="trainers"'):
        assert expected in labels
    assert "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter" in text
    assert "retired" not in text, "[N/A] readings give no sample rather than a wrong one"


def test_xid_events_are_counted_per_gpu_xid_and_kind_and_the_last_one_is_a_gauge():
    events = xid_events([
        "kernel: NVRM: Xid (PCI:0000:00:06): 13, pid=1, Graphics Exception",
        "kernel: NVRM: Xid (PCI:0000:00:06): 13, pid=2, Graphics Exception",
        "kernel: NVRM: Xid (PCI:0000:00:06): 79, GPU has fallen off the bus.",
    ], xid_table())
    counts: dict = {}
    for event in events:
        key = (bus_key(event.pci_bus_id), event.xid, event.kind)
        counts[key] = counts.get(key, 0) + 1

    found = samples(render_textfile(recorded_gpus(), counts, {"00:06": 79}, NODE))

    by_xid = {re.search(r'xid="(\d+)"', labels)[1]: (labels, value) for labels, value in found["gpucloud_xid_events_total"]}
    assert by_xid["13"][1] == 2 and 'kind="application"' in by_xid["13"][0]
    assert by_xid["79"][1] == 1 and 'kind="node-fault"' in by_xid["79"][0] and 'gpu="0"' in by_xid["79"][0]
    assert found["DCGM_FI_DEV_XID_ERRORS"][0][1] == 79


def test_nvidia_smi_and_the_kernel_name_a_gpu_alike():
    assert bus_key("00000000:53:00.0") == bus_key("0000:53:00") == "53:00"


def test_the_textfile_is_replaced_whole(tmp_path):
    path = tmp_path / "textfile" / "gpucloud.prom"
    write_textfile(path, "a 1\n")
    write_textfile(path, "b 2\n")
    assert path.read_text() == "b 2\n"
    assert [entry.name for entry in path.parent.iterdir()] == ["gpucloud.prom"]


def test_slowdown_reasons_gpu_counts_and_fault_outcomes_are_readings_too():
    throttled = fixture_text("h100-watch/query-watch.csv").replace(
        "Not Active, Not Active, Not Active", "Active, Not Active, Not Active")
    gpus, _stray = parse_gpu_query(throttled, WATCH_FIELDS)

    found = samples(render_textfile(gpus, {}, {}, NODE, expected_gpus=8, fault_outcomes={"held": 1}))

    assert sorted((re.search(r'reason="([a-z_]+)"', labels)[1], value) for labels, value in found["gpucloud_gpu_slowdown"]) == [
        ("hw_power_brake", 0), ("hw_thermal", 1), ("sw_thermal", 0)]
    assert [value for _labels, value in found["gpucloud_gpus_expected"]] == [8]
    assert [value for _labels, value in found["gpucloud_gpus_visible"]] == [1], "one of the eight answers: the alert's case"
    assert sorted((re.search(r'outcome="([a-z]+)"', labels)[1], value) for labels, value in found["gpucloud_node_fault_actions_total"]) == [
        ("held", 1), ("replaced", 0), ("reported", 0)]
