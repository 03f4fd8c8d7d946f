"""The parameters and secrets the containers' `secretEnv` names: the plan checks their names'
shape (config.services) and proves the node role may read them (plan/access_secrets.py), but
whether each exists, holds a string and is readable under its key's own policy are facts of the
account the plan does not look up: one line says so, and a node that cannot read one logs the
variable and reference, never a value, and does not start the container."""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.config.services import secret_references
from gpucloud.lookups.problems import Problems


def note_secret_references(settings: StackSettings, problems: Problems) -> None:
    parameters, secrets = secret_references(settings.config.groups)
    named = [*(f"ssm:{name}" for name in parameters), *(f"secretsmanager:{name}" for name in secrets)]
    if named:
        problems.warn("groups", f"secretEnv not checked: whether each of {', '.join(named)} exists in {settings.region} and the "
                      "node role may decrypt them under their keys' own policies is not known here; a node that cannot "
                      "read one does not start that container")
