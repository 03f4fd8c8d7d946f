"""Data survives: keys, persistent volumes and the backup vault are protected and retained, no
change of instances or scaling touches them, and persistent volumes are backed up daily."""

from __future__ import annotations

import copy

import boto3
import pytest

from gpucloud.plan import plan_program
from gpucloud.program import build
from support import deploy, deployed_alone, minimal_config, private_subnets, settings_for

BASE_GROUP = {
    "name": "workbench",
    "instanceTypes": ["g5.xlarge", "g4dn.xlarge"],
    "minSize": 0,
    "maxSize": 1,
    "desiredCapacity": 1,
    "persistentVolumeGiB": 200,
    "rootVolumeGiB": 100,
}

CHANGES = {
    "instance types": {"instanceTypes": ["g6.xlarge"]},
    "ami": {"amiId": "AMI"},
    "sizes": {"minSize": 1, "desiredCapacity": 1},
    "root and data disks": {"rootVolumeGiB": 300, "dataVolumeGiB": 500},
    "spot split": {"onDemandBaseCapacity": 1, "spotPercent": 0},
    "scaling": {"scaling": {"schedules": [{"name": "night", "recurrence": "0 20 * * *", "desiredCapacity": 0}]}},
    "idle shutdown": {"idleShutdown": {"minutes": 30}},
}
KEEPERS = ("aws:kms/key:Key", "aws:ebs/volume:Volume", "aws:backup/vault:Vault")


def values_with(group_changes: dict) -> dict:
    return minimal_config(groups=[{**copy.deepcopy(BASE_GROUP), **group_changes}], backup={"retentionDays": 14})


def keeper_inputs(deployment) -> dict[str, dict]:
    """The inputs of what must survive, with the run's own key ARN replaced (moto makes a new key per run)."""
    [key] = deployment.of_type("aws:kms/key:Key")
    key_arn = key.outputs["arn"]
    kept = {}
    for resource in deployment.resources:
        if resource.type in KEEPERS:
            kept[resource.urn] = {
                name: ("<project key>" if value == key_arn else value) for name, value in resource.inputs.items()
            }
    return kept


@pytest.fixture(scope="module")
def baseline_record() -> dict:
    """The keepers' inputs of the module's baseline deployment, once `baseline` has made it."""
    return {}


@pytest.fixture(scope="module")
def baseline_inputs(baseline_record):
    """The keepers' inputs before any change: those of `baseline`'s deployment when the class
    below ran, else taken on an account of their own."""
    if "inputs" not in baseline_record:
        with deployed_alone(settings_for(values_with({}))) as deployment:
            baseline_record["inputs"] = keeper_inputs(deployment)
    return baseline_record["inputs"]


@pytest.fixture(scope="class")
def baseline(baseline_record):
    """The baseline stack for the tests of a class that only read it: one deployment, on an account
    of its own that closes when the class ends, before the tests below open theirs."""
    with deployed_alone(settings_for(values_with({}))) as deployment:
        baseline_record["inputs"] = keeper_inputs(deployment)
        yield deployment


class TestTheBaselineStack:
    def test_keepers_are_protected_and_retained_on_delete(self, baseline):
        kept = [resource for resource in baseline.resources if resource.type in KEEPERS]
        assert {resource.type for resource in kept} == set(KEEPERS)
        for resource in kept:
            assert resource.protect and resource.retain_on_delete, resource.urn
            assert not resource.replace_on_changes, resource.urn

    def test_persistent_volume_is_backed_up_daily_into_a_vault_under_the_project_key(self, baseline):
        backup = baseline.client("backup")
        key_arn = baseline.outputs["kmsKeyArn"]
        vault = backup.describe_backup_vault(BackupVaultName="gpu-cloud-demo")
        assert vault["EncryptionKeyArn"] == key_arn
        [plan_summary] = backup.list_backup_plans()["BackupPlansList"]
        [rule] = backup.get_backup_plan(BackupPlanId=plan_summary["BackupPlanId"])["BackupPlan"]["Rules"]
        assert rule["ScheduleExpression"] == "cron(0 3 * * ? *)"
        assert rule["Lifecycle"]["DeleteAfterDays"] == 14
        assert rule["TargetBackupVaultName"] == "gpu-cloud-demo"
        [selection] = baseline.of_type("aws:backup/selection:Selection")
        assert not selection.validated and "CreateBackupSelection" in selection.note
        assert selection.inputs["selectionTags"] == [{"type": "STRINGEQUALS", "key": "gpu-cloud:backup", "value": "demo"}]
        volume_id = baseline.outputs["groups"]["workbench"]["persistentVolumeId"]
        [volume] = baseline.client("ec2").describe_volumes(VolumeIds=[volume_id])["Volumes"]
        assert {"Key": "gpu-cloud:backup", "Value": "demo"} in volume["Tags"]

    def test_backup_role_may_use_the_project_key(self, baseline):
        import json

        policy = json.loads(baseline.client("kms").get_key_policy(KeyId=baseline.outputs["kmsKeyArn"], PolicyName="default")["Policy"])
        [use] = [s for s in policy["Statement"] if s["Sid"] == "ProjectInstanceRolesUseKey"]
        assert "arn:aws:iam::123456789012:role/gpu-cloud-demo-backup" in use["Condition"]["ArnEquals"]["aws:PrincipalArn"]
        attached = baseline.client("iam").list_attached_role_policies(RoleName="gpu-cloud-demo-backup")["AttachedPolicies"]
        assert [p["PolicyName"] for p in attached] == ["AWSBackupServiceRolePolicyForBackup"]


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_fleet_changes_leave_key_volume_and_vault_inputs_unchanged(baseline_inputs, change, account):
    group_changes = dict(CHANGES[change])
    if group_changes.get("amiId") == "AMI":
        images = account.client("ec2").describe_images(
            Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["*ubuntu*"]}]
        )["Images"]
        group_changes["amiId"] = sorted(image["ImageId"] for image in images)[-1]
    changed = deploy(settings_for(values_with(group_changes)), account)
    assert keeper_inputs(changed) == baseline_inputs


def test_backups_are_kept_seven_days_unless_configured(account):
    values = minimal_config(groups=[copy.deepcopy(BASE_GROUP)])
    assert "backup" not in values

    deploy(settings_for(values), account)

    backup = account.client("backup")
    [plan_summary] = backup.list_backup_plans()["BackupPlansList"]
    [rule] = backup.get_backup_plan(BackupPlanId=plan_summary["BackupPlanId"])["BackupPlan"]["Rules"]
    assert rule["Lifecycle"]["DeleteAfterDays"] == 7


def test_stacks_without_persistent_volumes_get_no_backup(account):
    deployment = deploy(settings_for(minimal_config()), account)
    assert deployment.of_type("aws:backup/plan:Plan") == []


def subnets_in_zones(zones: str) -> list[str]:
    """Subnets in the plan's moto account (moto is active while the program runs)."""
    return private_subnets(boto3.client("ec2", region_name="us-east-1"), "10.50.0.0/16", zones)


@pytest.mark.parametrize(
    ("group", "zones", "warning"),
    [
        ({"instanceTypes": ["g5.xlarge"]}, None, "1 instance type(s) in 2 availability zone(s)"),
        ({"instanceTypes": ["g5.xlarge", "g6.xlarge"]}, "a", "2 instance type(s) in 1 availability zone(s)"),
        ({"instanceTypes": ["g5.xlarge", "g6.xlarge"]}, "aa", "2 instance type(s) in 1 availability zone(s)"),
        ({"instanceTypes": ["g5.xlarge", "g6.xlarge"]}, "ab", None),
        ({"instanceTypes": ["g5.xlarge", "g6.xlarge"]}, None, None),
        ({"instanceTypes": ["g5.xlarge"], "spotPercent": 0}, None, None),
    ],
    ids=["one type", "one subnet", "two subnets of one zone", "two zones", "default vpc", "on demand"],
)
def test_spot_group_with_a_single_pool_is_warned(group, zones, warning):
    def program():
        network = {"subnetIds": subnets_in_zones(zones)} if zones else {}
        build(settings_for(minimal_config(network=network, groups=[{"name": "workers", "maxSize": 2, **group}])))

    plan = plan_program(program, stack="demo")

    findings = [finding for finding in plan.findings if finding.rule == "spot-capacity-risk"]
    if warning is None:
        assert findings == []
    else:
        [finding] = findings
        assert finding.severity == "warning" and "gpu-cloud-demo-workers" in finding.message
        assert warning in finding.message and "capacity shortage" in finding.message
