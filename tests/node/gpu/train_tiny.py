"""A tiny data-parallel training job for the launcher's recorded run: torch.distributed set up
from the environment torchrun gives each worker, a checkpoint written to $GPUCLOUD_CHECKPOINT_DIR
every few steps and resumed from when present.

Global rank 0 writes the one checkpoint file and every rank reads it on resume. With the c10d
rendezvous that rank may be on any node, not NODE_RANK 0: the launcher uploads from each node only
what its command wrote, and restores the job's whole store on every node, so the file is found
wherever rank 0 runs next.

`--fail-at-step N` ends the run with status 17 right after the checkpoint of step N (a node lost
mid-job); rank 0 writes what it saw and did to `--report` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

CHECKPOINT_NAME = "tiny.pt"
SEEN_NAMES = (
    "MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
    "NODE_RANK", "NNODES", "NPROC_PER_NODE", "GPUCLOUD_JOB_ID", "GPUCLOUD_ATTEMPT", "GPUCLOUD_HOSTFILE",
    "GPUCLOUD_CHECKPOINT_DIR", "GPUCLOUD_CHECKPOINT_URI",
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--fail-at-step", type=int)
    parser.add_argument("--report", type=Path, required=True)
    arguments = parser.parse_args()

    dist.init_process_group(backend=arguments.backend)
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if arguments.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)

    torch.manual_seed(0)
    inputs = torch.randn(256, 16)
    targets = inputs @ torch.linspace(-1.0, 1.0, 16).unsqueeze(1) + 0.5
    model = torch.nn.Linear(16, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    checkpoint = Path(os.environ["GPUCLOUD_CHECKPOINT_DIR"]) / CHECKPOINT_NAME
    start, losses = 0, []
    if checkpoint.is_file():
        state = torch.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, losses = state["step"], state["losses"]
    resumed_from = start if checkpoint.is_file() else None
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)

    # Each rank trains on its own shard; DDP averages the gradients over the process group.
    shard = slice(rank, None, dist.get_world_size())
    batch, wanted = inputs[shard].to(device), targets[shard].to(device)
    status = 0
    for step in range(start, arguments.steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(batch), wanted)
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        losses.append({"step": step, "loss": reduced.item() / dist.get_world_size()})
        done = step + 1
        if done % arguments.checkpoint_every == 0 or done == arguments.steps:
            if rank == 0:
                temporary = checkpoint.with_suffix(".tmp")
                torch.save({"step": done, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "losses": losses}, temporary)
                os.replace(temporary, checkpoint)
            dist.barrier()
        if arguments.fail_at_step is not None and done == arguments.fail_at_step:
            status = 17
            break

    if rank == 0:
        arguments.report.write_text(json.dumps({
            "backend": dist.get_backend(),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if device.type == "cuda" else None,
            "worker_environment": {name: os.environ.get(name) for name in SEEN_NAMES},
            "nccl_environment": {name: value for name, value in sorted(os.environ.items())
                                 if name.startswith(("NCCL_", "FI_"))},
            "resumed_from_step": resumed_from,
            "losses": losses,
            "exit_status": status,
        }, indent=1) + "\n")
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
