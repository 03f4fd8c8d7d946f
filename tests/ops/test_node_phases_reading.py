"""How `gpucloud connect --start` and `gpucloud logs` read a node's boot phases from the job log
group (ops/node_phases.py), against CloudWatch Logs answers stubbed by botocore (its model checks
each request): which line is the node's latest, what a missing stream, a refusal or a page token
means, and how times and phases are written. The engine runs of the same reads are in
tests/ops/test_where_nodes_boot.py."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from gpucloud.ops import node_phases
from gpucloud.ops.node_phases import duration, latest_line, latest_lines, phase_reader, where_it_is

LOG_GROUP = "/gpu-cloud/demo/jobs"
GROUP = "gpu-cloud-demo-workers"
PREFIX = f"boot-phases/{GROUP}/"
NODE, OTHER = "i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"

GATE = {"event": "started", "phase": "gate", "at": 300.0, "running": {"gate": 300.0},
        "done": {"boot": {"start": 0.0, "end": 178.0}, "agent": {"start": 178.0, "end": 219.0},
                 "mount": {"start": 219.0, "end": 300.0}}}
AGENT = {"event": "started", "phase": "agent", "at": 178.0, "running": {"agent": 178.0},
         "done": {"boot": {"start": 0.0, "end": 178.0}}}


def logs_client():
    return boto3.client("logs", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")


def event(line: dict | str, stream: str | None = PREFIX + NODE) -> dict:
    """A log event as FilterLogEvents gives it (GetLogEvents names no stream: `stream=None`)."""
    message = {"timestamp": 1, "message": line if isinstance(line, str) else json.dumps(line)}
    return message if stream is None else {"logStreamName": stream, **message}


@pytest.mark.parametrize(("seconds", "written"), [
    (0, "0s"), (-4, "0s"), (59.4, "59s"), (59.6, "1m00s"), (60, "1m00s"), (178, "2m58s"), (3599, "59m59s"),
    (3600, "1h00m"), (3600 + 5 * 60 + 59, "1h05m"), (2 * 3600 - 2, "1h59m"), (26 * 3600, "26h00m")])
def test_a_duration_is_written_in_seconds_then_minutes_then_hours(seconds, written):
    assert duration(seconds) == written


def test_running_phases_come_first_in_boot_order_then_those_done_and_a_container_is_named():
    line = {"running": {"weights:model": 900.0, "pull:server": 700.0},
            "done": {"custom": {"start": 0.0, "end": 5.0}, "gate": {"start": 300.0, "end": 355.0},
                     "boot": {"start": 0.0, "end": 178.0}}}

    assert where_it_is(line, 1000.0) == ("pull server (5m00s so far), weights model (1m40s so far), "
                                         "after boot 2m58s, gate 55s, custom 5s")


def test_with_nothing_running_the_phase_that_ended_last_is_named_whatever_its_order():
    line = {"done": {"preload": {"start": 355.0, "end": 900.0}, "gate": {"start": 300.0, "end": 355.0},
                     "pull:server": {"start": 355.0, "end": 600.0}}}

    assert where_it_is(line, 960.0) == "preload ended 1m00s ago, after gate 55s, preload 9m05s, pull server 4m05s"
    assert where_it_is({"done": {}, "running": {}}, 960.0) == "no boot phase recorded yet"
    assert where_it_is({}, 960.0) == "no boot phase recorded yet"


def test_a_node_s_latest_line_is_read_from_the_tail_of_its_own_stream_skipping_what_is_not_a_line():
    logs = logs_client()
    with Stubber(logs) as stubber:
        stubber.add_response("get_log_events", {"events": [event("not json {", None), event(GATE, None), event(AGENT, None)]},
                             {"logGroupName": LOG_GROUP, "logStreamName": PREFIX + NODE, "startFromHead": False,
                              "limit": node_phases.READ_LINES})

        assert latest_line(logs, LOG_GROUP, GROUP, NODE) == GATE


def test_a_node_without_a_stream_has_no_line_and_another_refusal_is_raised():
    logs = logs_client()
    with Stubber(logs) as stubber:
        stubber.add_client_error("get_log_events", "ResourceNotFoundException")
        stubber.add_client_error("get_log_events", "AccessDeniedException")

        assert latest_line(logs, LOG_GROUP, GROUP, NODE) is None
        with pytest.raises(ClientError, match="AccessDenied"):
            latest_line(logs, LOG_GROUP, GROUP, NODE)


def test_every_node_s_latest_line_is_read_over_all_pages_of_the_group_s_streams():
    logs = logs_client()
    request = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": PREFIX}
    with Stubber(logs) as stubber:
        stubber.add_response("filter_log_events", {"events": [event(AGENT), event(AGENT, PREFIX + OTHER)],
                                                   "nextToken": "page-2"}, request)
        stubber.add_response("filter_log_events", {"events": [event(GATE), event("garbage", PREFIX + "i-0ccc"),
                                                              event(GATE, f"boot-phases/{GROUP}-big/{NODE}")],
                                                   "nextToken": "page-3"}, {**request, "nextToken": "page-2"})
        stubber.add_response("filter_log_events", {"events": [], "nextToken": "page-3"}, {**request, "nextToken": "page-3"})

        assert latest_lines(logs, LOG_GROUP, GROUP) == {NODE: GATE, OTHER: AGENT}, \
            "the last page repeats its token: the scan ends there; a stream of no line, or of another group, is left out"


def test_a_job_log_group_not_created_yet_has_no_lines_and_another_refusal_is_raised():
    logs = logs_client()
    with Stubber(logs) as stubber:
        stubber.add_client_error("filter_log_events", "ResourceNotFoundException")
        stubber.add_client_error("filter_log_events", "AccessDeniedException")

        assert latest_lines(logs, LOG_GROUP, GROUP) == {}
        with pytest.raises(ClientError, match="AccessDenied"):
            latest_lines(logs, LOG_GROUP, GROUP)


def test_the_whole_group_is_scanned_once_for_all_its_nodes_and_a_refusal_reads_as_no_line():
    logs = logs_client()
    with Stubber(logs) as stubber:
        stubber.add_response("filter_log_events", {"events": [event(GATE)]})
        read = phase_reader(logs, LOG_GROUP, GROUP, clock=lambda: 360.0, whole_group=True)

        assert read(NODE) == "gate (1m00s so far), after boot 2m58s, agent 41s, mount 1m21s"
        assert read(OTHER) is None
        stubber.assert_no_pending_responses()

    with Stubber(logs) as stubber:
        stubber.add_client_error("get_log_events", "AccessDeniedException")
        assert phase_reader(logs, LOG_GROUP, GROUP)(NODE) is None, "a notebook user may not read another group's stream"
