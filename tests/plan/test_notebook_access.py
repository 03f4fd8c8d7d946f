"""One notebook per person: each group's notebook user policy (`services.jupyter.userPolicy`)
allows every call its person was measured to make (`person:notebookUser` in access_calls.json:
`gpucloud connect --start`, the printed session and token commands) on that group, and nothing
of another group or stack."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gpucloud.documents.notebooks import notebook_user_policy
from gpucloud.plan import access as plan_access
from gpucloud.plan.access import load_calls
from gpucloud.plan.preview import plan_stack
from support import minimal_config, settings_for

ANNA, BEN = "anna", "ben"
NOTEBOOK_USER = "person:notebookUser"


def _group(name: str) -> dict:
    return {"name": name, "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1,
            "services": {"jupyter": {"userPolicy": True}}}


@pytest.fixture(scope="module")
def settings():
    return settings_for(minimal_config(access={"ssm": True}, groups=[_group(ANNA), _group(BEN)]), stack="notebooks")


@pytest.fixture(scope="module")
def plan(settings):
    return plan_stack(settings)


def test_each_person_s_calls_are_allowed_by_their_group_s_policy_alone(plan):
    assert [call for call in plan.access["denied"] if call["actor"] == NOTEBOOK_USER] == []
    assert plan.access["beyondStack"] == []
    assert not [finding for finding in plan.findings if finding.rule.startswith("access-") and finding.severity == "failure"]


def test_each_group_gets_its_own_policy(plan):
    policies = {r.state["name"]: json.loads(r.state["policy"]) for r in plan.resources
                if r.custom and r.type == "aws:iam/policy:Policy" and r.state["name"].endswith("-notebook")}
    assert set(policies) == {f"gpu-cloud-demo_notebooks-{ANNA}-notebook", f"gpu-cloud-demo_notebooks-{BEN}-notebook"}
    anna = json.dumps(policies[f"gpu-cloud-demo_notebooks-{ANNA}-notebook"])
    assert f"/{ANNA}/jupyter-token" in anna and f"/{BEN}/" not in anna and f"-{BEN}" not in anna


def test_a_policy_without_the_group_tag_reaches_another_person_s_notebook(settings, plan):
    """Anna's policy widened to the stack's every node: a session to Ben's node is allowed, and the plan fails."""
    def widened(resource):
        if resource.type != "aws:iam/policy:Policy" or not resource.state["name"].endswith(f"-{ANNA}-notebook"):
            return resource
        document = json.loads(resource.state["policy"])
        for statement in document["Statement"]:
            statement.get("Condition", {}).get("StringEquals", {}).pop("ssm:resourceTag/GpuGroup", None)
        return dataclasses.replace(resource, outputs={**resource.outputs, "policy": json.dumps(document)})

    access, findings = plan_access.check_access(settings, [widened(r) for r in plan.resources], load_calls())

    reached = {(call["group"], call["action"], call["principal"].rsplit("/", 1)[1]) for call in access["beyondStack"]}
    assert reached == {(BEN, "ssm:StartSession", f"gpu-cloud-demo_notebooks-{ANNA}-notebook"),
                       ("other-group", "ssm:StartSession", f"gpu-cloud-demo_notebooks-{ANNA}-notebook")}
    assert any(finding.rule == "access-beyond-stack" and finding.severity == "failure" for finding in findings)


def test_the_policy_names_only_its_group():
    document = notebook_user_policy(
        partition="aws", region="us-east-1", account_id="123456789012", name_base="lab", group="anna",
        autoscaling_group_name="gpu-cloud-lab-anna",
        token_parameter_arn="arn:aws:ssm:us-east-1:123456789012:parameter/gpu-cloud/lab/anna/jupyter-token",
        key_arn="arn:aws:kms:us-east-1:123456789012:key/k")
    by_sid = {statement["Sid"]: statement for statement in document["Statement"]}
    assert by_sid["PortForwardToGroupNodes"]["Condition"]["StringEquals"] == {
        "ssm:resourceTag/gpu-cloud:stack": "lab", "ssm:resourceTag/GpuGroup": "anna"}
    assert by_sid["RaiseGroupFromZero"]["Resource"].endswith(":autoScalingGroupName/gpu-cloud-lab-anna")
    assert by_sid["OwnSessionsOfARole"]["Condition"] == {
        "StringLike": {"ssm:resourceTag/aws:ssmmessages:session-id": "${aws:userid}"}}
    assert by_sid["OwnSessionsOfAnIamUser"]["Resource"] == "arn:aws:ssm:us-east-1:123456789012:session/${aws:username}-*"
    decrypt = by_sid["DecryptGroupTokenThroughParameterStore"]["Condition"]["StringEquals"]
    assert decrypt["kms:EncryptionContext:PARAMETER_ARN"].endswith("/gpu-cloud/lab/anna/jupyter-token")


SESSION_ACTIONS = ("ssm:ResumeSession", "ssm:TerminateSession")


def test_each_person_resumes_and_ends_their_own_sessions_by_their_user_id(settings, plan):
    """Session Manager tags a session with its starter's aws:userid; each group's policy lets its
    holder resume and end the sessions tagged with their own, through `${aws:userid}`."""
    account = plan_access.plan_account(plan.resources)
    calls, _ = plan_access._stack_calls(settings, plan.resources, account, load_calls())
    sessions = {(call["group"], call["action"], call["context"]["aws:userid"],
                 call["context"]["ssm:resourceTag/aws:ssmmessages:session-id"])
                for call in calls if call["action"] in SESSION_ACTIONS}

    assert sessions == {(person, action, plan_access.notebook_user_id(person), plan_access.notebook_user_id(person))
                        for person in (ANNA, BEN) for action in SESSION_ACTIONS}
    assert not [call for call in plan.access["denied"] if call["action"] in SESSION_ACTIONS]
    assert plan.access["beyondStack"] == [], "no one resumes or ends another person's session"


def test_a_policy_that_drops_the_user_id_condition_reaches_another_person_s_sessions(settings, plan):
    """Anna's policy without its `${aws:userid}` condition: Ben's sessions (and any other) are hers
    to end, and the plan fails."""
    def widened(resource):
        if resource.type != "aws:iam/policy:Policy" or not resource.state["name"].endswith(f"-{ANNA}-notebook"):
            return resource
        document = json.loads(resource.state["policy"])
        for statement in document["Statement"]:
            if statement["Sid"] == "OwnSessionsOfARole":
                del statement["Condition"]
        return dataclasses.replace(resource, outputs={**resource.outputs, "policy": json.dumps(document)})

    access, findings = plan_access.check_access(settings, [widened(r) for r in plan.resources], load_calls())

    reached = {(call["group"], call["action"]) for call in access["beyondStack"]}
    assert reached == {(other, action) for other in (BEN, "other-group") for action in SESSION_ACTIONS}
    assert any(finding.rule == "access-beyond-stack" and "ssm:TerminateSession" in finding.message for finding in findings)
