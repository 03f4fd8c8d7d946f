"""A job that never started gives its group back the desired capacity it found.

The supervisor raises the group to N nodes before anything else (`RememberCapacity` keeps what it
found at `$.raisedFrom`), and `$.started` is set once every launch command of the first attempt
was sent. Every end goes through `Notify`: an end before that point (no nodes in time, a batch
Run Command refused, a failed preflight, an AWS error of the supervisor's) first lowers the group
back, and only when its desired capacity is still the N the supervisor set: someone who changed it
meanwhile keeps their value. A job that started keeps its nodes (its end is the user's to size), as
does a continuation, whose input has no `raisedFrom`.

A failure to read or lower the group is no reason to lose the job's end: the end's message says the
group stays raised, and the end goes on to the topic. Every state here catches its own errors
(SupervisorError itself ends through `Notify`): a Catch's `ResultPath` adds the error output to the
state's input instead of replacing it (Step Functions developer guide, "Error handling in Step
Functions", "Catch" and "ResultPath"; read 2026-11-28).
"""

from __future__ import annotations

from gpucloud.documents.job_supervisor_states import SDK, Document, describe_group


def started_state(next_state: str) -> dict[str, Document]:
    """`LaunchSent`: the first attempt's launch commands are all out; from here the job started."""
    return {"LaunchSent": {"Type": "Pass", "Result": True, "ResultPath": "$.started", "Next": next_state}}


def give_back_states(next_state: str) -> dict[str, Document]:
    """`Notify`: before the end goes on to `next_state`, a job that never started lowers what it raised."""
    catch = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.giveBackError", "Next": "GiveBackFailed"}]
    read = describe_group("GiveBackRead", "GiveBackStillRaised")
    read["GiveBackRead"]["Catch"] = catch
    return {
        "Notify": {"Type": "Choice", "Default": next_state, "Choices": [
            {"And": [{"Variable": "$.raisedFrom", "IsPresent": True}, {"Variable": "$.started", "IsPresent": False}],
             "Next": "GiveBackRead"}]},
        **read,
        "GiveBackStillRaised": {"Type": "Choice", "Default": next_state, "Choices": [
            {"Variable": "$.group.desired", "NumericEqualsPath": "$.job.nodes", "Next": "GiveBackLower"}]},
        "GiveBackLower": {
            "Type": "Task", "Resource": f"{SDK}autoscaling:setDesiredCapacity", "ResultPath": None, "Next": next_state,
            "Parameters": {"AutoScalingGroupName.$": "$.job.groupName", "DesiredCapacity.$": "$.raisedFrom.value",
                           "HonorCooldown": False},
            "Catch": catch},
        "GiveBackFailed": {"Type": "Pass", "ResultPath": "$.end", "Next": next_state, "Parameters": {
            "state.$": "$.end.state",
            "message.$": "States.Format('{} (the job never started, and lowering group {} back to {} nodes failed: {})', "
                         "$.end.message, $.job.groupName, $.raisedFrom.value, $.giveBackError.Cause)"}},
    }
