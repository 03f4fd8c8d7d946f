"""A test's concrete names turned back into the placeholders of gpucloud/data/access_calls.json.

The values come from what the calling code holds (a node's config, a launcher's JobSpec, a job of
`gpucloud run`, a stack's settings): the bucket a test made is `${dataBucket}`, its group's Auto
Scaling group `gpu-cloud-${nameBase}-${group}`; AWS's generated ids and moto's account by their
shape. tests/access_recording.py applies them to every recorded call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ACCOUNT = "123456789012"
"""moto's account, every test's."""
_IDS = (
    (re.compile(r"\bi-[0-9a-f]{8,17}\b"), "${instanceId}"),
    (re.compile(r"\bvol-[0-9a-f]{8,17}\b"), "${volumeId}"),
    (re.compile(r"\bcr-[0-9a-f]{17}\b"), "${capacityReservationId}"),
    (re.compile(r"arn:aws:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]+"), "${keyArn}"),
    # A secret `secretEnv` names, by its whole ARN (the name, a hyphen and six characters).
    (re.compile(r"arn:aws:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}"), "${secretArn}"),
    (re.compile(r"agent/gpucloud-node-[0-9a-f]{64}\.zip"), "${agentBundleKey}"),
    # A role session's aws:userid, `role-id:caller-specified-role-name` (IAM user guide, "AWS global
    # condition context keys": aws:userid), and a Session Manager session, `<caller's name>-<17 hex>`.
    (re.compile(r"\bAROA[A-Z0-9]{17}:[\w+=,.@-]+"), "${userId}"),
    (re.compile(r"(:session/)[\w+=,.@-]+-[0-9a-f]{17}\b"), r"\1${sessionId}"),
    (re.compile(r"gpu-cloud/[^/:${}]+/[^/:${}]+/jupyter-token"), "gpu-cloud/${nameBase}/${group}/jupyter-token"),
    # The job supervisor's state machine and its executions, one per job id (naming.job_supervisor_name).
    (re.compile(r"arn:aws:states:[a-z0-9-]+:(\d{12}):(stateMachine|execution):gpu-cloud-[^:]+-jobs\b"),
     r"arn:aws:states:${region}:\1:\2:gpu-cloud-${nameBase}-jobs"),
    (re.compile(r"(:execution:gpu-cloud-\$\{nameBase\}-jobs:)[^:\s\"]+"), r"\1${job}"),
    # A job's marker, named by its job id (documents/job_supervisor_continuation.marker_key).
    (re.compile(r"(jobs/groups/gpu-cloud-\$\{nameBase\}-\$\{group\}/)[^/\s\"]+\.json"), r"\1${job}.json"),
)
_JOB_KEY = re.compile(r"^(?:\$\{writePrefix\}|[^$]*?)jobs/(?!groups/)(?:[^/$]+|\$\{job\})/")


def values_of(candidate: Any) -> dict[str, str]:
    """Concrete value -> placeholder expression, from what actor code holds: a node's config (its
    dataclass or the bootstrap stub's dict), a launcher's JobSpec, a job of `gpucloud run`, a stack's
    settings."""
    fields = candidate if isinstance(candidate, Mapping) else getattr(candidate, "__dict__", {})
    found: dict[str, str] = {}
    if hasattr(candidate, "name_base") and hasattr(candidate, "config"):  # StackSettings
        found |= _settings_values(candidate)
    if fields.get("group_name"):
        found[str(fields["group_name"])] = "gpu-cloud-${nameBase}-${group}"
    for name, placeholder in (("checkpoint_bucket", "${dataBucket}"), ("agent_bucket", "${artifactsBucket}"),
                              ("agent_key", "${agentBundleKey}"), ("job_id", "${job}")):
        if isinstance(fields.get(name), str) and fields[name]:
            found[fields[name]] = placeholder
    if isinstance(fields.get("checkpoint_prefix"), str) and fields["checkpoint_prefix"].strip("/"):
        found[fields["checkpoint_prefix"].strip("/") + "/"] = "${writePrefix}"
    if isinstance(fields.get("checkpoint_uri"), str) and fields["checkpoint_uri"].startswith("s3://"):
        found[fields["checkpoint_uri"][5:].split("/", 1)[0]] = "${dataBucket}"
    return found | _weights_values(fields.get("weights"))


def _weights_values(weights: Any) -> dict[str, str]:
    """A container's weights (gpucloud.node.containers.stage_weights): the stack's rules keep them in
    the data bucket under a read prefix (config/rules/cold_start.py), so their prefix stands for a read prefix,
    the unit the node role's grant is written in."""
    if not isinstance(weights, Mapping) or not weights.get("bucket"):
        return {}
    found = {str(weights["bucket"]): "${dataBucket}"}
    if str(weights.get("prefix") or "").strip("/"):
        found[str(weights["prefix"])] = "${readPrefix}"
    return found


def _uri_values(uri: Any) -> dict[str, str]:
    """A checkpoint URI node code works with: a job's (`...jobs/<id>/`, see `under_jobs`), or the
    node's own drain location, `<write prefix>checkpoints/<Auto Scaling group>/<instance>/`
    (gpucloud.node.lifecycle.checkpoint_uri)."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        return {}
    bucket, _, key = uri[5:].partition("/")
    found = {bucket: "${dataBucket}"}
    if key and "jobs/" not in key:
        found[key] = "${writePrefix}checkpoints/gpu-cloud-${nameBase}-${group}/${instanceId}/"
    return found


def _settings_values(settings) -> dict[str, str]:
    from gpucloud import naming

    base = settings.name_base
    found = {
        naming.job_document_name(base): "gpu-cloud-${nameBase}-run",
        naming.job_log_group_name(base): "/gpu-cloud/${nameBase}/jobs",
        naming.job_supervisor_name(base): "gpu-cloud-${nameBase}-jobs",
        naming.job_supervisor_role_name(base): "gpu-cloud-${nameBase}-jobs-role",
        f"arn:aws:sns:{settings.region}:{ACCOUNT}:{naming.alerts_topic_name(base)}": "${topicArn}",
        f"{naming.job_supervisor_name(base)}-events": "gpu-cloud-${nameBase}-jobs-events",  # components/job_supervisor.py
        naming.artifacts_bucket_name(base, ACCOUNT): "${artifactsBucket}",
        naming.instance_role_name(base): "gpu-cloud-${nameBase}-node",
        naming.backup_role_name(base): "gpu-cloud-${nameBase}-backup",
        naming.flow_logs_role_name(base): "gpu-cloud-${nameBase}-flow-logs",
        f"gpu-cloud-{base}-grafana": "gpu-cloud-${nameBase}-grafana",  # components/grafana_workspace.py
    }
    for group in settings.config.groups:
        found[naming.autoscaling_group_name(base, group.name)] = "gpu-cloud-${nameBase}-${group}"
        found[naming.jupyter_token_parameter_name(base, group.name)] = "/gpu-cloud/${nameBase}/${group}/jupyter-token"
    if settings.config.data:
        found[settings.config.data.bucket] = "${dataBucket}"
        for prefix in settings.config.data.write_prefixes:
            found[prefix] = "${writePrefix}"
    return found


_HARVESTED = ("config", "spec", "settings", "job", "container")


def values_in_frames(frame, code: tuple[str, ...]) -> dict[str, str]:
    """The values of every frame of actor code (`code`: path prefixes) on the stack, innermost last."""
    found: dict[str, str] = {}
    while frame is not None:
        if frame.f_code.co_filename.startswith(code):
            for name in _HARVESTED:
                if name in frame.f_locals:
                    found = values_of(frame.f_locals[name]) | found
            found = _uri_values(frame.f_locals.get("uri")) | found
            found = _secret_parameters(frame.f_locals.get("secret_env")) | found
        frame = frame.f_back
    return found


def _secret_parameters(secret_env: Any) -> dict[str, str]:
    """The SSM parameters a container's `secretEnv` names (gpucloud.node.containers.read_secrets),
    as their ARNs hold them, without a hierarchy's leading `/`."""
    if not isinstance(secret_env, Mapping):
        return {}
    return {str(reference).removeprefix("ssm:").lstrip("/"): "${secretParameter}"
            for reference in secret_env.values() if str(reference).startswith("ssm:")}


def placeholders(text: str, values: Mapping[str, str]) -> str:
    """The text with the test's concrete values as placeholders: the longest value first, then
    AWS's generated ids and the account."""
    for concrete in sorted(values, key=len, reverse=True):
        # Whole names only: a bucket a test calls `b` is not every b in an ARN.
        after = r"(?![A-Za-z0-9_.-])" if concrete[-1:].isalnum() else ""
        text = re.sub(rf"(?<![A-Za-z0-9_.$-]){re.escape(concrete)}{after}", lambda match: values[concrete], text)
    for pattern, placeholder in _IDS:
        text = pattern.sub(placeholder, text)
    return text.replace(ACCOUNT, "${account}").replace("arn:aws:", "arn:${partition}:")


def under_jobs(text: str) -> str:
    """A data-bucket key (or key prefix) in a job's folder: what comes before `jobs/<id>/` is the
    write prefix the job commands put it under (gpucloud.naming.JOBS_FOLDER)."""
    head, bucket, key = text.rpartition("${dataBucket}/")
    return head + bucket + _JOB_KEY.sub("${writePrefix}jobs/${job}/", key, count=1)
