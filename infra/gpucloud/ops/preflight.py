"""What the fabric preflight's figures mean across a job's nodes: the search of
node/preflight_search.py (standard library only, so the job supervisor's `preflight-decide` step
runs the same code on a node), and the floors of node/preflight.py. `gpucloud preflight`
(ops/preflight_run.py) and the recorded runs' replays (tests/ops/test_preflight_search.py) read
them from here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpucloud.node.preflight import FLOORS_PATH, busbw_floor  # noqa: F401 (the search's floors, exported here)
from gpucloud.node.preflight_search import (  # noqa: F401 (the search, exported here)
    MAX_ROUNDS,
    Search,
    SetResult,
    Verdict,
    advance,
    next_sets,
    search,
    verdict,
)


def load_floors(path: Path = FLOORS_PATH) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
