"""StreamingDataset: a torch IterableDataset over MDS datasets in any object store.

A drop-in for ``streaming.StreamingDataset``: the same arguments, samples as dicts of decoded
values, correct under ``torch.utils.data.DataLoader(num_workers=N)`` and torch.distributed
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), with ``state_dict`` /
``load_state_dict`` for mid-epoch resumption. Fetching, caching, ordering and prefetching
happen in the native engine (docs/streaming.md); this module is the thin Python face.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch.utils.data

from . import _ferry
from ._values import decoder
from .errors import InvalidArgumentError
from .stream import Stream, _count, _size


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


class StreamingDataset(_NativeDataset):
    """Samples of one or more MDS datasets, streamed through a shared local cache.

    Args (as in Mosaic Streaming):
        remote, local, split: one stream (or give ``streams``).
        streams: a list of ``Stream`` to mix.
        epoch_size: samples per epoch over all streams (with ``proportion`` streams).
        predownload: samples fetched ahead per worker; None sizes it from the link ("auto").
        cache_limit: bytes (or "100gb") the cache folder may hold; shards in use are never
            evicted, and a dataset without ``remote`` is never evicted at all.
        keep_zip, validate_hash: keep compressed files; check downloads with this digest.
        sampling_method: ``"balanced"`` or ``"fixed"``.
        num_canonical_nodes: fixes the order across world shapes (None: a default from the
            world; saved by ``state_dict`` so a resumed run keeps it).
        batch_size: the per-worker batch the DataLoader makes (the order deals whole batches).
        shuffle, shuffle_algo (naive, py1s, py1b, py1br, py1e), shuffle_seed,
            shuffle_block_size: see docs/streaming.md.
        drop_last: cut the epoch to whole world batches instead of padding.
        allow_unsafe_types: read ``pkl`` columns (unpickled: runs code from the dataset).
    ferry's own:
        image_format: ``"pil"`` (jpeg/png/pil columns as PIL images, as the reference),
            ``"numpy"`` (uint8 arrays) or ``"bytes"`` (the stored JPEG/PNG files, undecoded).
        download_concurrency: shards fetched at once per worker (None: auto).
        node_download_concurrency: shards fetched at once from each cache folder by all the
            workers and processes of the node that read it with this value (None: no limit
            beyond each worker's own).
        download_parts: ranged parts a shard of 32 MiB or more is fetched as, at once (None:
            auto, 1 to 8 from how the downloads' rates respond to their number; ``ferry doctor``
            measures it ahead of time).
        max_bytes_in_flight: bytes fetched ahead per worker (under a ``cache_limit``, at most
            the worker's share of what the cache budget leaves for the look-ahead).
        strict_cache_limit: a ``cache_limit`` that cannot hold the shuffle's working set (the
            shards the node's readers use at once) is an error when iterating, instead of
            reading the widest shuffle that fits (a smaller ``shuffle_block_size``, or ``py1s``;
            logged once with the ``cache_limit`` that would hold the order asked for).
        offline: read the cache folder's copy of ``index.json`` without asking the remote
            whether it changed (by default one HEAD per stream at open revalidates it): a cache
            filled earlier stays usable while the remote cannot be reached.
    Accepted for compatibility and not needed (docs/python.md says why): download_retry,
    download_timeout, partition_algo (``"relaxed"`` or ``"orig"``), sampling_granularity (>= 1),
    batching_method (``"random"``; ``"per_stream"``, ``"stratified"`` and
    ``"device_per_stream"`` only with one stream, where every method gives the same batches:
    with several, ferry does not implement them yet and says so), replication (None or 1),
    shuffle_block_size=None.
    """

    def __init__(
        self,
        *,
        streams: Optional[Sequence[Stream]] = None,
        remote: Optional[str] = None,
        local: Optional[str] = None,
        split: Optional[str] = None,
        download_retry: int = 2,
        download_timeout: float = 60,
        validate_hash: Optional[str] = None,
        keep_zip: bool = False,
        epoch_size: Union[int, str, None] = None,
        predownload: Optional[int] = None,
        cache_limit: Union[int, str, None] = None,
        sampling_method: str = "balanced",
        sampling_granularity: int = 1,
        partition_algo: str = "relaxed",
        num_canonical_nodes: Optional[int] = None,
        batch_size: Optional[int] = None,
        shuffle: bool = False,
        shuffle_algo: str = "py1e",
        shuffle_seed: int = 9176,
        shuffle_block_size: Optional[int] = None,
        batching_method: str = "random",
        allow_unsafe_types: bool = False,
        replication: Optional[int] = None,
        drop_last: bool = False,
        image_format: str = "pil",
        download_concurrency: Optional[int] = None,
        max_bytes_in_flight: Union[int, str, None] = None,
        download_parts: Optional[int] = None,
        node_download_concurrency: Optional[int] = None,
        strict_cache_limit: bool = False,
        offline: bool = False,
    ) -> None:
        super().__init__()
        if streams:
            if remote is not None or local is not None:
                raise InvalidArgumentError("give either streams or remote/local, not both")
            self.streams = list(streams)
            for stream in self.streams:
                if not isinstance(stream, Stream):
                    raise InvalidArgumentError(
                        f"streams must be ferry.Stream objects, not {type(stream).__name__}")
        else:
            self.streams = [Stream(remote=remote, local=local, split=split)]
        if image_format not in ("pil", "numpy", "bytes"):
            raise InvalidArgumentError(
                f"image_format must be 'pil', 'numpy' or 'bytes', not {image_format!r}"
            )
        if replication not in (None, 1):
            raise InvalidArgumentError("replication is not supported (only None or 1)")
        hashes = {s.validate_hash for s in self.streams if s.validate_hash} | (
            {validate_hash} if validate_hash else set()
        )
        if len(hashes) > 1:
            raise InvalidArgumentError(f"streams ask for different validate_hash: {sorted(hashes)}")
        self.shuffle = bool(shuffle)
        self.shuffle_seed = _count(shuffle_seed, "shuffle_seed")
        self.num_canonical_nodes = _count(num_canonical_nodes, "num_canonical_nodes", 1)
        self.batch_size = _count(batch_size, "batch_size", 1) or 1
        self.image_format = image_format
        self.allow_unsafe_types = bool(allow_unsafe_types)
        self._options = {
            "streams": [s._options() for s in self.streams],
            "shuffle": self.shuffle,
            "shuffle_algo": shuffle_algo,
            "shuffle_seed": self.shuffle_seed,
            "shuffle_block_size": _count(shuffle_block_size, "shuffle_block_size", 1),
            "batch_size": self.batch_size,
            "drop_last": bool(drop_last),
            "epoch_size": _size(epoch_size, "epoch_size"),
            "sampling_method": sampling_method,
            "predownload": _count(predownload, "predownload", 1),
            "download_concurrency": _count(download_concurrency, "download_concurrency", 1),
            "download_parts": _count(download_parts, "download_parts", 1),
            "node_download_concurrency": _count(
                node_download_concurrency, "node_download_concurrency", 1
            ),
            "max_bytes_in_flight": _size(max_bytes_in_flight, "max_bytes_in_flight"),
            "cache_limit": _size(cache_limit, "cache_limit"),
            "strict_cache_limit": bool(strict_cache_limit),
            "offline": bool(offline),
            "keep_zip": bool(keep_zip or any(s.keep_zip for s in self.streams)),
            "validate_hash": next(iter(hashes), None),
            "allow_unsafe_types": self.allow_unsafe_types,
            # Not used, but checked by the engine: a typo, or a value that would change what a
            # batch holds, is an error rather than silently ignored.
            "batching_method": batching_method,
            "partition_algo": partition_algo,
            "sampling_granularity": sampling_granularity,
        }
        self._epoch_offset = 0  # sample_in_epoch this process resumed from
        self._workers = 1  # DataLoader workers per rank (StreamingDataLoader tells the parent)
        self._batch = self.batch_size  # the batches the loader makes (ferry.DataLoader's own)
        # Open now: a bad URL, missing index or bad option fails here, not in a worker. The index
        # is checked against the remote once: workers read the copy this open checked (the order
        # they plan is the parent's), with no round trip each.
        native = self._native()
        self._options["offline"] = True
        self._decoders = [
            decoder(enc, image_format, self.allow_unsafe_types) for _, enc in native.columns
        ]
        self._columns = [name for name, _ in native.columns]

    def _open_native(self):
        options = dict(self._options)
        if self.num_canonical_nodes is not None:
            options["num_canonical_nodes"] = self.num_canonical_nodes
        return _ferry.Dataset(options)

    # -- samples ------------------------------------------------------------------------------

    @property
    def columns(self) -> List[str]:
        return list(self._columns)

    @property
    def num_samples(self) -> int:
        """Samples over all streams (before mixing)."""
        return self._native().num_samples

    def __len__(self) -> int:
        """Samples one rank reads per epoch (as the reference: the epoch over the ranks)."""
        nodes, ranks_per_node, _, _ = _world()
        ranks = nodes * ranks_per_node
        return -(-self._native().epoch_samples // ranks)

    def _sample(self, values: List[Any]) -> Dict[str, Any]:
        return {
            name: (value if decode is None else decode(value))
            for name, decode, value in zip(self._columns, self._decoders, values)
        }

    def __getitem__(self, index: int) -> Dict[str, Any]:
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidArgumentError(f"a sample index is an int, not {index!r}")
        if index < 0:
            index += self.num_samples
        if index < 0:
            raise IndexError(f"sample index out of range (the dataset has {self.num_samples})")
        _, _, values = self._native().get(index)
        return self._sample(values)

    def get_item(self, index: int) -> Dict[str, Any]:
        return self[index]

    # -- epochs and resumption ----------------------------------------------------------------

    def state_dict(self, num_samples: int, from_beginning: bool) -> Dict[str, Any]:
        """Where the world is: ``num_samples`` read this epoch over all ranks (since the start of
        the epoch if ``from_beginning``, else since this run resumed)."""
        nodes, ranks_per_node, _, _ = _world()
        with self._epochs.get_lock():
            epoch = self._epochs[0]
        offset = 0 if from_beginning else self._epoch_offset
        return {
            "epoch": epoch,
            "sample_in_epoch": offset + int(num_samples),
            "num_canonical_nodes": self._canonical_nodes(),
            "shuffle_seed": self.shuffle_seed,
            "initial_physical_nodes": nodes,
            "world": [nodes, ranks_per_node, self._workers],
            "batch_size": self._batch,
        }

    def _canonical_nodes(self) -> int:
        if self.num_canonical_nodes is not None:
            return self.num_canonical_nodes
        nodes, ranks_per_node, _, _ = _world()
        plan = self._native().plan((nodes, ranks_per_node, self._workers), 0)
        return plan["num_canonical_nodes"]

    def load_state_dict(self, obj: Dict[str, Any]) -> None:
        """Resumes at the state ``state_dict`` returned: the next iteration continues its epoch."""
        try:
            epoch = _count(obj["epoch"], "epoch")
            sample_in_epoch = _count(obj["sample_in_epoch"], "sample_in_epoch")
        except KeyError as e:
            raise InvalidArgumentError(f"state has no {e.args[0]!r}") from None
        if obj.get("shuffle_seed") not in (None, self.shuffle_seed):
            raise InvalidArgumentError(
                f"the state was saved with shuffle_seed {obj['shuffle_seed']}, "
                f"this dataset has {self.shuffle_seed}"
            )
        saved_nodes = obj.get("num_canonical_nodes")
        if self.num_canonical_nodes is None and saved_nodes:
            # The order depends on it: keep the saved run's, whatever the world is now.
            self.num_canonical_nodes = int(saved_nodes)
            self._pid = None  # re-open with it
        saved_world = tuple(obj.get("world") or ())
        if len(saved_world) == 3:
            total = self._native().plan(saved_world, epoch)["epoch_samples"]
            if sample_in_epoch >= total:  # saved at the very end: go on with the next epoch
                epoch, sample_in_epoch = epoch + 1, 0
        with self._epochs.get_lock():
            self._epochs[0] = epoch
            self._epochs[1] = 0
        self._resume = {
            "epoch": epoch,
            "sample_in_epoch": sample_in_epoch,
            "world": saved_world,
            "batch_size": obj.get("batch_size"),
        }

    def _begin_epoch(self, workers: int, batch_size: Optional[int] = None) -> None:
        """Called in the main process before a DataLoader starts its workers for an epoch."""
        self._workers = max(1, workers)
        self._batch = batch_size or self.batch_size
        resume = self._resume
        self._epoch_offset = (
            resume["sample_in_epoch"] if resume and resume["epoch"] == self.next_epoch else 0
        )

    # -- what ferry.DataLoader asks of a dataset ------------------------------------------------

    def _loader_columns(self) -> List[Tuple[str, str]]:
        return list(self._native().columns)

    def _loader_options(self, batch_size: int) -> Dict[str, Any]:
        options = dict(self._options, batch_size=batch_size)
        if self.num_canonical_nodes is not None:
            options["num_canonical_nodes"] = self.num_canonical_nodes
        return options

    def _loader_batches(self, native, world: Tuple[int, int, int], batch_size: int,
                        drop_last: bool) -> int:
        plan = native.plan(world, self.next_epoch)
        per_thread = plan["samples_per_worker"]
        batches = per_thread // batch_size if drop_last else -(-per_thread // batch_size)
        return batches * world[2]

    # -- iteration ----------------------------------------------------------------------------

    def _start(self, world: Tuple[int, int, int], worker_id: int, epoch: int):
        """(plan worker, resume_from, skip) for this DataLoader worker."""
        workers = world[2]
        resume = self._resume if self._resume and self._resume["epoch"] == epoch else None
        self._epoch_offset = resume["sample_in_epoch"] if resume else 0
        if not resume or not resume["sample_in_epoch"]:
            return worker_id, 0, 0
        done = resume["sample_in_epoch"]
        ranks = world[0] * world[1]
        batch = self._batch
        if resume["world"] == world and resume["batch_size"] == batch:
            plan_worker, skip = _exact_resume(done, ranks, batch, workers, worker_id)
            return plan_worker, 0, skip
        # Another world shape: continue every canonical sequence from the last whole round.
        canonical = self._canonical_nodes()
        return worker_id, done - done % canonical, 0

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        nodes, ranks_per_node, node, rank = _world()
        worker_id, workers = _worker()
        self._workers = workers
        epoch = self._next_epoch(workers)
        world = (nodes, ranks_per_node, workers)
        plan_worker, resume_from, skip = self._start(world, worker_id, epoch)
        native = self._native()
        it = native.iterate(world, (node, rank, plan_worker), epoch, resume_from, skip)
        try:
            for _, _, values in it:
                yield self._sample(values)
        finally:
            it.close()


__all__ = ["Stream", "StreamingDataset"]
