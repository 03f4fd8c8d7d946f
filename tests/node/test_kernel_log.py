"""Xid events from the kernel log: classified by NVIDIA's catalog, each reported once across log
rotation, truncation and agent restarts."""

from __future__ import annotations

import os

import pytest

from gpucloud.node.kernel_log import KernelLogFollower, xid_events, xid_table

BOOT = "Nov 24 09:58:01 ip-10-64-1-20 kernel: [    5.120001] nvidia: loading out-of-tree module taints kernel.\n"
XID_79 = ("Nov 24 10:02:11 ip-10-64-1-20 kernel: [  250.311523] NVRM: Xid (PCI:0000:53:00): 79, pid=2231, "
          "name=python3, GPU has fallen off the bus.\n")
XID_48 = "Nov 24 10:03:00 ip-10-64-1-20 kernel: [  299.0] NVRM: Xid (PCI:0000:64:00): 48, pid=2231, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n"
XID_63 = "Nov 24 10:04:10 ip-10-64-1-20 kernel: [  369.1] NVRM: Xid (PCI:0000:75:00): 63, pid=2231, Row Remapper: New row marked for remapping, reset gpu to activate.\n"
XID_13 = "Nov 24 10:05:20 ip-10-64-1-20 kernel: [  439.2] NVRM: Xid (PCI:0000:86:00): 13, pid=4410, name=train.py, Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address\n"


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "kern.log"
    path.write_text(BOOT)
    return path


def follower(log):
    return KernelLogFollower(log, log.parent / "state" / "kernel-log.json")


def append(path, *lines):
    with path.open("a") as handle:
        handle.write("".join(lines))


def test_the_log_before_the_agent_watched_is_not_news(log):
    assert follower(log).poll() == []
    assert follower(log).poll() == []


def test_each_xid_is_classified_by_nvidias_catalog(log):
    watcher = follower(log)
    watcher.poll()
    append(log, XID_79, XID_48, XID_63, XID_13)

    events = xid_events(watcher.poll(), xid_table())

    assert [(event.xid, event.pci_bus_id, event.kind, event.nvidia_action) for event in events] == [
        (79, "0000:53:00", "node-fault", "RESTART_BM"),
        (48, "0000:64:00", "node-fault", "WORKFLOW_XID_48"),
        (63, "0000:75:00", "transient", "IGNORE"),
        (13, "0000:86:00", "application", "RESTART_APP"),
    ]
    assert events[0].message.endswith("GPU has fallen off the bus.")


def test_an_xid_the_catalog_lacks_is_counted_not_acted_on():
    [event] = xid_events(["kernel: NVRM: Xid (PCI:0000:10:1c): 9999, something new"], xid_table())
    assert (event.kind, event.nvidia_action) == ("transient", "not in the catalog")


def test_a_restarted_agent_reports_nothing_twice(log):
    first = follower(log)
    first.poll()
    append(log, XID_79)
    assert len(first.poll()) == 1

    assert follower(log).poll() == []
    append(log, XID_13)
    assert [event.xid for event in xid_events(follower(log).poll(), xid_table())] == [13]


def test_lines_written_just_before_rotation_are_read_from_the_rotated_file(log):
    watcher = follower(log)
    watcher.poll()
    append(log, XID_79)
    os.replace(log, log.with_name("kern.log.1"))
    log.write_text(XID_48)

    assert [event.xid for event in xid_events(watcher.poll(), xid_table())] == [79, 48]
    assert watcher.poll() == []


def test_a_log_truncated_in_place_is_read_from_its_start(log):
    watcher = follower(log)
    append(log, XID_79)
    watcher.poll()
    log.write_text(XID_13)
    assert [event.xid for event in xid_events(watcher.poll(), xid_table())] == [13]


def test_a_line_still_being_written_waits_for_its_end(log):
    watcher = follower(log)
    watcher.poll()
    append(log, XID_79[:40])
    assert watcher.poll() == []
    append(log, XID_79[40:])
    assert [event.xid for event in xid_events(watcher.poll(), xid_table())] == [79]


def test_the_catalog_kinds_follow_nvidias_immediate_action():
    for xid, row in xid_table().items():
        assert row["kind"] in ("node-fault", "application", "transient"), xid
        if row["nvidiaAction"] in ("RESET_GPU", "RESTART_BM"):
            assert row["kind"] == "node-fault", xid
        if row["nvidiaAction"] == "RESTART_APP":
            assert row["kind"] == "application", xid
    assert {13, 31, 43, 94} <= {xid for xid, row in xid_table().items() if row["kind"] == "application"}
    assert {48, 64, 74, 79, 95, 119, 120} <= {xid for xid, row in xid_table().items() if row["kind"] == "node-fault"}
