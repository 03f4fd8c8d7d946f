"""Bounded retries with exponential backoff; the sleep is injected so tests never wait."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

Result = TypeVar("Result")

log = logging.getLogger("gpucloud.node.retry")


@dataclass(frozen=True)
class Backoff:
    """How many tries, and how long to wait between them (doubling up to a cap)."""

    attempts: int = 5
    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 30.0

    def delays(self) -> Iterator[float]:
        delay = self.initial_s
        for _ in range(self.attempts - 1):
            yield min(delay, self.max_s)
            delay *= self.factor


def retry(
    operation: Callable[[], Result],
    *,
    what: str,
    backoff: Backoff,
    retryable: Callable[[Exception], bool],
    sleep: Callable[[float], None] = time.sleep,
) -> Result:
    """Call operation until it succeeds, it raises a non-retryable error, or attempts run out;
    the last error is re-raised."""
    delays = backoff.delays()
    attempt = 1
    while True:
        try:
            return operation()
        except Exception as error:
            if not retryable(error):
                raise
            delay = next(delays, None)
            if delay is None:
                log.error("%s failed after %d attempts: %s", what, attempt, error)
                raise
            log.warning(
                "%s failed (attempt %d of %d): %s; retrying in %.1f s",
                what,
                attempt,
                backoff.attempts,
                error,
                delay,
            )
            sleep(delay)
            attempt += 1
