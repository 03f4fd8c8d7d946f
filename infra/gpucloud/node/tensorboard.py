"""`serve tensorboard`: TensorBoard on port 6006, run by gpucloud-tensorboard.service (beside this
module) once the gate has passed, reading the group's S3 write prefix or a local directory.

TensorBoard reads `s3://` log directories itself when boto3 is importable (its gfile stand-in
without TensorFlow, tensorboard/compat/tensorflow_stub/io/gfile.py, S3FileSystem; read
2026-11-25): the image's boto3 serves, through the virtual environment's system site packages,
with the instance role's credentials.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable

from gpucloud.node.commands import CommandRunner
from gpucloud.node.services import (
    ServiceHost,
    base_environment,
    exec_as,
    install_service,
    service_host,
    service_settings,
)

PORT = 6006
VENV = "/opt/gpucloud/tensorboard"
REQUIREMENTS = ["tensorboard==2.20.0"]
REQUIRES_PYTHON = (3, 9)
"""tensorboard 2.20.0's Requires-Python, >=3.9 (the METADATA of its wheel on PyPI, read 2026-11-28)."""

log = logging.getLogger(__name__)


def tensorboard_argv(bin_dir: str | None, log_dir: str) -> list[str]:
    program = f"{bin_dir}/tensorboard" if bin_dir else (shutil.which("tensorboard") or "tensorboard")
    return [program, f"--logdir={log_dir}", "--host=0.0.0.0", f"--port={PORT}"]


def serve_tensorboard(run: CommandRunner, path: str | None = None, become: Callable[..., None] = exec_as,
                      venv: str = VENV, host: Callable[..., ServiceHost] = service_host) -> int:
    """Install (once), then become TensorBoard, as the image's login user. Returns only on failure."""
    settings = service_settings("tensorboard", *([path] if path else []))
    installed = install_service(run, "TensorBoard", settings, REQUIREMENTS, REQUIRES_PYTHON, venv, host, log)
    if isinstance(installed, int):
        return installed
    node, bin_dir = installed
    env = base_environment(settings["region"])
    become(node.user, tensorboard_argv(bin_dir, settings["log_dir"]), env, "/tmp")
    return 1
