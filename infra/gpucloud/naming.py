"""Names of what a stack creates that AWS wants unique, and the ARNs other documents must name
before the thing exists."""

from __future__ import annotations

import hashlib
import re

NODE_METRICS_NAMESPACE = "gpu-cloud/Node"
"""Where the node agent counts node faults, replacements and held replacements (its copy of the
name is gpucloud.node.replace.NAMESPACE: the agent imports nothing from the package)."""

STACK_TAG = "gpu-cloud:stack"
"""Carries a stack's name base on everything it creates: what a node may touch is scoped by it,
while the `Project` tag stays the project's, for budgets and cost reports."""

GROUP_TAG = "GpuGroup"
"""Names the group on the stack's per-group resources, and on a Capacity Block bought for a group
(`gpucloud capacity buy` finds a block an interrupted run bought by it, instead of buying again)."""

NAME_BASE_MAX_LENGTH = 40
"""The longest base every name below takes: AWS Backup vault names are 2-50 characters
(https://docs.aws.amazon.com/aws-backup/latest/devguide/API_CreateBackupVault.html, read
2026-11-24), backup plan and selection names 1-50 (botocore's backup model, `BackupPlanName` and
`BackupSelectionName`), and each of the three is `gpu-cloud-<base>`."""


def name_base(project: str, stack: str) -> str:
    """What every name AWS wants unique per account or region starts from, so that two stacks of
    one project never share a role, budget or dashboard: the project alone for the stack named
    after it, else `<project>_<stack>` (a project name holds no `_`, so no two stacks meet)."""
    return project if stack == project else f"{project}_{stack}"



def artifacts_bucket_name(base: str, account_id: str) -> str:
    """The stack's artifacts bucket (the node agent bundle). Bucket names are global, lowercase,
    3-63 characters of letters, digits, `-` and `.`
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html, read
    2026-11-24): the base lowercased with `_` as `-`, cut to fit, made unique again by a hash of
    the base, and the account id, which no other account's bucket ends with."""
    slug = base.lower().replace("_", "-")[:28].rstrip("-")
    digest = hashlib.sha256(base.encode("utf-8")).hexdigest()[:8]
    return f"gpu-cloud-{slug}-{digest}-{account_id}"


def access_logs_bucket_name(base: str, account_id: str) -> str:
    """Where S3 writes the artifacts bucket's server access logs: the same slug, hash and account
    as `artifacts_bucket_name`, under `gpu-cloud-logs-` (the slug cut to 23 so that the name stays
    within 63 characters)."""
    slug = base.lower().replace("_", "-")[:23].rstrip("-")
    digest = hashlib.sha256(base.encode("utf-8")).hexdigest()[:8]
    return f"gpu-cloud-logs-{slug}-{digest}-{account_id}"


ARTIFACTS_ACCESS_LOG_PREFIX = "artifacts/"
"""Where in the log bucket S3 writes the artifacts bucket's access logs."""


AGENT_BUNDLE_PREFIX = "agent/"
"""Where the bundles lie in the artifacts bucket; the node role may read only under it."""


def instance_role_name(base: str) -> str:
    """The node role's fixed name, so the key policy can name it before the role exists."""
    return f"gpu-cloud-{base}-node"


def backup_role_name(base: str) -> str:
    return f"gpu-cloud-{base}-backup"


def backup_name(base: str) -> str:
    """The stack's backup vault, plan and selection all take this one name: no suffix, since a
    40-character base leaves room for none in the 50 characters AWS Backup takes (`-daily` made a
    plan name of 56, `-volumes` a selection name of 58). A selection's name is unique within its
    plan only; the plan's one rule is named `daily`."""
    return f"gpu-cloud-{base}"


def role_arn(partition: str, account_id: str, name: str) -> str:
    return f"arn:{partition}:iam::{account_id}:role/{name}"


AUTOSCALING_SERVICE_ROLE = "AWSServiceRoleForAutoScaling"
AUTOSCALING_SERVICE = "autoscaling.amazonaws.com"


def autoscaling_service_role_arn(partition: str, account_id: str) -> str:
    return f"arn:{partition}:iam::{account_id}:role/aws-service-role/{AUTOSCALING_SERVICE}/{AUTOSCALING_SERVICE_ROLE}"


def autoscaling_group_name(base: str, group: str) -> str:
    return f"gpu-cloud-{base}-{group}"


def autoscaling_group_arn_pattern(partition: str, region: str, account_id: str, group_name: str) -> str:
    """One group by its exact name; the `*` stands only for the id AWS gives the group."""
    return f"arn:{partition}:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/{group_name}"


def flow_logs_role_name(base: str) -> str:
    return f"gpu-cloud-{base}-flow-logs"


def log_group_prefix(base: str) -> str:
    """The node role may write every log group under it."""
    return f"/gpu-cloud/{base}/"


def flow_log_group_prefix(base: str) -> str:
    """Outside every stack's node prefix, so no node can write (or forge) flow log records."""
    return f"/gpu-cloud-vpc/{base}/"


def prometheus_log_group_prefix(base: str) -> str:
    """Where the project's Prometheus workspace logs rule and alert manager errors: outside the node
    prefix too, so no node can write (or forge) them."""
    return f"/gpu-cloud-aps/{base}/"


def prometheus_remote_write_url(region: str, workspace_id: str) -> str:
    """A workspace's remote write endpoint (AMP user guide, "Ingest metrics to your workspace":
    `https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/remote_write`; read 2026-11-25)."""
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}/api/v1/remote_write"


PROMETHEUS_RULES_NAMESPACE = "gpu-cloud"
"""The rule groups namespace a stack adds to its Prometheus workspace (AMP: one per name per workspace)."""


def alerts_topic_name(base: str) -> str:
    """The stack's alerts topic; an alert manager definition sending to it is the stack's own."""
    return f"gpu-cloud-{base}-alerts"


def job_document_name(base: str) -> str:
    """The stack's SSM Command document that starts a job on a node (`gpucloud run`). SSM document
    names are 3-128 characters of letters, digits, `_`, `-` and `.`, and may not start with `aws`,
    `amazon` or `amzn` (SSM API reference, CreateDocument, `Name`; read 2026-11-25)."""
    return f"gpu-cloud-{base}-run"


def job_log_group_name(base: str) -> str:
    """Where Run Command sends every job's output: under the node prefix, since the SSM Agent
    writes it with the node's role."""
    return f"{log_group_prefix(base)}jobs"


BOOT_PHASE_STREAM_PREFIX = "boot-phases/"
"""In the job log group, each node's boot phases: stream `boot-phases/<Auto Scaling group>/<instance
id>`, written by the CloudWatch agent (userdata/render.py), read by `gpucloud connect --start` and
`gpucloud logs`; the group in the name lets a notebook user's policy reach its own group's streams
only. Run Command's streams start with a command id, so none starts so."""


def boot_phase_log_stream(autoscaling_group: str, instance_id: str) -> str:
    return f"{BOOT_PHASE_STREAM_PREFIX}{autoscaling_group}/{instance_id}"


def job_runner_policy_name(base: str) -> str:
    """The managed policy `access.jobRunnerPolicy` creates for the team that runs jobs."""
    return f"gpu-cloud-{base}-job-runner"


def notebook_user_policy_name(base: str, group: str) -> str:
    """The managed policy `groups[].services.jupyter.userPolicy` creates for the group's notebook user."""
    return f"gpu-cloud-{base}-{group}-notebook"


def job_supervisor_name(base: str) -> str:
    """The stack's job supervisor state machine, and the start of its roles' and EventBridge
    rule's names (`job_supervisor_rule_name`). State machine names are 1-80 of letters, digits,
    `-` and `_`: 55 characters at a 40-character base (terraform-provider-aws
    internal/service/sfn/state_machine.go, `name`; read 2026-11-28)."""
    return f"gpu-cloud-{base}-jobs"


def job_supervisor_role_name(base: str) -> str:
    """The role the job supervisor's executions run as (64 characters at most: a name base is 40)."""
    return f"{job_supervisor_name(base)}-role"


def job_supervisor_events_role_name(base: str) -> str:
    """The role EventBridge starts the supervisor with (62 characters at a 40-character base)."""
    return f"{job_supervisor_name(base)}-events"


EVENTS_RULE_NAME_MAX_LENGTH = 64
"""EventBridge rule names: 1-64 of letters, digits, `.`, `-` and `_` (botocore's events model,
`RuleName`; terraform-provider-aws internal/service/events/validate.go, validateRuleName; read
2026-11-28)."""


def job_supervisor_rule_name(base: str) -> str:
    """The supervisor's node-left EventBridge rule: `<state machine>-node-left` while that fits
    64 characters (a base of up to 39), else the base cut to fit beside a hash of the whole base,
    so that two stacks whose long bases share a start keep rules of their own."""
    suffix = "-jobs-node-left"
    name = f"gpu-cloud-{base}{suffix}"
    if len(name) <= EVENTS_RULE_NAME_MAX_LENGTH:
        return name
    digest = hashlib.sha256(base.encode("utf-8")).hexdigest()[:6]
    tail = f"-{digest}{suffix}"
    return f"gpu-cloud-{base[: EVENTS_RULE_NAME_MAX_LENGTH - len('gpu-cloud-') - len(tail)]}{tail}"


def job_supervisor_log_group_name(base: str) -> str:
    """Where Step Functions logs the supervisor's executions: `<job log group>-supervisor`, which
    the key policy's `<job log group>*` already lets CloudWatch Logs encrypt, and which the team's
    `<job log group>:*` read does not reach."""
    return f"{job_log_group_name(base)}-supervisor"


JOBS_FOLDER = "jobs/"
"""Under the stack's first write prefix: each job's record and checkpoints (`jobs/<job id>/`)."""


def jupyter_token_parameter_name(base: str, group: str) -> str:
    """The SSM parameter holding a group's JupyterLab token (SecureString, the project key); the
    node writes it at JupyterLab's first start, `gpucloud connect` reads it."""
    return f"/gpu-cloud/{base}/{group}/jupyter-token"


ELB_NAME_MAX_LENGTH = 32
"""Load balancer and target group names: at most 32 letters, digits and hyphens, not starting or
ending with a hyphen, and a load balancer's not starting with `internal-` (terraform-provider-aws
internal/service/elbv2/validate.go, validName and validTargetGroupName, read 2026-11-25)."""


def elb_name(base: str, group: str, kind: str, *, replaced_by: str = "") -> str:
    """A group's load balancer (`kind` "lb") or target group ("tg") name: `gc-`, the base and group
    lowercased with `_` as `-`, cut to fit 32, and a hash of the whole that keeps two stacks whose
    names share a long start apart. `replaced_by` joins the hash: the values whose change replaces
    the resource, so its replacement has a name of its own and can exist beside the old one."""
    hashed = "/".join([base, group, kind, *([replaced_by] if replaced_by else [])])
    digest = hashlib.sha256(hashed.encode("utf-8")).hexdigest()[:6]
    tail = f"-{kind}-{digest}"
    slug = f"{base}-{group}".lower().replace("_", "-")
    return f"gc-{slug[: ELB_NAME_MAX_LENGTH - 3 - len(tail)].strip('-')}{tail}"


def target_group_name(base: str, group: str, port: int, protocol: str = "HTTP", target_type: str = "instance") -> str:
    """A group's target group name, which changes with each value whose change replaces a target
    group (port, protocol, target type: ForceNew in terraform-provider-aws
    internal/service/elbv2/target_group.go, data/provider_rules.json), so Pulumi can create the
    replacement before it deletes the old one while the listener still forwards to it."""
    return elb_name(base, group, "tg", replaced_by=f"{protocol}:{port}:{target_type}")


def association_name(file_system: str, path: str) -> str:
    """The Pulumi name of a data repository association: the file system's, `-link-`, the file
    system path as letters, digits and hyphens, and a hash of the path, so that two paths never
    share a name. It follows the path, not the prefix's place in the list: a prefix added or
    removed leaves the others' names, and so the resources, alone (FSx refuses a second
    association on a path or prefix, and Pulumi creates a renamed one before deleting the old)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-")
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:6]
    return f"{file_system}-link-{slug}-{digest}"


def endpoint_logs_bucket_name(base: str, group: str, account_id: str) -> str:
    """Where a group's load balancer writes its access logs: `gpu-cloud-lb-`, a slug of base and
    group cut to 28, a hash, and the account id (63 characters at most, like the other buckets)."""
    slug = f"{base}-{group}".lower().replace("_", "-")[:28].strip("-")
    digest = hashlib.sha256(f"{base}/{group}".encode("utf-8")).hexdigest()[:8]
    return f"gpu-cloud-lb-{slug}-{digest}-{account_id}"
