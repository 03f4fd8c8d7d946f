"""What the rules that need AWS facts found, collected so one ConfigError names every problem.

A problem (one per config key: the first rule that fails for it says why) stops the stack before
any resource; a warning is a line a reviewer must see; a failure lets the stack deploy but says it
would never run (`pulumi up` must not go on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpucloud.config import ConfigError, StackSettings


class Problems:
    """A stack's problems, warnings and failures, each keyed `gpu-cloud:<config key>`."""

    def __init__(self, settings: StackSettings):
        self.settings = settings
        self.items: list[tuple[str, str]] = []
        self.warnings: list[tuple[str, str]] = []
        self.failures: list[str] = []

    def add(self, key: str, reason: str) -> None:
        """One problem per key: the first rule that fails for it says why."""
        if not any(named == f"gpu-cloud:{key}" for named, _reason in self.items):
            self.items.append((f"gpu-cloud:{key}", reason))

    def warn(self, key: str, reason: str) -> None:
        self.warnings.append((f"gpu-cloud:{key}", reason))

    def looked_up(self, found: Iterable[tuple[str, str, bool | None]], missing: Callable[[str], str],
                  not_checked: Callable[[str], str]) -> None:
        """Things a stack names, each (key, name, exists): a missing one is a problem at its key,
        `missing(name)`; those not known are one warning, `not_checked(names)`, each named once."""
        unknown = []
        for key, name, exists in found:
            if exists is None:
                unknown.append(name)
            elif not exists:
                self.add(key, missing(name))
        if unknown:
            self.warn("groups", not_checked(", ".join(dict.fromkeys(unknown))))

    def raise_if_any(self) -> None:
        if self.items:
            raise ConfigError(f"stack {self.settings.stack!r} ({self.settings.source})", self.items)
