"""What `gpucloud run` needs from the stack: the SSM Command document that starts the node
launcher (`gpucloud-node launch` of the agent bundle), and the managed policy a team needs to run,
follow and stop jobs.

The document passes every parameter to the launcher as an environment variable
(`interpolationType: ENV_VAR`, SSM user guide, "Data elements and parameters"; SSM Agent
3.3.2746.0 or later, "Troubleshooting parameter handling issues"; both read 2026-11-25) and holds
each to an `allowedPattern` of characters no shell treats specially: the script never pastes a
value into its own text, and SSM refuses a value outside its pattern before any node sees it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from gpucloud.documents.job_supervisor_access import supervised_job_statements
from gpucloud.documents.services import Document
from gpucloud.naming import JOBS_FOLDER, STACK_TAG, autoscaling_group_arn_pattern

LAUNCHER = "/usr/local/bin/gpucloud-node"
"""Where the agent bundle installs the node CLI."""

_IPV4 = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"

JOB_PARAMETERS: dict[str, tuple[str, str, str]] = {
    # name: (allowedPattern, default ("" when required), description)
    "action": (r"^(launch|launch-stop|preflight|preflight-full|preflight-fabric|preflight-replace|preflight-decide)$",
               "launch",
               "launch starts the job's command; launch-stop ends it; preflight (quick), preflight-full and "
               "preflight-fabric (the all_reduce alone) test the nodes first; preflight-decide (the job's first node) "
               "says what the rounds mean; preflight-replace marks a node Unhealthy"),
    "job": (r"^[a-z0-9][a-z0-9-]{0,62}$", "", "job id: <group>-<yyyymmddhhmmss>-<4 hex>"),
    "nodes": (rf"^$|^{_IPV4}(,{_IPV4}){{0,999}}$", "", "private IPv4 addresses of the job's nodes, first = MASTER_ADDR"),
    "port": (r"^(102[4-9]|10[3-9][0-9]|1[1-9][0-9]{2}|[2-9][0-9]{3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$",
             "29500", "MASTER_PORT, 1024-65535"),
    "gpusPerNode": (r"^$|^[1-9][0-9]{0,2}$", "", "NPROC_PER_NODE; empty: the GPUs the node has"),
    "image": (r"^$|^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$", "", "container image to run the command in; empty: on the host"),
    "attempt": (r"^[0-9]{1,3}$", "0", "GPUCLOUD_ATTEMPT: 0, then +1 per resume"),
    "checkpointUri": (r"^$|^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[A-Za-z0-9._=/-]{0,400}/$", "",
                      "s3://bucket/<write prefix>/jobs/<job id>/; empty: no checkpoint sync"),
    "commandB64": (r"^$|^[A-Za-z0-9+/]{4,65536}={0,2}$", "", "base64 of the command's argv as a JSON list of strings"),
}
"""The document's parameters, as the launcher's flags (`job` is `--job`, ...). `gpucloud run`
checks its values against the same patterns before sending."""

EXECUTION_TIMEOUT_SECONDS = 172800
"""The longest a step of aws:runShellScript may run (`timeoutSeconds`, 48 hours; SSM user guide,
"Command document plugin reference", aws:runShellScript; read 2026-11-25); the default is one hour,
which would end every real training run."""

PREFLIGHT_ACTIONS = {"preflight": ("--level", "quick"), "preflight-full": ("--level", "full"),
                     "preflight-fabric": ("--checks", "fabric")}
"""The preflight goes through this document as more `action` values rather than a second document:
the team policy's SendCommand statement, the log group and the agent's path stay one, no parameter
is added (a job's parameters keep their shape, and the job supervisor's Preflight step sends the
job's own parameters with `action: preflight`), and an account's 500 active documents (SSM API
reference, CreateDocument, DocumentLimitExceeded) are not drawn on. The level is the action, so a
preflight ignores the job's command, attempt and checkpoint URI. `preflight-replace` reads its
reason from `commandB64` (base64 of a JSON argv), and `preflight-decide` the rounds' exit statuses
(the job supervisor's search: documents/job_supervisor_preflight.py). A document and the parameter values sent with it
may be up to 64 KB together (CreateDocument `Content`, MaxDocumentSizeExceeded; read 2026-11-28):
the script grows by five lines."""

STEP_NAME = "launch"
"""The document's one step; Run Command names each job's log streams `<command id>/<instance id>/<step>/stdout`."""

_SCRIPT = [
    "set -eu",
    'if [ -z "${SSM_job+x}" ]; then echo "gpucloud: this SSM Agent does not pass document parameters as '
    'environment variables (it needs 3.3.2746.0 or later)" >&2; exit 65; fi',
    'if [ "$SSM_action" = launch-stop ]; then exec ' + LAUNCHER + ' launch-stop --job "$SSM_job"; fi',
    'if [ "$SSM_action" = preflight-replace ]; then exec ' + LAUNCHER + ' preflight-replace --job "$SSM_job" '
    '--options-b64 "$SSM_commandB64"; fi',
    'if [ "$SSM_action" = preflight-decide ]; then exec ' + LAUNCHER + ' preflight-decide --job "$SSM_job" '
    '--nodes "$SSM_nodes" --options-b64 "$SSM_commandB64"; fi',
    'case "$SSM_action" in ' + " ".join(f"{action}) set -- preflight {flag} {value};;"
                                        for action, (flag, value) in PREFLIGHT_ACTIONS.items())
    + ' *) set -- launch --attempt "$SSM_attempt" --command-b64 "$SSM_commandB64";; esac',
    'set -- "$@" --job "$SSM_job" --nodes "$SSM_nodes" --port "$SSM_port"',
    'if [ -n "$SSM_gpusPerNode" ]; then set -- "$@" --gpus-per-node "$SSM_gpusPerNode"; fi',
    'if [ -n "$SSM_image" ]; then set -- "$@" --image "$SSM_image"; fi',
    'if [ -n "$SSM_checkpointUri" ] && [ "$1" = launch ]; then set -- "$@" --checkpoint-uri "$SSM_checkpointUri"; fi',
    f'exec {LAUNCHER} "$@"',
]


def job_document() -> Document:
    """The Command document (schema 2.2) whose one step runs the launcher with the parameters."""
    parameters = {
        name: {
            "type": "String",
            "description": description,
            "allowedPattern": pattern,
            "interpolationType": "ENV_VAR",
            **({"default": default} if default or name != "job" else {}),
        }
        for name, (pattern, default, description) in JOB_PARAMETERS.items()
    }
    return {
        "schemaVersion": "2.2",
        "description": "gpu-cloud: start (or stop) a job's command on this node with gpucloud-node launch",
        "parameters": parameters,
        "mainSteps": [
            {
                "action": "aws:runShellScript",
                "name": STEP_NAME,
                "precondition": {"StringEquals": ["platformType", "Linux"]},
                "inputs": {"timeoutSeconds": str(EXECUTION_TIMEOUT_SECONDS), "runCommand": _SCRIPT},
            }
        ],
    }


def job_document_content() -> str:
    return json.dumps(job_document(), indent=2)


def parameter_problem(name: str, value: str) -> str | None:
    """Why SSM would refuse `value` for the document's parameter `name` (None: it takes it)."""
    pattern = JOB_PARAMETERS[name][0]
    if re.search(pattern, value):
        return None
    shown = value if len(value) <= 60 else value[:57] + "..."
    return f"{name} {shown!r} does not match the job document's allowedPattern {pattern}"


def job_runner_policy(
    *,
    partition: str,
    region: str,
    account_id: str,
    name_base: str,
    document_name: str,
    log_group_name: str,
    group_names: Sequence[str],
    key_arn: str,
    bucket: str | None = None,
    jobs_prefix: str | None = None,
    supervisor_name: str | None = None,
) -> Document:
    """What a team member needs for `gpucloud run`, `logs`, `stop` and `jobs` on this stack, and no more.
    With `supervisor_name`, starting, following, listing and stopping the executions of the
    stack's job supervisor (documents/job_supervisor_access.py).

    SendCommand is authorized on the document (required) and on each instance of one request
    (Service Authorization Reference, "Actions, resources, and condition keys for AWS Systems
    Manager": SendCommand takes `document*` and `instance`, both with `ssm:resourceTag/${TagKey}`;
    read 2026-11-25): the stack's job document and instances, each held by the stack's
    `gpu-cloud:stack` tag, which the stack puts on both. One statement, since parliament flags a
    SendCommand statement without the document as RESOURCE_MISMATCH. SetDesiredCapacity is held to
    the stack's groups by name and tag; logs are read from the job log group only; job records are
    read and written under `<write prefix>jobs/` only, through S3 with the project key.

    What it exposes in an account shared by teams: CancelCommand, GetCommandInvocation,
    ListCommands and ListCommandInvocations list no resource type in the same reference (read
    2026-11-28), so they stand on `*`, and a holder may list, read the parameters of, and cancel
    every Run Command command of the account, other teams' included, though never start one: with
    it the parameters each command was sent with (a job's argv) and, through GetCommandInvocation,
    the first 24,000 characters of each node's stdout and 8,000 of its stderr (SSM API reference,
    GetCommandInvocation; read 2026-11-28). The whole output, in the job log group, stays behind
    that group's ARN. The scoping rests on the
    `gpu-cloud:stack` tag: whoever may set that tag on an instance may have this policy's holders
    run commands on it (docs/guides/training-jobs.md gives an SCP that keeps the tag to deployers)."""
    instances = f"arn:{partition}:ec2:{region}:{account_id}:instance/*"
    log_group = f"arn:{partition}:logs:{region}:{account_id}:log-group:{log_group_name}"
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    statements: list[Document] = [
        {
            "Sid": "SendJobDocumentToStackInstances",
            "Effect": "Allow",
            "Action": "ssm:SendCommand",
            "Resource": [f"arn:{partition}:ssm:{region}:{account_id}:document/{document_name}", instances],
            "Condition": {"StringEquals": {f"ssm:resourceTag/{STACK_TAG}": name_base}},
        },
        {
            "Sid": "CommandStatusHasNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": ["ssm:CancelCommand", "ssm:GetCommandInvocation", "ssm:ListCommandInvocations", "ssm:ListCommands"],
            "Resource": "*",
        },
        {
            "Sid": "FindNodesHasNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeInstances", "logs:DescribeLogGroups"],
            "Resource": "*",
        },
        {
            "Sid": "ScaleStackGroups",
            "Effect": "Allow",
            "Action": "autoscaling:SetDesiredCapacity",
            "Resource": [autoscaling_group_arn_pattern(partition, region, account_id, name) for name in sorted(group_names)],
            "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{STACK_TAG}": name_base}},
        },
        {
            "Sid": "ReadJobLogs",
            "Effect": "Allow",
            "Action": ["logs:DescribeLogStreams", "logs:FilterLogEvents", "logs:GetLogEvents"],
            "Resource": log_group_read_resource(log_group),
        },
    ]
    if bucket and jobs_prefix:
        statements += [
            {
                "Sid": "JobRecordsUnderWritePrefix",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject"],
                "Resource": f"{bucket_arn}/{jobs_prefix}*",
            },
            {
                # Without s3:ListBucket S3 answers a GetObject of a missing key with 403 AccessDenied,
                # with it 404 NoSuchKey (S3 API reference, GetObject, "Permissions"; read 2026-11-28).
                # For that check S3 puts the requested key in s3:prefix (ceph/ceph#68577 matches
                # AWS so), so a listing held to the jobs prefix is enough for "no job".
                "Sid": "ListJobRecordsOnly",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": f"{jobs_prefix}*"}},
            },
            {
                "Sid": "JobRecordsThroughS3WithProjectKey",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            },
        ]
    if supervisor_name:
        statements += supervised_job_statements(partition=partition, region=region, account_id=account_id,
                                                machine_name=supervisor_name)
    return {"Version": "2012-10-17", "Statement": statements}


def log_group_read_resource(log_group_arn: str) -> str:
    """The one resource that lets the log reads reach a log group and its streams: `<group ARN>:*`.
    CloudWatch Logs authorizes DescribeLogStreams and FilterLogEvents on the log group as
    `arn:...:log-group:<name>:*`, the form DescribeLogGroups returns, and GetLogEvents on
    `arn:...:log-group:<name>:log-stream:<stream>` (CloudWatch Logs user guide, "Overview of managing
    access permissions to your CloudWatch Logs resources": the ARN without `:*` serves only the tag
    actions and a few others; Service Authorization Reference for CloudWatch Logs lists the first two
    on `log-group*` and GetLogEvents on `log-stream*`; aws/aws-cli#3578; all read 2026-11-28). A log
    group name holds no `:`, so the pattern reaches no other group."""
    return f"{log_group_arn}:*"


def jobs_prefix(write_prefixes: Sequence[str]) -> str | None:
    """`<first write prefix>jobs/`, where job records and checkpoints go; None without a write prefix."""
    return f"{write_prefixes[0]}{JOBS_FOLDER}" if write_prefixes else None
