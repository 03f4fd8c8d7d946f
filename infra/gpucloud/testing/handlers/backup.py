"""AWS Backup vaults, plans and selections."""

from __future__ import annotations

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.registry import Account, Created, ResourceRequest, drop_none, resource


@resource("aws:backup/vault:Vault")
def create_vault(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    require_key(account, inputs.get("kmsKeyArn"), request.name)
    name = request.physical_name()
    vault = account.client("backup").create_backup_vault(
        **drop_none({"BackupVaultName": name, "EncryptionKeyArn": inputs.get("kmsKeyArn"), "BackupVaultTags": inputs.get("tags")})
    )
    return Created(id=name, outputs={"name": name, "arn": vault["BackupVaultArn"], "recoveryPoints": 0})


@resource("aws:backup/plan:Plan")
def create_plan(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    rules = []
    for rule in inputs["rules"]:
        lifecycle = rule.get("lifecycle") or {}
        rules.append(
            drop_none(
                {
                    "RuleName": rule["ruleName"],
                    "TargetBackupVaultName": rule["targetVaultName"],
                    "ScheduleExpression": rule.get("schedule"),
                    "StartWindowMinutes": rule.get("startWindow"),
                    "CompletionWindowMinutes": rule.get("completionWindow"),
                    "Lifecycle": drop_none(
                        {
                            "DeleteAfterDays": lifecycle.get("deleteAfter"),
                            "MoveToColdStorageAfterDays": lifecycle.get("coldStorageAfter"),
                        }
                    ),
                    "RecoveryPointTags": rule.get("recoveryPointTags"),
                }
            )
        )
    plan = account.client("backup").create_backup_plan(
        BackupPlan={"BackupPlanName": name, "Rules": rules},
        **drop_none({"BackupPlanTags": inputs.get("tags")}),
    )
    return Created(
        id=plan["BackupPlanId"],
        outputs={"name": name, "arn": plan["BackupPlanArn"], "version": plan["VersionId"]},
    )


@resource("aws:backup/selection:Selection")
def record_selection(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    account.client("backup").get_backup_plan(BackupPlanId=inputs["planId"])
    account.client("iam").get_role(RoleName=inputs["iamRoleArn"].rsplit("/", 1)[-1])
    name = request.physical_name()
    return Created(
        id=f"{inputs['planId']}-{name}",
        outputs={"name": name},
        validated=False,
        note="moto does not implement CreateBackupSelection; the plan and role it names were checked, the selection recorded by the engine only",
    )
