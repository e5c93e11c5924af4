"""ferry.DataLoader: batches of a StreamingDataset or a FileDataset made in native threads.

Worker threads fetch, decode, transform and collate; Python receives a dict of torch tensors that
share the native buffers (no copy) - no worker processes, no fork, no shared memory. Batches come
in the order torch's DataLoader with ``num_workers=num_threads`` would give, so ``state_dict`` /
``load_state_dict`` resume exactly as with ``StreamingDataLoader``.

``stats()`` says how long the training loop waited on data; ``ferry.diagnose`` (in
``_diagnosis``) turns that into a verdict.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from . import _ferry, _node
from .dataset import StreamingDataset
from .files import FileDataset
from .errors import InvalidArgumentError
from .transforms import Transform, pipeline

_BATCHABLE = {"bytes", "str", "jpeg", "png", "int", "uint8", "uint16", "uint32", "uint64", "int8",
              "int16", "int32", "int64", "float16", "float32", "float64", "str_int", "str_float"}


def _metric_sum(values: Dict[str, int], prefix: str, suffix: str) -> int:
    return sum(v for k, v in values.items() if k.startswith(prefix) and k.endswith(suffix))


class LoaderStats:
    """What one epoch (so far) of a DataLoader did."""

    def __init__(self) -> None:
        self.batches = 0
        self.samples = 0
        self.wait_s = 0.0      # time the training loop spent inside next(), waiting on data
        self.compute_s = 0.0   # time between batches: the training step
        self.started = time.perf_counter()
        self._metrics = _ferry.metrics()
        self.bytes_fetched = 0
        self.cache_hits = 0
        self.cache_misses = 0

    def _update_metrics(self) -> None:
        now = _ferry.metrics()

        def delta(name: str) -> int:
            return now.get(name, 0) - self._metrics.get(name, 0)

        self.bytes_fetched = _source_bytes(now) - _source_bytes(self._metrics)
        self.cache_hits = delta("/ferry/cache/hits")
        self.cache_misses = delta("/ferry/cache/misses")

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    @property
    def waiting_fraction(self) -> float:
        total = self.wait_s + self.compute_s
        return self.wait_s / total if total > 0 else 0.0

    @property
    def samples_per_s(self) -> float:
        total = self.wait_s + self.compute_s
        return self.samples / total if total > 0 else 0.0

    @property
    def cache_hit_rate(self) -> Optional[float]:
        total = self.cache_hits + self.cache_misses
        return self.cache_hits / total if total else None

    def as_dict(self) -> Dict[str, Any]:
        return {"batches": self.batches, "samples": self.samples, "wait_s": self.wait_s,
                "compute_s": self.compute_s, "waiting_fraction": self.waiting_fraction,
                "samples_per_s": self.samples_per_s, "bytes_fetched": self.bytes_fetched,
                "cache_hit_rate": self.cache_hit_rate}

    def __str__(self) -> str:
        hit = "-" if self.cache_hit_rate is None else f"{100 * self.cache_hit_rate:.0f} %"
        return (f"{self.batches} batches, {self.samples} samples: "
                f"{100 * self.waiting_fraction:.1f} % waiting on data "
                f"({self.wait_s:.2f} s waiting, {self.compute_s:.2f} s between batches), "
                f"{self.samples_per_s:.0f} samples/s, {self.bytes_fetched / 1e6:.1f} MB fetched, "
                f"cache hit rate {hit}")


class _Epoch:
    """One pass over the loader; closing it (or dropping it) stops the native threads."""

    def __init__(self, loader: "DataLoader", native: Any) -> None:
        self._loader = loader
        self._native = native
        self._last = None

    def __iter__(self) -> "_Epoch":
        return self

    def __next__(self) -> Dict[str, Any]:
        stats = self._loader._stats
        start = time.perf_counter()
        if self._last is not None:
            stats.compute_s += start - self._last
        try:
            batch = next(self._native)
        except StopIteration:
            stats._update_metrics()
            self.close()
            raise
        end = time.perf_counter()
        stats.wait_s += end - start
        self._last = end
        return self._loader._to_torch(batch)

    def close(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            native.close()
            self._native = None

    def __del__(self) -> None:
        self.close()


class DataLoader:
    """Batches of ``dataset`` made by ``num_threads`` native threads.

    Args:
        dataset: a ``ferry.StreamingDataset`` or a ``ferry.FileDataset``.
        batch_size: samples per batch (per rank).
        num_threads: worker threads (default: the cores this process may use).
        prefetch_factor: finished batches each thread keeps ready.
        drop_last: drop a last, partial batch.
        transform: ``ferry.transforms`` for the image (jpeg/png) columns: a list or ``Compose``
            applied to every image column, or a dict of column -> list. An image column without
            one comes as a list of the encoded files.
        columns: the columns to load (default: every column the loader can batch: numbers,
            bytes, str, jpeg, png). A WebDataset dataset's samples name their own fields, so
            they are named here (``["jpg", "cls"]``) and read by extension: jpg/jpeg and png as
            images, cls (and class, count, index, id) as integers, txt as str, others as bytes.
        pin_memory: copy batches into pinned memory when CUDA is available.
        seed: of the random transforms (default: the dataset's shuffle_seed).

    Batches are dicts: image columns as uint8 or float32 tensors ``[B, H, W, 3]`` / ``[B, 3, H,
    W]``, integer columns as int64 tensors, float columns as float64 tensors, bytes/str columns
    as lists, and ``"__ids__"``: the global sample ids.
    """

    def __init__(self, dataset: StreamingDataset, batch_size: int = 1,
                 num_threads: Optional[int] = None, prefetch_factor: int = 2,
                 drop_last: bool = False,
                 transform: Union[None, Transform, Sequence[Transform],
                                  Mapping[str, Any]] = None,
                 columns: Optional[Sequence[str]] = None, pin_memory: bool = False,
                 seed: Optional[int] = None) -> None:
        if not isinstance(dataset, (StreamingDataset, FileDataset)):
            raise InvalidArgumentError(
                "ferry.DataLoader reads a ferry.StreamingDataset or a ferry.FileDataset")
        for name, value in (("batch_size", batch_size), ("prefetch_factor", prefetch_factor)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be a whole number >= 1, got {value!r}")
        if num_threads is None:
            num_threads = max(1, len(os.sched_getaffinity(0)))
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise InvalidArgumentError(f"num_threads must be >= 1, got {num_threads!r}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.prefetch_factor = prefetch_factor
        self.drop_last = bool(drop_last)
        self.pin_memory = bool(pin_memory) and torch.cuda.is_available()
        self.seed = dataset.shuffle_seed if seed is None else int(seed)
        kinds = {name: _ferry.encoding_kind(enc) for name, enc in dataset._loader_columns()}
        if not kinds:  # samples that name their own fields (WebDataset): read by extension
            if columns is None:
                raise InvalidArgumentError(
                    "this dataset's samples name their own fields (WebDataset tars): pass "
                    "columns=, e.g. ['jpg', 'cls']")
            kinds = {c: _ferry.encoding_kind(_ferry.field_encoding(c)) for c in columns}
        if columns is None:
            columns = [c for c in dataset.columns if kinds[c] in _BATCHABLE]
        unknown = [c for c in columns if c not in kinds]
        if unknown:
            raise InvalidArgumentError(f"the dataset has no column {unknown[0]!r} "
                                       f"(columns: {', '.join(dataset.columns)})")
        images = [c for c in columns if kinds[c] in ("jpeg", "png")]
        if transform is None:
            per_column: Dict[str, Any] = {}
        elif isinstance(transform, Mapping):
            per_column = dict(transform)
            missing = [c for c in per_column if c not in images]
            if missing:
                raise InvalidArgumentError(f"transform for {missing[0]!r}, which is not a loaded "
                                           f"jpeg/png column (those are: {images})")
        else:
            per_column = {c: transform for c in images}
            if not images:
                raise InvalidArgumentError("a transform was given but no jpeg/png column is loaded")
        self._columns = [(c, pipeline(per_column[c]) if c in per_column else None) for c in columns]
        # The loader's own native dataset: the order must deal batches of this batch size.
        self._dataset_options = dataset._loader_options(batch_size)
        self._native_dataset = None
        self._pid = None
        self._stats = LoaderStats()
        self._epoch: Optional[_Epoch] = None
        self.num_samples_yielded = 0

    def _native(self):
        if self._pid != os.getpid():
            _node.prepare_process()
            self._native_dataset = _ferry.Dataset(self._dataset_options)
            self._pid = os.getpid()
        return self._native_dataset

    def _to_torch(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        out = {}
        for name, value in batch.items():
            if hasattr(value, "dtype"):
                value = torch.from_numpy(value)  # shares the native buffer
                if self.pin_memory:
                    value = value.pin_memory()
            out[name] = value
        self.num_samples_yielded += len(batch["__ids__"])
        self._stats.batches += 1
        self._stats.samples += len(batch["__ids__"])
        return out

    def __len__(self) -> int:
        nodes, ranks_per_node, _, _ = self.dataset._world()
        return self.dataset._loader_batches(self._native(),
                                            (nodes, ranks_per_node, self.num_threads),
                                            self.batch_size, self.drop_last)

    def __iter__(self) -> _Epoch:
        if self._epoch is not None:
            self._epoch.close()
        nodes, ranks_per_node, node, rank = self.dataset._world()
        world = (nodes, ranks_per_node, self.num_threads)
        self.dataset._begin_epoch(self.num_threads, self.batch_size)
        epoch = self.dataset._next_epoch(1)
        starts = [self.dataset._start(world, t, epoch) for t in range(self.num_threads)]
        native = _ferry.Loader(self._native(), self._columns, self.batch_size, self.num_threads,
                               self.prefetch_factor, self.drop_last, self.seed, world,
                               (node, rank), epoch, starts)
        self.num_samples_yielded = 0
        self._stats = LoaderStats()
        self._epoch = _Epoch(self, native)
        return self._epoch

    def close(self) -> None:
        """Stops the threads of the epoch in progress (also done when the loader is deleted)."""
        epoch = getattr(self, "_epoch", None)  # absent when __init__ raised
        if epoch is not None:
            epoch.close()
            self._epoch = None

    def __del__(self) -> None:
        self.close()

    def stats(self) -> LoaderStats:
        """The epoch in progress (or the last one)."""
        self._stats._update_metrics()
        return self._stats

    def state_dict(self) -> Dict[str, Any]:
        nodes, ranks_per_node, _, _ = self.dataset._world()
        self.dataset._workers, self.dataset._batch = self.num_threads, self.batch_size
        return self.dataset.state_dict(self.num_samples_yielded * nodes * ranks_per_node, False)

    def load_state_dict(self, obj: Dict[str, Any]) -> None:
        self.dataset._workers, self.dataset._batch = self.num_threads, self.batch_size
        self.dataset.load_state_dict(obj)


def _source_bytes(values: Dict[str, int]) -> int:
    """Bytes read from the dataset's sources (every store's /ferry/storage/<scheme>/bytes_read):
    the shards a StreamingDataset downloads, the files a FileDataset fetches into its cache or,
    while packing, straight into the pack. The cache's own counter misses the last."""
    return _metric_sum(values, "/ferry/storage/", "/bytes_read")


__all__ = ["DataLoader", "LoaderStats"]
