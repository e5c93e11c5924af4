"""Where a process stands in the world (torch.distributed's process group or its variables,
DataLoader workers) and what every ferry dataset shares: the native dataset re-opened per process,
the epoch counter shared with its DataLoader workers (fork, spawn or forkserver), and the check
that every rank of a job builds the same plan."""

from __future__ import annotations

import datetime
import itertools
import json
import multiprocessing
import multiprocessing.context
import os
import socket
from typing import Any, Dict, List, Optional, Tuple

import torch.distributed
import torch.utils.data

from . import _node
from .errors import InvalidArgumentError
from .stream import _count


def _replicated(world: Tuple[int, int, int, int],
                replication: Optional[int]) -> Tuple[int, int, int, int]:
    """The world as the order sees it when groups of ``replication`` consecutive ranks read the
    same samples (Mosaic's ``replication``, for tensor or sequence parallelism)."""
    if not replication or replication == 1:
        return world
    nodes, ranks_per_node, node, rank = world
    ranks = nodes * ranks_per_node
    if ranks % replication:
        raise InvalidArgumentError("World size must be divisible by your replication factor.")
    group, groups = (node * ranks_per_node + rank) // replication, ranks // replication
    new_nodes = groups // ranks_per_node if groups % ranks_per_node == 0 else 1
    per_node = groups // new_nodes
    return new_nodes, per_node, group // per_node, group % per_node


def _initialized() -> bool:
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized()


def _distributed_world() -> Optional[Tuple[int, int, int, int]]:
    """(nodes, ranks_per_node, node, rank within the node) from torch.distributed's process group
    when one is initialised (None otherwise). The local world is LOCAL_WORLD_SIZE (torchrun sets
    it), else the ranks grouped by host name, which is a collective: every rank must be here.
    Variables that disagree with the group are an error, not a guess."""
    if not _initialized():
        return None
    dist = torch.distributed
    size, rank = dist.get_world_size(), dist.get_rank()
    for name, value, what in (("WORLD_SIZE", size, "world size"), ("RANK", rank, "rank")):
        env = os.environ.get(name)
        if env is not None and env.strip() and int(env) != value:
            raise InvalidArgumentError(
                f"{name}={env}, but torch.distributed's process group has {what} {value}: the "
                f"launcher and init_process_group disagree")
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local:
        local_world = int(local)
        if local_world < 1 or size % local_world:
            raise InvalidArgumentError(
                f"the world size {size} is not a multiple of LOCAL_WORLD_SIZE {local_world}")
        local_rank = int(os.environ.get("LOCAL_RANK", rank % local_world))
        if local_rank != rank % local_world:
            raise InvalidArgumentError(
                f"LOCAL_RANK {local_rank} is not rank {rank} mod LOCAL_WORLD_SIZE {local_world}: "
                f"ranks must be numbered node by node")
        return size // local_world, local_world, rank // local_world, local_rank
    hosts: List[Optional[str]] = [None] * size
    dist.all_gather_object(hosts, socket.gethostname())
    per_host = hosts.count(hosts[0])
    order = list(dict.fromkeys(hosts))
    if any(hosts[r] != order[r // per_host] for r in range(size)) or per_host * len(order) != size:
        raise InvalidArgumentError(
            "the ranks are not grouped by host in equal, consecutive blocks (hosts by rank: "
            f"{hosts}); set LOCAL_WORLD_SIZE and LOCAL_RANK as torchrun does")
    return len(order), per_host, rank // per_host, rank % per_host


_PLANS = itertools.count()


def _check_same_plan(plan: Dict[str, Any]) -> None:
    """Compares ``plan`` (what decides the order: datasets, shuffle, canonical nodes, batch
    size, ...) across the ranks of the process group, through its store and with a bounded wait,
    so that ranks that disagree fail at once, each naming what differs, instead of reading
    different samples or hanging a collective later. Datasets must be created in the same order
    on every rank. FERRY_PLAN_CHECK_TIMEOUT (seconds, default 300; 0 turns the check off)."""
    if not _initialized():
        return
    timeout = float(os.environ.get("FERRY_PLAN_CHECK_TIMEOUT", "300") or 0)
    if timeout <= 0:
        return
    dist = torch.distributed
    store = dist.distributed_c10d._get_default_store()
    size, rank = dist.get_world_size(), dist.get_rank()
    key = f"ferry/plan/{next(_PLANS)}/"
    mine = json.dumps(plan, sort_keys=True, default=str)
    store.set(key + str(rank), mine)
    try:
        store.wait([key + str(r) for r in range(size)], datetime.timedelta(seconds=timeout))
    except RuntimeError as e:
        missing = [r for r in range(size) if not store.check([key + str(r)])]
        raise InvalidArgumentError(
            f"ranks {missing} did not create dataset number {key.split('/')[2]} within "
            f"{timeout:g} s: every rank must create the same datasets in the same order "
            f"(FERRY_PLAN_CHECK_TIMEOUT)") from e
    for other in range(size):
        theirs = store.get(key + str(other)).decode()
        if theirs != mine:
            here, there = json.loads(mine), json.loads(theirs)
            fields = sorted(k for k in set(here) | set(there) if here.get(k) != there.get(k))
            detail = "; ".join(f"{k}: {here.get(k)!r} here, {there.get(k)!r} on rank {other}"
                               for k in fields[:4])
            raise InvalidArgumentError(
                f"rank {rank} and rank {other} build different datasets ({detail}): every rank "
                f"must create the same datasets with the same arguments")


def _world() -> Tuple[int, int, int, int]:
    """(nodes, ranks_per_node, node, rank within the node) from torch.distributed's variables."""
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    local_rank = int(os.environ.get("LOCAL_RANK", rank % local_world))
    if world_size < 1 or local_world < 1 or world_size % local_world:
        raise InvalidArgumentError(
            f"WORLD_SIZE {world_size} is not a multiple of LOCAL_WORLD_SIZE {local_world}"
        )
    return world_size // local_world, local_world, rank // local_world, local_rank


def _in_dataloader_worker() -> bool:
    return torch.utils.data.get_worker_info() is not None


def _worker() -> Tuple[int, int]:
    info = torch.utils.data.get_worker_info()
    return (info.id, info.num_workers) if info is not None else (0, 1)


def _exact_resume(done: int, ranks: int, batch: int, workers: int,
                  worker_id: int) -> Tuple[int, int]:
    """(plan worker, samples it already read) for DataLoader worker ``worker_id`` when the world
    read ``done`` samples of the epoch in batches of ``batch`` under the same world shape. The
    DataLoader hands out batches round robin from worker 0, so after k batches per rank plan
    worker p has read ceil((k - p) / W) of them. Rotating the workers makes the first batch of
    this run come from plan worker k % W, which keeps that true across any number of
    interruptions."""
    batches = done // (ranks * batch)
    plan_worker = (worker_id + batches) % workers
    read = max(0, -(-(batches - plan_worker) // workers))
    return plan_worker, read * batch


def _advance_epoch(epochs, workers: int) -> int:
    """The epoch a DataLoader worker's __iter__ reads. ``epochs`` is a shared
    ``multiprocessing.Array('q', [epoch, workers that started it, workers it has])``: every
    worker of a rank calls __iter__ once per epoch (persistent or not); the first caller after
    all workers started the current epoch - or one with another worker count, which can only
    come from a new DataLoader - moves to the next one."""
    with epochs.get_lock():
        if epochs[1] and (epochs[1] >= epochs[2] or workers != epochs[2]):
            epochs[0] += 1
            epochs[1] = 0
        epochs[1] += 1
        epochs[2] = workers
        return epochs[0]


class _NativeDataset(torch.utils.data.IterableDataset):
    """What StreamingDataset and FileDataset share: the native dataset, opened again in each
    process that uses it (``_open_native``), and the epoch counter this process shares with the
    DataLoader workers it forks."""

    def __init__(self) -> None:
        super().__init__()
        self._epochs = multiprocessing.Array("q", [0, 0, 0])  # see _advance_epoch
        self._resume: Optional[Dict[str, Any]] = None
        self._pid = None
        self._dataset = None
        # The process group's world, settled once here (in the rank's own process, where the
        # group exists) and carried to its DataLoader workers, which have no group.
        self._group_world = _distributed_world()

    def _open_native(self):
        raise NotImplementedError

    def _physical_world(self) -> Tuple[int, int, int, int]:
        """(nodes, ranks per node, node, rank in node) of the job: the process group's when one
        was initialised before this dataset was made, else torch.distributed's variables."""
        return getattr(self, "_group_world", None) or _world()

    def _world(self) -> Tuple[int, int, int, int]:
        """(nodes, ranks per node, node, rank in node) the order deals to."""
        return self._physical_world()

    def _native(self):
        if self._pid != os.getpid():
            # A dataset inherited through fork is dropped here safely: the native side never
            # destroys an object in a process other than its own (src/python/fork_safe.h).
            _node.prepare_process()
            self._dataset = self._open_native()
            self._pid = os.getpid()
        return self._dataset

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_dataset"] = None
        state["_pid"] = None
        if multiprocessing.context.get_spawning_popen() is None:
            # Pickled for keeps (torch.save, a copy): the counter's values, not the counter,
            # which only a process being started may share.
            with self._epochs.get_lock():
                state["_epochs"] = list(self._epochs)
        else:
            # A spawn or forkserver DataLoader worker being started: it shares the counter, as a
            # forked one does, so every worker of the rank reads the same epoch.
            state["_epochs"] = self._spawnable_epochs()
        state.pop("_epochs_spawnable", None)
        return state

    def _spawnable_epochs(self):
        """The epoch counter in a form a spawned process can open. The default (fork) context
        unlinks a lock's semaphore at once, which a spawned process then cannot open (it crashes
        on first use): the counter moves, once, to a spawn-context one with the same values."""
        if not getattr(self, "_epochs_spawnable", False):
            with self._epochs.get_lock():
                values = list(self._epochs)
            self._epochs = multiprocessing.get_context("spawn").Array("q", values)
            self._epochs_spawnable = True
        return self._epochs

    def __setstate__(self, state):
        self.__dict__.update(state)
        if isinstance(self._epochs, list):
            self._epochs = multiprocessing.Array("q", self._epochs)
        else:
            self._epochs_spawnable = True  # a spawned worker's: shared with its rank

    def _next_epoch(self, workers: int) -> int:
        return _advance_epoch(self._epochs, workers)

    @property
    def next_epoch(self) -> int:
        with self._epochs.get_lock():
            return self._epochs[0] + (1 if self._epochs[1] else 0)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration read `epoch` (from its start)."""
        with self._epochs.get_lock():
            self._epochs[0] = _count(epoch, "epoch")
            self._epochs[1] = 0
        self._resume = None
