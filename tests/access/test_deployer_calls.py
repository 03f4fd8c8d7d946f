"""What `pulumi up` of each example stack calls that another policy than the deployer's own decides
(the project key's, through a service) or that passes a role, measured while the engine applies the
stack: the engine's handlers make the calls the provider makes."""

from __future__ import annotations

import pytest

from gpucloud.config import load_stack_file
from paths import EXAMPLE_STACKS, STACKS
from support import deploy

SETTINGS = [load_stack_file(STACKS / f"Pulumi.{stack}.yaml") for stack in EXAMPLE_STACKS]


@pytest.mark.access_calls("deployer", "pulumiUp")
@pytest.mark.parametrize("settings", SETTINGS, ids=EXAMPLE_STACKS)
def test_pulumi_up_encrypts_through_services_and_passes_roles(settings, account):
    deployment = deploy(settings, account)

    assert deployment.outputs["kmsKeyArn"]


VISION_TRAIN = next(found for found in SETTINGS if found.stack == "vision-train")


@pytest.fixture(scope="module")
def vision_train():
    """vision-train's plan, and every call its access check fills in."""
    from gpucloud.plan import access as plan_access
    from gpucloud.plan.preview import plan_stack

    plan = plan_stack(VISION_TRAIN)
    account = plan_access.plan_account(plan.resources)
    calls, _unfilled = plan_access._stack_calls(VISION_TRAIN, plan.resources, account, plan_access.load_calls())
    return plan, account, calls


def test_the_plan_checks_the_job_supervisor_s_calls_and_the_roles_the_deployer_passes_it(vision_train):
    """The state machine's role goes to Step Functions and the node-left target's to EventBridge;
    the supervisor's own calls (tests/ops/test_job_supervisor.py) are its role's: the plan fills and
    checks them all, and denies none (issue 37)."""
    from gpucloud.plan import access as plan_access

    settings = VISION_TRAIN
    plan, account, calls = vision_train

    assert plan_access.stack_features(settings)["jobSupervisor"][0] == "deployer"
    assert sorted((call["action"], call["resource"], call["context"]["iam:PassedToService"])
                  for call in calls if call["action"] == "iam:PassRole" and call["feature"] == "jobSupervisor") == [
        ("iam:PassRole", f"arn:aws:iam::{account}:role/gpu-cloud-vision-train-jobs-events", "events.amazonaws.com"),
        ("iam:PassRole", f"arn:aws:iam::{account}:role/gpu-cloud-vision-train-jobs-role", "states.amazonaws.com")]
    role = f"arn:aws:iam::{account}:role/gpu-cloud-vision-train-jobs-role"
    supervisor = {call["action"] for call in calls
                  if call["actor"] == "service:states.amazonaws.com" and call["principal"] == role}
    assert {"autoscaling:SetDesiredCapacity", "ssm:SendCommand", "ssm:CancelCommand", "s3:PutObject", "s3:ListBucket",
            "s3:GetObject", "s3:DeleteObject", "sns:Publish", "states:StartExecution", "states:DescribeExecution"} <= supervisor
    assert plan.access["denied"] == [] and plan.access["unmeasured"] == []


def test_the_supervisor_s_publish_to_the_encrypted_topic_asks_the_project_key_through_sns(vision_train):
    """The alerts topic is encrypted with the project key: each publish of the supervisor makes SNS
    call KMS with the supervisor role's credentials (measured by tests/ops/test_job_supervisor.py),
    and the key and role policies allow it."""
    plan, account, calls = vision_train
    role = f"arn:aws:iam::{account}:role/gpu-cloud-vision-train-jobs-role"
    [key] = [r.state["arn"] for r in plan.resources if r.custom and r.type == "aws:kms/key:Key"]

    through_sns = {(call["action"], call["resource"]) for call in calls
                   if call.get("principal") == role and call["context"].get("kms:ViaService") == "sns.us-east-1.amazonaws.com"}
    assert through_sns == {("kms:GenerateDataKey", key), ("kms:Decrypt", key)}
    assert not [call for call in plan.access["denied"] if call["action"].startswith("kms:")]
