"""Container images pulled while a new instance waits in the warm pool (`warmPool.prepullImages`).

An instance launched into a warm pool boots once, runs its launch hook (Auto Scaling holds it in
Warmed:Pending:Wait until the hook completes) and is then stopped or hibernated; when a scale-out
takes it from the pool it starts again and runs the hook again, in Pending:Wait ("Use lifecycle
hooks with a warm pool in Auto Scaling group", EC2 Auto Scaling user guide, read 2026-11-28). Its
target lifecycle state in instance metadata says which: `Warmed:Stopped` (or `Warmed:Hibernated`)
while it is bound for the pool ("Retrieve the target lifecycle state through instance metadata",
same guide). So the gate pulls the group's images before it completes a hook bound for the pool:
the images land on the root volume, which the stop keeps, and the scale-out's own start runs the
containers without pulling them. The heartbeat keeps the hook pending while the pull runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from gpucloud.node import boot_phases
from gpucloud.node.commands import CommandRunner
from gpucloud.node.containers import DOCKER_CONFIG_DIR, pull_image
from gpucloud.node.services import SERVICES_PATH, ServiceError, load_services

WARM_POOL_STATES = ("Warmed:Stopped", "Warmed:Hibernated", "Warmed:Running")

log = logging.getLogger("gpucloud.node.prepull")


def bound_for_pool(target_lifecycle_state: str | None) -> bool:
    return target_lifecycle_state in WARM_POOL_STATES


def prepull(run: CommandRunner, ecr_client: Callable[[str], Any], path: str = SERVICES_PATH) -> bool:
    """Pull each container image the group's services document names, when it asks for a pre-pull;
    True when every pull succeeded (or none was asked). A failed pull is logged, not fatal: the
    container's own start pulls again."""
    document = load_services(path) or {}
    if not document.get("prepull_images"):
        return True
    ok = True
    for container in document.get("containers") or ():
        with boot_phases.timed("pull", container["name"]):
            try:
                pull_image(run, container["image"], container.get("ecr_region"), ecr_client,
                           DOCKER_CONFIG_DIR.format(container["name"]))
                log.info("pulled %s while the instance waits for the warm pool", container["image"])
            except ServiceError as error:
                ok = False
                log.warning("pre-pull failed, the container's start pulls again: %s", error)
    return ok
