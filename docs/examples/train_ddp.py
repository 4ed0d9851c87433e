#!/usr/bin/env python3
"""A PyTorch DDP training script that follows kubetrain's checkpoint protocol.

Run it with torchrun, one process per GPU of the pod (trainingjob-ddp.yaml)::

    torchrun --nnodes=$(WORLD_SIZE) --nproc-per-node=<GPUs per pod> --node-rank=$(RANK)
        --master-addr=$(MASTER_ADDR) --master-port=$(MASTER_PORT) train_ddp.py ...

kubetrain starts every replica (pod) with the usual torch.distributed variables
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, NODE_RANK, LOCAL_RANK) counting replicas;
torchrun treats each replica as a node and gives each of its processes the per-process
RANK, LOCAL_RANK (the GPU it drives) and WORLD_SIZE. Without torchrun the script runs as
one process on the pod's first GPU. When kubetrain needs the job's GPUs back (a reclaim by
their owner, a higher-priority job, a suspend), it asks the job to save its work first:

* the request: the pod annotation ``kubetrain.io/checkpoint-requested`` (an RFC 3339 time)
  appears in the file ``$KUBETRAIN_CHECKPOINT_FILE`` (``/etc/kubetrain/checkpoint-requested``,
  a downward-API volume); the file is empty while nothing is requested;
* the acknowledgement: annotate the pod ``kubetrain.io/checkpoint-done=<RFC 3339 time>``
  (the pod's service account needs ``patch`` on its pods: see docs/user-guide.md), or let
  every replica exit with status 0.

After the acknowledgement (or ``spec.checkpoint.gracePeriodSeconds``) kubetrain deletes the
pods and queues the job again; the next run resumes from the newest checkpoint.

This script: every process polls the request file between steps (one small read); all
ranks agree on stopping (an all-reduce, so no rank stops alone inside a collective); rank
0 writes the checkpoint atomically, acknowledges (it runs in the replica of rank 0, and
annotates that pod), and every process exits 0, so does torchrun and every replica. It also
checkpoints every ``--checkpoint-every`` steps, which bounds the work a grace-period timeout
can lose. Run it with a persistent ``--checkpoint-dir`` (a PVC or a mounted bucket).

The protocol helpers at the top need only the standard library and are unit-tested without
torch by ``test_train_ddp.py`` (``python3 -m unittest docs/examples/test_train_ddp.py``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, Optional

DEFAULT_REQUEST_FILE = "/etc/kubetrain/checkpoint-requested"
DONE_ANNOTATION = "kubetrain.io/checkpoint-done"
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


# ---- the checkpoint protocol (standard library only) -------------------------------------


def request_file() -> Path:
    """Where kubetrain's checkpoint request appears in this container."""
    return Path(os.environ.get("KUBETRAIN_CHECKPOINT_FILE", DEFAULT_REQUEST_FILE))


def checkpoint_requested(path: Optional[Path] = None) -> Optional[str]:
    """The time of the pending checkpoint request, or None when there is none.

    The downward-API file exists with empty content while the annotation is absent; it may
    be missing altogether outside kubetrain (local runs), which means no request.
    """
    path = path or request_file()
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None


def now_rfc3339() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Writes through a temporary file and renames it, so a reader (the next run) never
    sees half a checkpoint even when the pod is killed mid-write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def latest_checkpoint(directory: Path) -> Optional[Path]:
    """The newest complete checkpoint (``step-<n>.pt``) in ``directory``."""
    best: tuple[int, Optional[Path]] = (-1, None)
    if directory.is_dir():
        for p in directory.glob("step-*.pt"):
            try:
                step = int(p.stem.split("-", 1)[1])
            except ValueError:
                continue
            if step > best[0]:
                best = (step, p)
    return best[1]


def checkpoint_path(directory: Path, step: int) -> Path:
    return directory / f"step-{step:09d}.pt"


def pod_identity() -> tuple[str, str]:
    """(namespace, pod name) of this pod. kubetrain sets each pod's hostname to its name;
    POD_NAME / POD_NAMESPACE (downward API) take precedence when the template sets them."""
    name = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME", "")
    namespace = os.environ.get("POD_NAMESPACE", "")
    if not namespace:
        try:
            namespace = (SA_DIR / "namespace").read_text().strip()
        except OSError:
            namespace = ""
    return namespace, name


def acknowledge_request(
    when: str,
    opener: Callable[..., object] = urllib.request.urlopen,
    api: Optional[str] = None,
) -> urllib.request.Request:
    """Annotates this pod ``kubetrain.io/checkpoint-done=<when>`` through the API server,
    with the pod's own service-account token (a JSON merge patch). Returns the request."""
    namespace, name = pod_identity()
    if not namespace or not name:
        raise RuntimeError("cannot tell which pod this is (POD_NAME/HOSTNAME, namespace)")
    if api is None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        api = f"https://{host}:{port}"
    token = (SA_DIR / "token").read_text().strip() if (SA_DIR / "token").exists() else ""
    body = json.dumps({"metadata": {"annotations": {DONE_ANNOTATION: when}}}).encode()
    req = urllib.request.Request(
        f"{api}/api/v1/namespaces/{namespace}/pods/{name}",
        data=body,
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json", "Authorization": f"Bearer {token}"},
    )
    ctx = None
    if (SA_DIR / "ca.crt").exists():
        ctx = ssl.create_default_context(cafile=str(SA_DIR / "ca.crt"))
    opener(req, timeout=10, context=ctx)
    return req


class Preemption:
    """Polls the request file at most every ``interval`` seconds (reading it every step
    would be cheap, but there is no need)."""

    def __init__(self, interval: float = 1.0, path: Optional[Path] = None, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self.path = path
        self.clock = clock
        self._next = 0.0
        self.requested_at: Optional[str] = None

    def poll(self) -> bool:
        if self.requested_at is not None:
            return True
        now = self.clock()
        if now >= self._next:
            self._next = now + self.interval
            self.requested_at = checkpoint_requested(self.path)
        return self.requested_at is not None


def process_layout(env: Optional[dict[str, str]] = None) -> tuple[int, int, int]:
    """(rank, local rank, world size) of this process. Under torchrun they are per process
    (LOCAL_RANK picks the GPU); without it, kubetrain's per-replica values with one process
    per pod. Missing: a single local process."""
    env = os.environ if env is None else env
    return int(env.get("RANK", "0")), int(env.get("LOCAL_RANK", "0")), int(env.get("WORLD_SIZE", "1"))


# ---- training (needs torch) ---------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint-dir", type=Path, default=Path(os.environ.get("CHECKPOINT_DIR", "/checkpoints")))
    p.add_argument("--checkpoint-every", type=int, default=500, help="steps between periodic checkpoints")
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args(argv)


def train(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    # env:// reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK: torchrun's per-process
    # values (or kubetrain's per-replica ones without torchrun).
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    _, local_rank, _ = process_layout()
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)

    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(device)
    model = DDP(model, device_ids=[local_rank] if use_cuda else None)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)

    step = 0
    resume = latest_checkpoint(args.checkpoint_dir)
    if resume is not None:
        state = torch.load(resume, map_location=device)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = state["step"]
        if rank == 0:
            print(f"resumed from {resume} at step {step}", flush=True)

    def save(at: int) -> None:
        if rank == 0:
            state = {"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": at}
            atomic_write(checkpoint_path(args.checkpoint_dir, at), lambda p: torch.save(state, p))
        dist.barrier()

    preemption = Preemption()
    flag = torch.zeros(1, device=device)
    while step < args.steps:
        x = torch.randn(args.batch_size, 512, device=device)
        y = torch.randint(0, 10, (args.batch_size,), device=device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1

        # Every rank must leave the loop at the same step: agree with an all-reduce.
        flag.fill_(1.0 if preemption.poll() else 0.0)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            save(step)
            if rank == 0:
                try:
                    acknowledge_request(now_rfc3339())
                    print(f"checkpoint at step {step} saved and acknowledged", flush=True)
                except Exception as e:  # exiting 0 acknowledges too
                    print(f"checkpoint at step {step} saved; annotation failed ({e}); exiting 0", flush=True)
            dist.destroy_process_group()
            return 0
        if step % args.checkpoint_every == 0:
            save(step)
        if rank == 0 and step % 100 == 0:
            print(f"step {step} loss {loss.item():.4f} world {world}", flush=True)

    save(step)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(train(parse_args(sys.argv[1:])))
