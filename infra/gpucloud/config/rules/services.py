"""Rules between a group's services (`groups[].services`) and the rest of the stack: where JupyterLab
and TensorBoard come from, what TensorBoard may read, and which registries and secrets the nodes
reach without the internet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucloud.config.errors import NAMESPACE

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig


def service_problems(config: StackConfig, region: str) -> list[tuple[str, str]]:
    """Rules that tie a group's services to the rest of the stack, each named by the key to change."""
    problems: list[tuple[str, str]] = []
    offline = config.network.egress == "endpointsOnly"
    for index, group in enumerate(config.groups):
        services = group.services
        key = f"{NAMESPACE}:groups[{index}].services"
        for name, service in (("jupyter", services.jupyter), ("tensorboard", services.tensorboard)):
            if service is None:
                continue
            if service.install == "image" and group.ami_id is None:
                problems.append((f"{key}.{name}.install", (
                    f"image says the AMI has {name}, but the group runs the default AMI, which carries none: give "
                    "amiId (an image you built with it) or use install: pip")))
            if service.install == "pip" and offline:
                problems.append((f"{key}.{name}.install", (
                    f"pip installs {name} from PyPI, which network.egress endpointsOnly cannot reach, and the default "
                    "AMI lacks it: build an AMI with it (amiId, install: image) or use egress: nat")))
        if services.tensorboard is not None:
            problem = _log_dir_problem(config, services.tensorboard.log_dir)
            if problem:
                problems.append((f"{key}.tensorboard.logDir", problem))
        for number, container in enumerate(services.containers):
            image_key = f"{key}.containers[{number}].image"
            ecr = container.ecr
            if offline and ecr is None:
                problems.append((image_key, (
                    f"{container.image} comes from a registry on the internet, which network.egress endpointsOnly cannot "
                    f"reach: push it to this account's ECR in {region} and name it there, or use egress: nat")))
            elif offline and ecr["region"] != region:
                problems.append((image_key, (
                    f"{container.image} is in ECR in {ecr['region']}, and the stack's ECR endpoints reach only "
                    f"{region}: replicate it to {region} or use egress: nat")))
            for name, reference in sorted(container.secret_env.items()):
                arn_region = reference.split(":")[4] if reference.startswith("secretsmanager:arn:") else region
                if arn_region != region:
                    problems.append((f"{key}.containers[{number}].secretEnv.{name}", (
                        f"{reference} is a secret in {arn_region}, and the node reads secrets in the stack's region "
                        f"{region}: replicate it to {region} (Secrets Manager replica secrets)")))
    return problems


def _log_dir_problem(config: StackConfig, log_dir: str | None) -> str | None:
    data = config.data
    if log_dir is None:
        if data is None or not data.write_prefixes:
            return ("has no default without data.writePrefixes (TensorBoard reads the group's write prefix): "
                    "give logDir, s3://<data.bucket>/<prefix>/ or a local path")
        return None
    if not log_dir.startswith("s3://"):
        return None
    bucket, _, key = log_dir.removeprefix("s3://").partition("/")
    granted = [*data.read_prefixes, *data.write_prefixes] if data else []
    if data is None or bucket != data.bucket or not any(f"{key.rstrip('/')}/".startswith(prefix) for prefix in granted):
        return (f"{log_dir} is outside what the node role may read: use s3://<data.bucket>/ under one of "
                "data.readPrefixes or data.writePrefixes")
    return None
