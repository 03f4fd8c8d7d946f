"""The one error a bad stack config raises, naming the stack, its file, the key and the reason."""

from __future__ import annotations

NAMESPACE = "gpu-cloud"
"""The Pulumi config namespace of every gpu-cloud key (`gpu-cloud:project`)."""


class ConfigError(Exception):
    """A stack config that breaks a rule. Names the stack and its file, the key and the reason."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {key}: {reason}" for key, reason in problems]
        super().__init__("\n".join(lines))
