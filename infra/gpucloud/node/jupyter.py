"""`serve jupyter`: JupyterLab on port 8888, run by gpucloud-jupyter.service (beside this module)
once the gate has passed, as the image's login user (`services.service_host`), in a home on the
persistent volume when the group has one, else in that user's own home.

Its token lives in SSM Parameter Store, a SecureString under the project key. The stack creates
the parameter holding a placeholder; at the first start a node makes a token and overwrites the
placeholder, and every later start (a new node, a reboot) reads the same token back. Nodes of a
group that start together all see the placeholder and all write: Parameter Store has no
conditional write, but it numbers every write (PutParameter returns the new version; API
reference, PutParameter and GetParameterHistory, read 2026-11-28), so the token is the first
version written after the last placeholder, whatever order the writes landed in. Each node reads
it from the parameter's history, and a node that finds the latest version holding another value
writes the token again, so the parameter ends holding it for `gpucloud connect` to print. To
change the token, put the placeholder back and restart the group's nodes. The token
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
    ServiceError,
    ServiceHost,
    base_environment,
    exec_as,
    install_service,
    prepare_directory,
    service_host,
    service_settings,
)

PORT = 8888
VENV = "/opt/gpucloud/jupyter"
REQUIREMENTS = ["jupyterlab==4.6.6"]
"""From PyPI at the first start (`install: pip`); `--system-site-packages` lets kernels import the
image's own packages."""
REQUIRES_PYTHON = (3, 10)
"""jupyterlab 4.6.6's Requires-Python, >=3.10 (the METADATA of its wheel on PyPI, read 2026-11-28):
more than AL2023's system Python 3.9."""
TOKEN_PLACEHOLDER = "unset"
"""What the stack writes (gpucloud.components.node_services.TOKEN_PLACEHOLDER: a test holds them equal)."""

log = logging.getLogger(__name__)


def jupyter_token(ssm: Any, parameter: str, key_id: str, attempts: int = 3) -> str:
    """The group's token: read back, or made and stored on the group's first start."""
    history = parameter_history(ssm, parameter)
    for _ in range(attempts):
        token = first_token(history)
        if token is not None:
            break
        ssm.put_parameter(Name=parameter, Value=secrets.token_urlsafe(32), Type="SecureString", KeyId=key_id,
                          Overwrite=True)
        log.info("wrote a new JupyterLab token to %s", parameter)
        history = parameter_history(ssm, parameter)
    else:
        raise ServiceError(f"{parameter} went back to {TOKEN_PLACEHOLDER!r} after each of {attempts} writes")
    if history[-1]["Value"] != token:
        # A later node's write landed after the first token: leave the parameter holding the token
        # every node runs with.
        ssm.put_parameter(Name=parameter, Value=token, Type="SecureString", KeyId=key_id, Overwrite=True)
        log.info("wrote the group's first JupyterLab token back to %s", parameter)
    return token


def parameter_history(ssm: Any, parameter: str) -> list[dict]:
    """Every version Parameter Store keeps of the parameter (the last 100), oldest first, decrypted."""
    versions: list[dict] = []
    request = {"Name": parameter, "WithDecryption": True, "MaxResults": 50}
    while True:
        page = ssm.get_parameter_history(**request)
        versions += page["Parameters"]
        if not page.get("NextToken"):
            return sorted(versions, key=lambda version: version["Version"])
        request["NextToken"] = page["NextToken"]


def first_token(history: list[dict]) -> str | None:
    """The first value written after the last placeholder; None while the placeholder is the latest;
    the latest value when the history keeps no placeholder (100 versions later)."""
    placeholders = [index for index, version in enumerate(history) if version["Value"] == TOKEN_PLACEHOLDER]
    if not placeholders:
        return history[-1]["Value"]
    following = placeholders[-1] + 1
    return history[following]["Value"] if following < len(history) else None


def jupyter_argv(bin_dir: str | None, root_dir: str) -> list[str]:
    program = f"{bin_dir}/jupyter-lab" if bin_dir else (shutil.which("jupyter-lab") or "jupyter-lab")
    return [program, "--no-browser", "--ip=0.0.0.0", f"--port={PORT}", f"--ServerApp.root_dir={root_dir}",
            "--ServerApp.port_retries=0"]


def serve_jupyter(run: CommandRunner, ssm_client: Callable[[str], Any], path: str | None = None,
                  become: Callable[..., None] = exec_as, prepare: Callable[[str, str], None] = prepare_directory,
                  venv: str = VENV, host: Callable[..., ServiceHost] = service_host) -> int:
    """Install (once), fetch the token, then become JupyterLab. Returns only on failure."""
    settings = service_settings("jupyter", *([path] if path else []))
    installed = install_service(run, "JupyterLab", settings, REQUIREMENTS, REQUIRES_PYTHON, venv, host, log)
    if isinstance(installed, int):
        return installed
    node, bin_dir = installed
    token = jupyter_token(ssm_client(settings["region"]), settings["token_parameter"], settings["kms_key_id"])
    root_dir = settings.get("root_dir") or node.home
    prepare(root_dir, node.user)
    # HOME on the notebooks' volume: `pip install --user` from a notebook, and JupyterLab's own
    # settings, outlive the node with the notebooks.
    env = {**base_environment(settings["region"]), "JUPYTER_TOKEN": token, "HOME": root_dir}
    become(node.user, jupyter_argv(bin_dir, root_dir), env, root_dir)
    return 1
