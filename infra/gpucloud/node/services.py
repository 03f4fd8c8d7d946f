"""`services`: start what the group serves (JupyterLab, TensorBoard, containers) once the health
gate has passed, and the pieces the service commands share.

The systemd unit of each service ships beside its module (gpucloud-jupyter.service beside
jupyter.py, ...); the agent bundle installs them all, and none is enabled: only this command,
run by gpucloud-node-services.service (which Requires= and follows the gate), starts those the
group's /etc/gpucloud/services.json names. A node of a group that serves nothing has no such file,
and the command does nothing.

JupyterLab and TensorBoard run as the image's login user, with a Python the pinned release takes,
both chosen per image family (`image_family`, `service_python`): the default image is Ubuntu 22.04,
and a group's own image (amiId) may be Amazon Linux 2023, whose system Python stays 3.9 ("Python in
AL2023", AL2023 user guide, read 2026-11-28). Any other family, or no Python new enough, stops the
service with the reason and exit status UNSUPPORTED_IMAGE, which its unit does not restart.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucloud.node.commands import CommandRunner
from gpucloud.node.packages import Installer

SERVICES_PATH = "/etc/gpucloud/services.json"
SYSTEMD_RUNTIME_DIR = "/run/systemd/system"
JUPYTER_UNIT = "gpucloud-jupyter.service"
TENSORBOARD_UNIT = "gpucloud-tensorboard.service"
CONTAINER_UNIT = "gpucloud-container@{}.service"
OS_RELEASE_PATH = "/etc/os-release"
SYSTEM_PYTHON = "/usr/bin/python3"
UNSUPPORTED_IMAGE = 78
"""Exit status of a service that cannot run on this image (sysexits' EX_CONFIG): its unit's
RestartPreventExitStatus, so systemd does not retry what cannot succeed."""
INSTALL_TIMEOUT_S = 1800
RESTART = {"always": "always", "on-failure": "on-failure", "no": "no"}
"""Container restart policies, as systemd's Restart= spells them."""

log = logging.getLogger(__name__)


class ServiceError(RuntimeError):
    """A service cannot start: a missing install, an unreadable token, a bad services file."""


class UnsupportedImage(ServiceError):
    """The image is of a family the services do not know, or has no Python the service takes."""


@dataclass(frozen=True)
class ImageFamily:
    name: str
    user: str
    """The image's default login user, which JupyterLab and TensorBoard run as (not root): ubuntu on
    Ubuntu AMIs, ec2-user on AL2023 (EC2 user guide, "Manage system users on your Amazon EC2 Linux
    instance", default user names; read 2026-11-28)."""


IMAGE_FAMILIES = {"ubuntu": ImageFamily("Ubuntu", "ubuntu"), "amzn 2023": ImageFamily("Amazon Linux 2023", "ec2-user")}
"""By /etc/os-release: `ID` for Ubuntu, `ID VERSION_ID` for Amazon Linux (AL2's Python 3.7 cannot
run the agent)."""


def image_family(path: str = OS_RELEASE_PATH) -> ImageFamily:
    """The family of the image this node runs, from /etc/os-release (os-release(5))."""
    fields: dict[str, str] = {}
    try:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            fields[key.strip()] = value.strip().strip('"')
    except OSError as error:
        raise UnsupportedImage(f"cannot tell the image's family: {error}") from error
    family = IMAGE_FAMILIES.get(fields.get("ID", "")) or IMAGE_FAMILIES.get(f"{fields.get('ID')} {fields.get('VERSION_ID')}")
    if family is None:
        raise UnsupportedImage(f"services run on Ubuntu and Amazon Linux 2023 images, and this one is "
                               f"{fields.get('PRETTY_NAME') or fields.get('ID') or 'of no known family'}")
    return family


@dataclass(frozen=True)
class ServiceHost:
    """What a service runs as on this node, and the Python that makes its virtual environment."""

    user: str
    home: str
    python: str


def service_host(service: str, minimum: tuple[int, int] | None, os_release: str = OS_RELEASE_PATH,
                 system: tuple[int, ...] = tuple(sys.version_info[:2]), exists: Callable[[str], bool] = os.path.exists,
                 home_of: Callable[[str], str] = lambda user: pwd.getpwnam(user).pw_dir) -> ServiceHost:
    """The image family's login user and its home, and a Python of at least `minimum` for `service`
    (None: the image has the service itself, `install: image`)."""
    user = image_family(os_release).user
    python = service_python(service, minimum, system, exists) if minimum else SYSTEM_PYTHON
    return ServiceHost(user, home_of(user), python)


def service_python(service: str, minimum: tuple[int, int], system: tuple[int, ...] = tuple(sys.version_info[:2]),
                   exists: Callable[[str], bool] = os.path.exists) -> str:
    """The interpreter for a service's virtual environment: the system Python (the one the agent runs
    on) when new enough, else the newest /usr/bin/python3.N of at least `minimum` (AL2023 ships 3.11
    and later beside its 3.9)."""
    if tuple(system) >= minimum:
        return SYSTEM_PYTHON
    for minor in range(20, minimum[1] - 1, -1):
        candidate = f"/usr/bin/python3.{minor}"
        if exists(candidate):
            return candidate
    raise UnsupportedImage(
        f"{service} needs Python {minimum[0]}.{minimum[1]} or later, and this image has {SYSTEM_PYTHON} "
        f"{system[0]}.{system[1]} and no /usr/bin/python3.N from {minimum[0]}.{minimum[1]} on: add one to the image "
        f"(on Amazon Linux 2023, dnf install python3.11), or use install: image with an image that has {service}")


def load_services(path: str = SERVICES_PATH) -> dict[str, Any] | None:
    """The group's services document, or None on a node of a group that serves nothing."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise ServiceError(f"cannot read {path}: {error}") from error
    if not isinstance(document, dict):
        raise ServiceError(f"{path} must hold a JSON object")
    return document


def units_to_start(document: Mapping[str, Any]) -> list[str]:
    units = []
    if document.get("jupyter"):
        units.append(JUPYTER_UNIT)
    if document.get("tensorboard"):
        units.append(TENSORBOARD_UNIT)
    units += [CONTAINER_UNIT.format(container["name"]) for container in document.get("containers") or ()]
    return units


def restart_drop_in(container: Mapping[str, Any]) -> str:
    """The per-container drop-in that sets systemd's Restart= from the container's restart policy."""
    return f"[Service]\nRestart={RESTART[container['restart']]}\n"


def start_services(run: CommandRunner, path: str = SERVICES_PATH, runtime_dir: str = SYSTEMD_RUNTIME_DIR) -> int:
    """Start the group's services (the gate has passed: this runs after it). 0 when all started."""
    document = load_services(path)
    if document is None:
        log.info("this group serves nothing")
        return 0
    for container in document.get("containers") or ():
        drop_in = Path(runtime_dir) / f"{CONTAINER_UNIT.format(container['name'])}.d" / "restart.conf"
        drop_in.parent.mkdir(parents=True, exist_ok=True)
        drop_in.write_text(restart_drop_in(container), encoding="utf-8")
    failed = 0
    if document.get("preload"):
        # Runs on beside the services; one node of the stack does the work (gpucloud.node.preload).
        run(["systemd-run", "--unit=gpucloud-fsx-preload", "--collect", sys.executable, "-m", "gpucloud.node", "preload"], 60)
    for argv in (["systemctl", "daemon-reload"], ["systemctl", "start", "--no-block", *units_to_start(document)]):
        result = run(argv, 120)
        if not result.ok:
            failed += 1
            log.error("%s: %s", " ".join(argv), result.describe_failure(120))
    return 1 if failed else 0


def service_settings(name: str, path: str = SERVICES_PATH) -> dict[str, Any]:
    document = load_services(path)
    if not document or not document.get(name):
        raise ServiceError(f"{path} asks for no {name}")
    return {"region": document.get("region"), **document[name]}


def install_venv(run: CommandRunner, directory: str, requirements: list[str], python: str = SYSTEM_PYTHON,
                 installer: Installer | None = None) -> str:
    """A virtual environment at `directory` with the pinned requirements (once: an existing one is
    kept), seeing the image's own packages (boto3); returns its bin directory. Where the image lacks
    python3-venv (the default image does: data/image_software.json), it is installed first."""
    bin_dir = f"{directory}/bin"
    marker = Path(directory) / ".gpucloud-installed"
    wanted = "\n".join(requirements) + "\n"
    if marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        return bin_dir
    create = [python, "-m", "venv", "--system-site-packages", "--clear", directory]
    pip = [f"{bin_dir}/python", "-m", "pip", "install", "--quiet", "--no-input", *requirements]
    created = run(create, INSTALL_TIMEOUT_S)
    if not created.ok:
        # Debian and Ubuntu leave ensurepip out of the system Python until python3-venv is installed.
        failure = (installer or Installer(run)).install(["python3-venv"])
        if failure:
            raise ServiceError(f"{' '.join(create[:4])}: {created.describe_failure(INSTALL_TIMEOUT_S)}, and python3-venv, "
                               f"which it needs, could not be installed: {failure}")
        created = run(create, INSTALL_TIMEOUT_S)
    for argv, result in ((create, created), (pip, None)):
        result = result or run(argv, INSTALL_TIMEOUT_S)
        if not result.ok:
            raise ServiceError(f"{' '.join(argv[:4])}: {result.describe_failure(INSTALL_TIMEOUT_S)}")
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(wanted, encoding="utf-8")
    return bin_dir


def install_service(run: CommandRunner, title: str, settings: dict[str, Any], requirements: list[str],
                    requires_python: tuple[int, int], venv: str, host: Callable[..., ServiceHost],
                    logger: logging.Logger) -> tuple[ServiceHost, str | None] | int:
    """The service's host and its virtual environment's bin directory (None with `install: image`),
    or, logged by the service's own logger, the exit status to stop with: UNSUPPORTED_IMAGE where
    the image cannot run it, 1 where the install failed."""
    try:
        pip = settings["install"] == "pip"
        node = host(title, requires_python if pip else None)
        bin_dir = install_venv(run, venv, requirements, node.python) if pip else None
    except UnsupportedImage as error:
        logger.error("%s cannot run on this image: %s", title, error)
        return UNSUPPORTED_IMAGE
    except ServiceError as error:
        logger.error("cannot install %s: %s", title, error)
        return 1
    return node, bin_dir


def exec_as(user: str, argv: list[str], env: Mapping[str, str], cwd: str) -> None:
    """Become `user` and replace this process with argv (systemd keeps watching the same pid); HOME
    is the user's own unless `env` sets it."""
    account = pwd.getpwnam(user)
    os.chdir(cwd)
    if os.getuid() == 0:
        os.initgroups(user, account.pw_gid)
        os.setgid(account.pw_gid)
        os.setuid(account.pw_uid)
    os.execve(argv[0], argv, {"HOME": account.pw_dir, **env, "USER": user, "LOGNAME": user})


def prepare_directory(path: str, user: str) -> None:
    """Create `path` owned by `user` (a fresh home on the persistent volume); an existing one is kept."""
    account = pwd.getpwnam(user)
    target = Path(path)
    if not target.exists():
        target.mkdir(parents=True)
        os.chown(target, account.pw_uid, account.pw_gid)


def base_environment(region: str | None) -> dict[str, str]:
    """What a service's process sees: a plain PATH, the region for AWS SDKs; credentials come from
    the instance role through IMDS, and every GPU is visible."""
    env = {"PATH": "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    if region:
        env.update(AWS_REGION=region, AWS_DEFAULT_REGION=region)
    return env
