"""Where a process stands in the world (torch.distributed's variables, DataLoader workers) and
what every ferry dataset shares: the native dataset re-opened per process and the epoch counter
shared with forked DataLoader workers."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Dict, Optional, Tuple

import torch.utils.data

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

    def _open_native(self):
        raise NotImplementedError

    def _world(self) -> Tuple[int, int, int, int]:
        """(nodes, ranks per node, node, rank in node) the order deals to."""
        return _world()

    def _native(self):
        if self._pid != os.getpid():
            # A dataset inherited through fork is dropped here safely: the native side never
            # destroys an object in a process other than its own (src/python/fork_safe.h).
            self._dataset = self._open_native()
            self._pid = os.getpid()
        return self._dataset

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_dataset"] = None
        state["_pid"] = None
        state["_epochs"] = None  # shared only through fork
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._epochs is None:
            self._epochs = multiprocessing.Array("q", [0, 0, 0])

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
