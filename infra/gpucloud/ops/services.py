"""What `gpucloud connect` tells the user about the service behind the forwarded port: where to open
it, and for JupyterLab how to read its token (kept in SSM Parameter Store, never printed here)."""

from __future__ import annotations

import shlex

from gpucloud.config import StackSettings
from gpucloud.config.services import JUPYTER_PORT, TENSORBOARD_PORT
from gpucloud.naming import jupyter_token_parameter_name


def token_command(settings: StackSettings, group: str) -> list[str]:
    """The AWS CLI call that prints the group's JupyterLab token (needs ssm:GetParameter on it and
    kms:Decrypt on the project key)."""
    return ["aws", "ssm", "get-parameter", "--name", jupyter_token_parameter_name(settings.name_base, group),
            "--with-decryption", "--query", "Parameter.Value", "--output", "text", "--region", settings.region]


def service_hint(settings: StackSettings, group: str, remote_port: int, local_port: int) -> str | None:
    """A line or two for the user, or None where the port is no service of the group's."""
    config = next(candidate for candidate in settings.config.groups if candidate.name == group)
    services = config.services
    if remote_port == JUPYTER_PORT:
        if services.jupyter is None:
            return f"group {group} runs no JupyterLab: add services.jupyter to it in the stack file"
        return (f"JupyterLab: http://localhost:{local_port}/lab (it may take minutes after the node's first start); "
                f"its token: {shlex.join(token_command(settings, group))}")
    if remote_port == TENSORBOARD_PORT:
        if services.tensorboard is None:
            return f"group {group} runs no TensorBoard: add services.tensorboard to it in the stack file"
        return f"TensorBoard: http://localhost:{local_port}/"
    container = services.port_of(remote_port)
    if container is not None:
        return f"container service {container.name}: http://localhost:{local_port}/"
    return None
