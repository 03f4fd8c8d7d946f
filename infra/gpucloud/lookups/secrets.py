"""The parameters and secrets the containers' `secretEnv` names: the plan checks their names'
shape (config.services) and proves the node role may read them (plan/access_secrets.py); the
program looks each up without reading its value (aws.ssm.getParameter without decryption,
aws.secretsmanager.getSecret), so `pulumi preview` stops on a missing one naming its key. Whether
the node role may decrypt them under their keys' own policies is not looked up: a node that cannot
read one logs the variable and reference, never a value, and does not start the container."""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups
from gpucloud.lookups.problems import Problems


def named_secret_references(settings: StackSettings) -> list[tuple[str, str]]:
    """Each `secretEnv` reference (`ssm:<name>` or `secretsmanager:<name or ARN>`) with its key."""
    return [(f"groups[{index}].services.containers[{number}].secretEnv.{variable}", reference)
            for index, group in enumerate(settings.config.groups)
            for number, container in enumerate(group.services.containers)
            for variable, reference in sorted(container.secret_env.items())]


def check_secret_references(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> None:
    """A missing parameter or secret is a problem naming its key, a parameter that is not a
    SecureString a warning there (a SecureString's value is encrypted with a KMS key: SSM user guide,
    "Parameter Store reference", parameter types, read 2026-11-28); those not known are one line."""
    found = []
    for key, reference in named_secret_references(settings):
        store, _, name = reference.partition(":")
        if store == "ssm":
            parameter = lookups.stored_parameter(name)
            found.append((key, reference, parameter.exists))
            if parameter.exists and parameter.type != "SecureString":
                problems.warn(key, f"{reference} is a {parameter.type} parameter, not a SecureString: Parameter Store "
                              "keeps it unencrypted by KMS and shows it to whoever may read the parameter; store the "
                              "secret as a SecureString")
        else:
            found.append((key, reference, lookups.secret_exists(name)))
    problems.looked_up(
        found,
        lambda reference: (f"{reference} does not exist in {settings.region} ("
                           f"{'SSM GetParameter: ParameterNotFound' if reference.startswith('ssm:') else 'Secrets Manager DescribeSecret: ResourceNotFoundException'}"
                           "): create it, or name one that exists; the node would not start the container"),
        lambda names: (f"secretEnv not checked ({names}): whether each exists in {settings.region} is not known here "
                       "(offline, give the plan account facts from `gpucloud account snapshot`); whether the node role "
                       "may decrypt them under their keys' own policies is not looked up"))
