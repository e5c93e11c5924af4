"""FileDataset: a folder of many small files - a remote prefix or a mounted path - as a dataset.

For data that cannot be converted to shards first: point it at ``s3://bucket/images/`` (or
``/Volumes/catalog/schema/volume/images``) and train. Iterating fetches the coming files with
many requests in flight into a local cache shared by every process on the node; later epochs
read the cache (or, with ``pack=True``, a few local MDS shards written during the first epoch).
The native engine does the work (docs/files.md); this module is the thin Python face.
"""

from __future__ import annotations

import io
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _ferry
from .errors import InvalidArgumentError
from .stream import _count, _default_local, _path, _size
from .world import _check_same_plan, _exact_resume, _NativeDataset, _worker


def _pil_image(data: bytes):
    from PIL import Image  # imported only when images are asked for

    image = Image.open(io.BytesIO(data))
    image.load()
    return image


class FileDataset(_NativeDataset):
    """The files under ``root``, as samples ``{"path", "data", "label"}``.

    Iterating it (alone or under ``torch.utils.data.DataLoader(num_workers=N)`` and
    torch.distributed's ``RANK``/``WORLD_SIZE``) reads every file once per epoch, fetched ahead
    of the order; ``ds[i]`` reads file ``i`` of the listing alone; ``len(ds)`` is the files one
    rank reads per epoch.

    Args:
        root: a store URL (``s3://``, ``az://``, ``gs://``, ``dbfs:/Volumes/...``, ``https://``) or a
            local folder.
        local: the cache folder (default: one under the temp folder named after ``root``);
            ``None`` with a local ``root`` reads it in place (pass ``local=False``).
        cache_limit: bytes (or ``"100gb"``) of cached files; least recently used go first.
        shuffle, shuffle_seed: a new order every epoch, a function of the seed and the epoch.
        drop_last: cut the epoch to a multiple of the ranks instead of padding by repetition.
        concurrency: files fetched at once per iterator, or ``"auto"`` (sized from the measured
            latency and file size: requests in flight = bandwidth x latency x 2 / file size).
        max_bytes_in_flight: bytes fetched ahead and not yet read, per iterator.
        labels: ``"folder"`` (the first folder under the root is the class, as torchvision's
            ImageFolder; files directly under the root are left out) or ``None``.
        extensions: keep only files ending so (``["jpg", "jpeg"]``); default every file.
        encoding: the ``data`` column's encoding for ``ferry.DataLoader``: ``"auto"`` (the
            image kind - jpeg or png - most listed files are named as, else ``"bytes"``),
            ``"jpeg"``, ``"png"`` or ``"bytes"``. A listed file whose name does not match it
            (a ``notes.txt`` among JPEGs) is an ``InvalidArgumentError`` at open naming it,
            unless ``skip_other``.
        skip_other: leave the files that do not match ``encoding`` out of the dataset (their
            count is ``skipped_other``) instead of refusing them.
        refresh: list the root again although a listing is stored in the cache folder.
        listing_max_age: seconds after which a stored listing is listed again.
        on_missing: ``"error"`` (a file gone since the listing stops the epoch, naming it) or
            ``"skip"`` (skipped and counted in ``ferry.metrics()["/ferry/files/missing"]``).
        pack: also write each epoch's fetched files into local MDS shards that later epochs read.
        decode: ``"bytes"`` (the file as is), ``"pil"`` or ``"numpy"`` (images).
        batch_size: the batch the torch DataLoader makes (for exact resumption only).

    Attributes: ``classes``, ``data_encoding`` (what ``encoding`` decided) and
    ``skipped_other`` (files left out by ``skip_other``).

    ``ferry.DataLoader(ds, ...)`` reads it too, decoding and transforming the images in native
    threads: its columns are ``data`` (``data_encoding``: jpeg, png or bytes, see ``encoding``),
    ``label`` and ``path`` - the columns ``ferry convert`` writes. ``state_dict`` / ``load_state_dict`` resume an
    epoch exactly under the same world shape and batch size.
    """

    def __init__(
        self,
        root: str,
        *,
        local: Union[str, None, bool] = None,
        cache_limit: Union[int, str, None] = None,
        shuffle: bool = False,
        shuffle_seed: int = 9176,
        drop_last: bool = False,
        concurrency: Union[int, str] = "auto",
        max_bytes_in_flight: Union[int, str, None] = None,
        labels: Optional[str] = "folder",
        extensions: Optional[Sequence[str]] = None,
        encoding: str = "auto",
        skip_other: bool = False,
        refresh: bool = False,
        listing_max_age: Optional[float] = None,
        on_missing: str = "error",
        pack: bool = False,
        decode: str = "bytes",
        batch_size: Optional[int] = None,
    ) -> None:
        super().__init__()
        root = _path(root, "root")
        if root is None:
            raise InvalidArgumentError("root is required: a store URL or a local folder")
        if local is False:
            local = None
        elif local is None or local is True:
            local = _default_local(root, None)
        else:
            local = _path(local, "local")
        if decode not in ("bytes", "pil", "numpy"):
            raise InvalidArgumentError(f"decode must be 'bytes', 'pil' or 'numpy', not {decode!r}")
        if concurrency == "auto":
            concurrency = None
        if labels not in ("folder", None):
            raise InvalidArgumentError(f"labels must be 'folder' or None, not {labels!r}")
        if isinstance(extensions, str):
            extensions = [extensions]
        if encoding not in ("auto", "jpeg", "png", "bytes"):
            raise InvalidArgumentError(
                f"encoding must be 'auto', 'jpeg', 'png' or 'bytes', not {encoding!r}")
        self.root = root
        self.local = str(local) if local is not None else None
        self.shuffle = bool(shuffle)
        self.shuffle_seed = _count(shuffle_seed, "shuffle_seed")
        self.drop_last = bool(drop_last)
        self.decode = decode
        self.batch_size = _count(batch_size, "batch_size", 1) or 1
        self._options = {
            "root": root,
            "local": self.local,
            "cache_limit": _size(cache_limit, "cache_limit"),
            "shuffle": self.shuffle,
            "shuffle_seed": self.shuffle_seed,
            "drop_last": self.drop_last,
            "concurrency": _count(concurrency, "concurrency", 1),
            "max_bytes_in_flight": _size(max_bytes_in_flight, "max_bytes_in_flight"),
            "labels": "folder" if labels == "folder" else "none",
            "extensions": list(extensions) if extensions else None,
            "encoding": encoding,
            "skip_other": bool(skip_other),
            "refresh": bool(refresh),
            "listing_max_age": None if listing_max_age is None else int(listing_max_age),
            "on_missing": on_missing,
            "pack": bool(pack),
        }
        self._workers = 1  # DataLoader workers per rank (ferry.DataLoader's threads)
        self._batch = self.batch_size
        self._files: Optional[List[Tuple[str, int, int]]] = None
        # Open now: a bad URL or option, or an unreadable root, fails here, not in a worker. A
        # refresh happens once: workers reuse the listing this open stored.
        native = self._native()
        self._options["refresh"] = False
        self._num_files = len(native)
        self.classes: List[str] = list(native.classes)
        self.data_encoding: str = native.data_encoding
        self.skipped_other: int = native.skipped_other
        _check_same_plan({
            "dataset": "FileDataset", "root": root, "files": self._num_files,
            "shuffle": self.shuffle, "shuffle_seed": self.shuffle_seed,
            "drop_last": self.drop_last, "batch_size": self.batch_size,
            "labels": self._options["labels"], "extensions": self._options["extensions"],
        })

    def _open_native(self):
        return _ferry.FileDataset(self._options)

    # -- samples ------------------------------------------------------------------------------

    @property
    def num_files(self) -> int:
        """Files in the listing."""
        return self._num_files

    @property
    def files(self) -> List[Tuple[str, int, int]]:
        """(path, size, label) of every file in the listing, sorted by path."""
        if self._files is None:  # built once: the listing does not change while open
            self._files = self._native().files
        return self._files

    @property
    def listed(self) -> bool:
        """True when opening listed the root (False: the listing stored in ``local`` was reused)."""
        return self._native().listed

    def __len__(self) -> int:
        """Files one rank reads per epoch."""
        nodes, ranks_per_node, _, _ = self._world()
        ranks = nodes * ranks_per_node
        return self._num_files // ranks if self.drop_last else -(-self._num_files // ranks)

    def _sample(self, raw) -> Dict[str, Any]:
        _, path, label, data = raw
        if self.decode != "bytes":
            data = _pil_image(data)
            if self.decode == "numpy":
                import numpy as np

                data = np.asarray(data)
        return {"path": path, "data": data, "label": label}

    def __getitem__(self, index: int) -> Dict[str, Any]:
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidArgumentError(f"a file index is an int, not {index!r}")
        if index < 0:
            index += self._num_files
        if not 0 <= index < self._num_files:
            raise IndexError(f"file index out of range (the listing has {self._num_files})")
        return self._sample(self._native().get(index))

    # -- epochs and iteration -----------------------------------------------------------------

    def order(self, epoch: int, worker: Tuple[int, int] = (0, 1)) -> List[int]:
        """Listing indices this rank's DataLoader worker ``worker`` = (id, count) reads in
        ``epoch``, in order."""
        nodes, ranks_per_node, node, rank = self._world()
        return self._native().order((nodes, ranks_per_node, worker[1]), (node, rank, worker[0]),
                                    epoch)

    # -- resumption ---------------------------------------------------------------------------

    def state_dict(self, num_samples: int, from_beginning: bool = True) -> Dict[str, Any]:
        """Where the world is: ``num_samples`` files read this epoch over all ranks."""
        nodes, ranks_per_node, _, _ = self._world()
        with self._epochs.get_lock():
            epoch = self._epochs[0]
        offset = 0
        if not from_beginning and self._resume and self._resume["epoch"] == epoch:
            offset = self._resume["sample_in_epoch"]
        return {"epoch": epoch, "sample_in_epoch": offset + int(num_samples),
                "shuffle_seed": self.shuffle_seed, "world": [nodes, ranks_per_node, self._workers],
                "batch_size": self._batch}

    def load_state_dict(self, obj: Dict[str, Any]) -> None:
        """Resumes at the state ``state_dict`` returned (same world shape and batch size)."""
        try:
            epoch = _count(obj["epoch"], "epoch")
            done = _count(obj["sample_in_epoch"], "sample_in_epoch")
        except KeyError as e:
            raise InvalidArgumentError(f"state has no {e.args[0]!r}") from None
        if obj.get("shuffle_seed") not in (None, self.shuffle_seed):
            raise InvalidArgumentError(f"the state was saved with shuffle_seed "
                                       f"{obj['shuffle_seed']}, this dataset has "
                                       f"{self.shuffle_seed}")
        with self._epochs.get_lock():
            self._epochs[0] = epoch
            self._epochs[1] = 0
        self._resume = {"epoch": epoch, "sample_in_epoch": done,
                        "world": tuple(obj.get("world") or ()), "batch_size": obj.get("batch_size")}

    # -- what ferry.DataLoader asks of a dataset ------------------------------------------------

    @property
    def columns(self) -> List[str]:
        return ["data", "label", "path"]

    def _loader_columns(self) -> List[Tuple[str, str]]:
        return [("data", self.data_encoding), ("label", "int"), ("path", "str")]

    def _loader_options(self, batch_size: int) -> Dict[str, Any]:
        return {"files": dict(self._options), "batch_size": batch_size}

    def _loader_batches(self, native, world: Tuple[int, int, int], batch_size: int,
                        drop_last: bool) -> int:
        _, _, node, rank = self._world()
        total = 0
        for t in range(world[2]):
            n = len(self._native().order(world, (node, rank, t), self.next_epoch))
            total += n // batch_size if drop_last else -(-n // batch_size)
        return total

    def _begin_epoch(self, workers: int, batch_size: Optional[int] = None) -> None:
        self._workers = max(1, workers)
        self._batch = batch_size or self.batch_size

    def _start(self, world: Tuple[int, int, int], worker_id: int, epoch: int):
        """(order worker, 0, files it already read) for this worker."""
        resume = self._resume if self._resume and self._resume["epoch"] == epoch else None
        if not resume or not resume["sample_in_epoch"]:
            return worker_id, 0, 0
        if resume["world"] != world or resume["batch_size"] != self._batch:
            raise InvalidArgumentError(
                f"a FileDataset resumes under the world and batch size it was saved with "
                f"({resume['world']}, batch {resume['batch_size']}), not {world}, batch "
                f"{self._batch}")
        plan_worker, skip = _exact_resume(resume["sample_in_epoch"], world[0] * world[1],
                                          self._batch, world[2], worker_id)
        return plan_worker, 0, skip

    # -- iteration ----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        nodes, ranks_per_node, node, rank = self._world()
        worker_id, workers = _worker()
        self._workers = workers
        epoch = self._next_epoch(workers)
        world = (nodes, ranks_per_node, workers)
        plan_worker, _, skip = self._start(world, worker_id, epoch)
        it = self._native().iterate(world, (node, rank, plan_worker), epoch, skip)
        try:
            for raw in it:
                yield self._sample(raw)
        finally:
            it.close()


__all__ = ["FileDataset"]
