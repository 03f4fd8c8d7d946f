"""`serve jupyter`: JupyterLab on port 8888, run by gpucloud-jupyter.service (beside this module)
once the gate has passed, as the image's login user, in its home on the persistent volume when the
group has one.

Its token lives in SSM Parameter Store, a SecureString under the project key. The stack creates
the parameter holding a placeholder; at the first start a node makes a token and overwrites the
placeholder, and every later start (a new node, a reboot) reads the same token back. The token
reaches JupyterLab in its environment (JUPYTER_TOKEN), never on a command line, in a file or in
a log: JupyterLab prints `?token=...` rather than a token it was given, and shows a token only
when it generated one itself (jupyter_server, serverapp.py `display_url`, read 2026-11-25).
"""

from __future__ import annotations

import logging
import secrets
import shutil
from collections.abc import Callable
from typing import Any

from gpucloud.node.commands import CommandRunner
from gpucloud.node.services import (
    SERVICE_USER,
    ServiceError,
    base_environment,
    exec_as,
    install_venv,
    prepare_directory,
    service_settings,
)

PORT = 8888
VENV = "/opt/gpucloud/jupyter"
REQUIREMENTS = ["jupyterlab==4.6.6"]
"""From PyPI at the first start (`install: pip`); `--system-site-packages` lets kernels import the
image's own packages."""
TOKEN_PLACEHOLDER = "unset"
"""What the stack writes (gpucloud.components.node_services.TOKEN_PLACEHOLDER: a test holds them equal)."""

log = logging.getLogger(__name__)


def jupyter_token(ssm: Any, parameter: str, key_id: str) -> str:
    """The group's token: read back, or made and stored on the first start."""
    value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    if value != TOKEN_PLACEHOLDER:
        return value
    token = secrets.token_urlsafe(32)
    ssm.put_parameter(Name=parameter, Value=token, Type="SecureString", KeyId=key_id, Overwrite=True)
    log.info("stored a new JupyterLab token in %s", parameter)
    return token


def jupyter_argv(bin_dir: str | None, root_dir: str) -> list[str]:
    program = f"{bin_dir}/jupyter-lab" if bin_dir else (shutil.which("jupyter-lab") or "jupyter-lab")
    return [program, "--no-browser", "--ip=0.0.0.0", f"--port={PORT}", f"--ServerApp.root_dir={root_dir}",
            "--ServerApp.port_retries=0"]


def serve_jupyter(run: CommandRunner, ssm_client: Callable[[str], Any], path: str | None = None,
                  become: Callable[..., None] = exec_as, prepare: Callable[[str, str], None] = prepare_directory,
                  venv: str = VENV) -> int:
    """Install (once), fetch the token, then become JupyterLab. Returns only on failure."""
    settings = service_settings("jupyter", *([path] if path else []))
    try:
        bin_dir = install_venv(run, venv, REQUIREMENTS) if settings["install"] == "pip" else None
    except ServiceError as error:
        log.error("cannot install JupyterLab: %s", error)
        return 1
    token = jupyter_token(ssm_client(settings["region"]), settings["token_parameter"], settings["kms_key_id"])
    root_dir = settings["root_dir"]
    prepare(root_dir, SERVICE_USER)
    # HOME on the notebooks' volume: `pip install --user` from a notebook, and JupyterLab's own
    # settings, outlive the node with the notebooks.
    env = {**base_environment(settings["region"]), "JUPYTER_TOKEN": token, "HOME": root_dir}
    become(SERVICE_USER, jupyter_argv(bin_dir, root_dir), env, root_dir)
    return 1
