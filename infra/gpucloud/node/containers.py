"""`serve container NAME`: one container service, run by gpucloud-container@NAME.service (beside
this module) once the gate has passed, with Docker and the NVIDIA container runtime that the
default AMI carries.

The container runs in the foreground on Docker's default bridge network, its port published on
the node (the launch template's metadata hop limit is 2 for such groups, so it reaches IMDS and
the instance role's credentials). Environment values reach Docker through its own environment
(`--env NAME` takes the value from there), never on a command line. So do the secrets of
`secretEnv`, read with the node role at each start (`read_secrets`): they are never written to a
file, and this process's environment, /proc/<pid>/environ, is readable by root and its own user
only (proc(5)); the ECR token is the one thing on disk, in a root-only directory. This process polls the
health check and, past the start period, ends the container after `unhealthy_threshold` failures
in a row and exits 1: systemd's Restart= (the restart policy, a drop-in `services` writes) decides
whether it comes back.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpucloud.node import boot_phases, weights
from gpucloud.node.commands import CommandRunner
from gpucloud.node.services import ServiceError, base_environment, load_services, SERVICES_PATH

CONTAINER_PREFIX = "gpucloud-"
PULL_TIMEOUT_S = 3600
"""Model server images run to tens of GB."""
EXIT_UNHEALTHY = 1
DOCKER_CONFIG_DIR = "/run/gpucloud/docker/{}"

log = logging.getLogger(__name__)


def container_settings(name: str, path: str = SERVICES_PATH) -> dict[str, Any]:
    document = load_services(path) or {}
    for container in document.get("containers") or ():
        if container["name"] == name:
            return {"region": document.get("region"), **container}
    raise ServiceError(f"{path} names no container {name!r}")


_ECR_REGISTRY = re.compile(r"[0-9]{12}\.dkr\.ecr(?:-fips)?\.([a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.amazonaws\.com(?:\.cn)?")
"""A private ECR registry's host, `<account>.dkr.ecr.<region>.amazonaws.com` (ECR user guide,
"Private registry concepts"; read 2026-11-25)."""


def registry_of(image: str) -> str:
    return image.split("/", 1)[0]


def ecr_region(image: str) -> str | None:
    """The region of the image's private ECR registry; None for an image from any other registry."""
    match = _ECR_REGISTRY.fullmatch(registry_of(image)) if "/" in image else None
    return match.group(1) if match else None


def ecr_login(ecr: Any, image: str, config_dir: str) -> None:
    """Docker credentials for the image's ECR registry, good for 12 hours: GetAuthorizationToken's
    token is already base64 of `AWS:<password>`, the `auth` Docker's config.json keeps (ECR user
    guide, "Private registry authentication", read 2026-11-25). It goes into a root-only config
    directory of this service's own (`docker --config`), never onto a command line."""
    token = ecr.get_authorization_token()["authorizationData"][0]["authorizationToken"]
    directory = Path(config_dir)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = directory / "config.json"
    temporary = directory / ".config.json.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"auths": {registry_of(image): {"auth": token}}}, handle)
    os.replace(temporary, target)


def pull_image(run: CommandRunner, image: str, region: str | None, ecr_client: Callable[[str], Any],
               config_dir: str) -> None:
    """`docker pull` the image, logged in to its ECR registry first when `region` names one (the
    login's config directory serves this pull only). Raises ServiceError saying what failed."""
    from botocore.exceptions import BotoCoreError, ClientError

    pull = ["docker", "pull", "--quiet", image]
    if region:
        try:
            ecr_login(ecr_client(region), image, config_dir)
        except (BotoCoreError, ClientError) as error:
            raise ServiceError(f"ECR login for {image}: {error}") from error
        pull[1:1] = ["--config", config_dir]
    pulled = run(pull, PULL_TIMEOUT_S)
    if not pulled.ok:
        raise ServiceError(f"docker pull {image}: {pulled.describe_failure(PULL_TIMEOUT_S)}")


def read_secrets(secret_env: Mapping[str, str], client: Callable[[str], Any]) -> dict[str, str]:
    """name -> value of each `secretEnv` reference, `ssm:<parameter>` (a SecureString, decrypted)
    or `secretsmanager:<name or ARN>` (its SecretString). Raises ServiceError naming the variable and
    its reference, never a value."""
    from botocore.exceptions import BotoCoreError, ClientError

    values: dict[str, str] = {}
    for name, reference in sorted(secret_env.items()):
        source, _, identifier = reference.partition(":")
        try:
            if source == "ssm":
                values[name] = client("ssm").get_parameter(Name=identifier, WithDecryption=True)["Parameter"]["Value"]
                continue
            secret = client("secretsmanager").get_secret_value(SecretId=identifier)
        except (BotoCoreError, ClientError) as error:
            raise ServiceError(f"secretEnv {name} ({reference}): {error}") from error
        if "SecretString" not in secret:
            raise ServiceError(f"secretEnv {name} ({reference}) is a binary secret: store it as a string")
        values[name] = secret["SecretString"]
    return values


def docker_run_argv(container: Mapping[str, Any]) -> list[str]:
    """`docker run` for the service: its GPUs, port, environment names and command, no shell."""
    argv = ["docker", "run", "--rm", "--name", CONTAINER_PREFIX + container["name"], "--init"]
    gpus = container.get("gpus")
    if gpus == "all":
        argv += ["--gpus", "all"]
    elif gpus:
        argv += ["--gpus", str(gpus)]
    if container.get("port"):
        argv += ["--publish", f"{container['port']}:{container['port']}"]
    for name in sorted({*(container.get("env") or {}), *(container.get("secret_env") or {})}):
        argv += ["--env", name]
    argv += ["--env", "AWS_REGION", "--env", "AWS_DEFAULT_REGION", *weights.volume_arguments(container)]
    argv.append(container["image"])
    argv += list(container.get("command") or ())
    return argv


def container_environment(container: Mapping[str, Any], region: str | None) -> dict[str, str]:
    found = {**base_environment(region), **(container.get("env") or {})}
    if container.get("weights"):
        found["GPUCLOUD_WEIGHTS_DIR"] = weights.CONTAINER_PATH
    return found


def healthy(port: int, path: str, timeout_s: float) -> bool:
    """An HTTP GET on the node's published port answers 2xx or 3xx."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout_s) as response:
            return 200 <= response.status < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False


def supervise(process: Any, container: Mapping[str, Any], probe: Callable[[int, str, float], bool] = healthy,
              clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
              stop: Callable[[], None] | None = None) -> int:
    """Wait on the container, probing its health check; the container's exit status, or
    EXIT_UNHEALTHY after it was stopped for failing `unhealthy_threshold` checks in a row."""
    health = container.get("health")
    if not health:
        return process.wait()
    started_at = time.time()
    boot_phases.begin("healthy", started_at, container["name"])
    started = clock()
    failures = 0
    answered = False
    while process.poll() is None:
        sleep(health["interval_seconds"])
        if process.poll() is not None:
            break
        if probe(container["port"], health["path"], health["timeout_seconds"]):
            if not answered:
                answered = True
                boot_phases.note("healthy", started_at, time.time(), container["name"])
            failures = 0
            continue
        if clock() - started < health["start_period_seconds"]:
            continue
        failures += 1
        if failures >= health["unhealthy_threshold"]:
            log.error("%s failed %d health checks in a row on port %d%s: stopping it", container["name"],
                      failures, container["port"], health["path"])
            (stop or process.terminate)()
            process.wait()
            return EXIT_UNHEALTHY
    return process.returncode


def serve_container(name: str, run: CommandRunner, ecr_client: Callable[[str], Any], path: str = SERVICES_PATH,
                    popen: Callable[..., Any] = subprocess.Popen, config_dir: str | None = None,
                    aws_client: Callable[[str, str], Any] | None = None) -> int:
    """Log in (ECR), pull, read the secrets (`aws_client(service, region)`), clear a leftover
    container of the same name, then run and supervise it."""
    container = container_settings(name, path)
    region = container["region"]
    config_dir = config_dir or DOCKER_CONFIG_DIR.format(name)
    try:
        with boot_phases.timed("pull", name):
            pull_image(run, container["image"], container.get("ecr_region"), ecr_client, config_dir)
        stage_weights(container, lambda service: _client(aws_client, service, region))
        secrets = read_secrets(container.get("secret_env") or {},
                               lambda service: _client(aws_client, service, region))
    except ServiceError as error:
        log.error("%s", error)
        return 1
    run(["docker", "rm", "--force", CONTAINER_PREFIX + name], 60)
    process = popen(docker_run_argv(container), env={**container_environment(container, region), **secrets})
    docker_stop = lambda: run(["docker", "stop", "--time", "30", CONTAINER_PREFIX + name], 60)  # noqa: E731
    return supervise(process, container, stop=docker_stop)


def stage_weights(container: Mapping[str, Any], client: Callable[[str], Any]) -> int:
    """Copy the weights to /scratch when that is their tier (the other tiers are mounts already);
    the bytes copied."""
    found = container.get("weights")
    if not found or found.get("path"):
        return 0
    from botocore.exceptions import BotoCoreError, ClientError

    with boot_phases.timed("weights", container["name"]):
        try:
            copied = weights.stage(client("s3"), found["bucket"], found["prefix"], Path(weights.weights_path(container)))
        except (BotoCoreError, ClientError, OSError) as error:
            raise ServiceError(f"weights s3://{found['bucket']}/{found['prefix']}: {error}") from error
    log.info("%s: weights copied to %s (%d bytes new)", container["name"], weights.weights_path(container), copied)
    return copied


def _client(aws_client: Callable[[str, str], Any] | None, service: str, region: str | None) -> Any:
    if aws_client is None:
        raise ServiceError(f"secretEnv needs an AWS client for {service}")
    return aws_client(service, region or "")
