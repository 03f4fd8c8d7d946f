"""AWS Backup vaults, plans and selections.

moto takes any name; AWS Backup and the provider do not. Each rule below is refused as AWS or the
provider would, before the call:
- vault names: 2-50 of letters, digits, `-` and `_` (botocore backup model 2018-11-15,
  `BackupVaultName` pattern; terraform-provider-aws internal/service/backup/vault.go; read 2026-11-25);
- plan names: 1-50 letters, digits and `-_.` (botocore backup model, `BackupPlanInput.BackupPlanName`
  documentation: the model carries no pattern, and the provider's plan.go no validation, so a long
  name first fails at CreateBackupPlan in `pulumi up`);
- rule names: 1-50 letters, digits and `-_.` (model `BackupRuleName`; provider plan.go `rule_name`);
- selection names: 1-50 letters, digits and `-_.` (model `BackupSelectionName`; provider
  internal/service/backup/selection.go `name`, read 2026-11-25).
"""

from __future__ import annotations

import re

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.registry import Account, Created, ResourceRequest, drop_none, refused, resource
from gpucloud.testing.service_model import check_unsent

_VAULT_NAME = re.compile(r"[A-Za-z0-9_-]{2,50}")
_DISPLAY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,50}")


def _require_name(operation: str, what: str, name: str, pattern: re.Pattern[str], rule: str) -> None:
    if not pattern.fullmatch(name):
        raise refused(
            operation, "InvalidParameterValueException",
            f"{what} {name!r} ({len(name)} characters) is not valid: AWS Backup takes {rule}",
        )


@resource("aws:backup/vault:Vault")
def create_vault(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    require_key(account, inputs.get("kmsKeyArn"), request.name)
    name = request.physical_name()
    _require_name("CreateBackupVault", "backup vault name", name, _VAULT_NAME, "2-50 letters, digits, '-' and '_'")
    vault = account.client("backup").create_backup_vault(
        **drop_none({"BackupVaultName": name, "EncryptionKeyArn": inputs.get("kmsKeyArn"), "BackupVaultTags": inputs.get("tags")})
    )
    return Created(id=name, outputs={"name": name, "arn": vault["BackupVaultArn"], "recoveryPoints": 0})


@resource("aws:backup/plan:Plan")
def create_plan(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = request.physical_name()
    _require_name("CreateBackupPlan", "backup plan name", name, _DISPLAY_NAME, "1-50 letters, digits, '-', '_' and '.'")
    rules = []
    for rule in inputs["rules"]:
        _require_name("CreateBackupPlan", "backup rule name", rule["ruleName"], _DISPLAY_NAME,
                      "1-50 letters, digits, '-', '_' and '.'")
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
    _require_name("CreateBackupSelection", "backup selection name", name, _DISPLAY_NAME,
                  "1-50 letters, digits, '-', '_' and '.'")
    check_unsent(account.client("backup"), "CreateBackupSelection", {"BackupPlanId": inputs["planId"], "BackupSelection": drop_none({
        "SelectionName": name, "IamRoleArn": inputs["iamRoleArn"], "Resources": inputs.get("resources") or None})})
    return Created(
        id=f"{inputs['planId']}-{name}",
        outputs={"name": name},
        validated=False,
        note="moto does not implement CreateBackupSelection; the plan and role it names were checked, the selection recorded by the engine only",
    )
