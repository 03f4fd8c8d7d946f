"""One watch interval's findings: node faults call for a replacement; throttling is reported once
sustained; pending remaps and ignorable Xids are counted; the job's own Xids are never the node's."""

from __future__ import annotations

from gpucloud.node.exporter import WATCH_FIELDS
from gpucloud.node.faults import ThrottleMemory, evaluate_watch, node_faults, summary
from gpucloud.node.kernel_log import xid_events, xid_table
from gpucloud.node.nvidia import parse_gpu_query
from node_fakes import fixture_text

RECORDED = fixture_text("h100-watch/query-watch.csv")


def gpus_from(text: str):
    gpus, stray = parse_gpu_query(text, WATCH_FIELDS)
    return gpus, stray


def findings(text: str = RECORDED, lines=(), expected=1, minutes=10, memory=None, now=0.0):
    gpus, stray = gpus_from(text)
    return evaluate_watch(gpus, stray, xid_events(list(lines), xid_table()), expected, minutes,
                          memory or ThrottleMemory(), now)


def test_the_recorded_healthy_h100_has_nothing_to_report():
    assert findings() == []


def test_a_gpu_missing_from_the_count_is_a_node_fault():
    [fault] = node_faults(findings(expected=8))
    assert fault.reason == "1 of 8 GPUs answer"


def test_a_failed_row_remap_is_a_node_fault_and_a_pending_one_is_only_counted():
    failed = RECORDED.replace("No, No,", "No, Yes,")
    pending = RECORDED.replace("No, No,", "Yes, No,")
    assert [f.kind for f in findings(failed)] == ["node-fault"]
    assert [f.kind for f in findings(pending)] == ["transient"]


def test_xid_79_and_48_replace_the_node_63_is_counted_and_13_is_the_jobs():
    lines = [
        "kernel: NVRM: Xid (PCI:0000:00:06): 79, GPU has fallen off the bus.",
        "kernel: NVRM: Xid (PCI:0000:00:06): 48, An uncorrectable double bit error (DBE) has been detected",
        "kernel: NVRM: Xid (PCI:0000:00:06): 63, Row Remapper: New row marked for remapping",
        "kernel: NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception",
    ]
    found = findings(lines=lines)
    assert summary(found) == {"node-fault": 2, "transient": 1, "application": 1}
    assert [f.reason.split(" (")[0] for f in node_faults(found)] == ["Xid 79", "Xid 48"]


def test_xid_13_alone_replaces_nothing():
    assert node_faults(findings(lines=["kernel: NVRM: Xid (PCI:0000:00:06): 13, Graphics Exception"])) == []


def test_an_unreadable_gpu_is_a_node_fault():
    unreadable, missing = node_faults(findings(text="Unable to determine the device handle for GPU0000:00:06.0: Unknown Error\n"))
    assert "Unknown Error" in unreadable.reason and missing.reason == "0 of 1 GPUs answer"


def test_throttling_is_reported_once_sustained_and_forgotten_when_it_stops():
    hot = RECORDED.replace("Not Active, Not Active, Not Active", "Active, Not Active, Not Active")
    memory = ThrottleMemory()
    assert findings(hot, minutes=10, memory=memory, now=0) == []
    assert findings(hot, minutes=10, memory=memory, now=9 * 60) == []
    [report] = findings(hot, minutes=10, memory=memory, now=10 * 60)
    assert (report.kind, report.reason) == ("throttling", "hw_thermal_slowdown for 10 minutes")
    assert node_faults([report]) == []
    assert findings(minutes=10, memory=memory, now=11 * 60) == [] and memory.since == {}
