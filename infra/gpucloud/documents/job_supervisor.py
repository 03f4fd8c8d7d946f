"""The job supervisor: a Step Functions Standard workflow (Amazon States Language, JSONPath) that
runs a job to its end in AWS, so that closing the laptop that started it changes nothing.

Why Step Functions and not SSM Automation: a job lives up to days and polls its nodes all that
time. A Standard workflow runs up to one year and is billed per state transition (Step Functions
developer guide, "Choosing workflow type in Step Functions"; read 2026-11-28); an Automation
runbook's `aws:executeAwsApi` and `aws:waitForAwsResourceProperty` steps could call the same APIs,
but an Automation execution stops at its `timeoutSeconds` per step and 7 days of history, and loops
need `aws:loop` with at most 100 iterations (SSM user guide, "aws:loop"; read 2026-11-28), too few
for a watch of a two-day job. Step Functions also calls Auto Scaling, EC2, SSM, S3 and SNS with
the AWS SDK integrations (`arn:aws:states:::aws-sdk:<service>:<action>`, "Integrating services
with Step Functions", read 2026-11-28) and keeps each execution's history and status for `jobs`,
and EventBridge starts it on Auto Scaling's events. moto executes the same definition against its
own backends (`stepfunctions: execute_state_machine`), so the tests run it.

What it does, in order: raise the group to N nodes (within MaxSize), wait for N InService, take
the first N as Auto Scaling lists them (their addresses in DescribeInstances' order are the
rendezvous: the first is MASTER_ADDR), with `preflight` not `off` run the stack's job document's
`preflight` action on them first (and, should a node fail it, find and replace the culprit:
documents/job_supervisor_preflight.py), send the job document (one command per 50 nodes), record the
attempt beside the checkpoints, and poll every node's invocation. A node that leaves service, or
whose launcher exits EXIT_DRAINED, ends the attempt: the others are cancelled and stopped, and the
job is sent again with the next attempt number, up to `maxRestarts` resumes. Every end (succeeded,
failed with the reason, out of retries, no checkpoint, no nodes in time, the supervisor's own
error) is published to the stack's topic before the execution ends; an end before the job started
first lowers the group back to what it was (documents/job_supervisor_capacity.py).

Only JSONPath's own features are used: ASL has no sort, join or filter that answers an empty list,
so in-service ids come from a Map that returns `{}` for others (read with `$[*].id`), addresses are
joined by a short loop, and a poll's verdict is `States.ArrayContains` over each node's tag.
"""

from __future__ import annotations

import json
from typing import Any

from gpucloud.documents.job_supervisor_capacity import give_back_states, started_state
from gpucloud.documents.job_supervisor_continuation import (
    continue_states,
    entry_states,
    marker_states,
    node_left_states,
    polls_per_execution,
)
from gpucloud.documents.job_supervisor_preflight import preflight_states, search_rounds
from gpucloud.documents.job_supervisor_sends import batches, refused_states, send_states
from gpucloud.documents.job_supervisor_states import (
    Document,
    end_states,
    record_states,
    resume_states,
    start_states,
    wait_states,
    watch_states,
)


def supervisor_definition(*, document_name: str, log_group_name: str, topic_arn: str, bucket: str | None,
                          jobs_prefix: str | None, preflight: bool = True) -> Document:
    """The state machine of the stack's jobs: a pure function of the stack's names (see the module doc).
    The execution input is `supervisor_input`'s; `preflight` adds the Preflight step, which an
    input's `preflight: off` skips."""
    marks = bool(bucket and jobs_prefix)
    after_launch = "RecordBody" if marks else "WatchReadGroup"
    states: dict[str, Document] = {
        **entry_states(document_name, marks),
        **start_states(),
        **wait_states(),
        "Batches": batches("PreflightWanted" if preflight else "LaunchParameters"),
        **send_states("Launch", document_name, log_group_name, "launch", "LaunchSent"),
        **started_state(after_launch),
        **watch_states("Watch", on_ok="JobSucceeded", on_failed="JobFailed", after_wait="CountPoll"),
        **continue_states(),
        **resume_states(),
        **refused_states(),
        **end_states(topic_arn),
        **give_back_states("Forget" if marks else "Publish"),
    }
    if marks:
        states |= {**record_states(bucket, jobs_prefix, "MarkBody"), **marker_states(bucket, jobs_prefix),
                   **node_left_states(bucket, jobs_prefix)}
    if preflight:
        states |= preflight_states(document_name, log_group_name, bucket, jobs_prefix)
    return {"Comment": "gpu-cloud job supervisor: run a job on N nodes, resume it from its checkpoint on node loss",
            "StartAt": "Start", "States": states}


def supervisor_definition_content(**values: Any) -> str:
    return json.dumps(supervisor_definition(**values), indent=1)


def supervisor_input(*, job_id: str, group_name: str, nodes: int, launch: dict[str, str], max_restarts: int,
                     node_timeout: int, poll_seconds: int, preflight: str = "off", polls: int | None = None,
                     desired_found: int | None = None) -> Document:
    """An execution's input: the job, and `launch`, the job document's values that stay the same
    across attempts (port, gpusPerNode, image, checkpointUri, commandB64); `polls`, the polls
    before the next generation (default: what the history quota allows for the job's nodes);
    `desired_found`, the group's desired capacity when `run` checked it, which `stop` of a job that
    never started gives back (ops/supervised_jobs.py give_back; the supervisor reads its own)."""
    found = {} if desired_found is None else {"desiredFound": desired_found}
    return {"job": {"jobId": job_id, "groupName": group_name, "nodes": nodes, "launch": launch, **found},
            "attempt": 0, "maxRestarts": max_restarts, "nodeTimeout": node_timeout, "pollSeconds": poll_seconds,
            "preflight": preflight, "preflightTry": 0, "preflightRounds": search_rounds(nodes),
            "generation": 0, "polls": 0,
            "pollsPerExecution": polls_per_execution(nodes) if polls is None else polls}
