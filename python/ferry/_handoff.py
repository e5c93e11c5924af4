"""How a torch DataLoader worker hands a sample's bytes to the main process.

torch pickles what a worker's ``collate_fn`` returns and sends it through a pipe: 110 KB of
``bytes`` per sample cost more CPU than everything ferry does to fetch, cache and split it
(docs/benchmarks.md, "CPU per GB"), and set the drop-in loop's ceiling. Yet a sample read from
a complete shard in the cache folder lies in a file the main process can read as well. So in a
worker ferry hands out such fields as :class:`SampleBytes` - real ``bytes``, which a transform
or ``collate_fn`` uses as any other - and multiprocessing's pickler (the one torch's queues use,
and only that one: ``pickle.dumps`` and ``torch.save`` still store the bytes) sends where they
lie instead: path, inode, offset, length. The main process reads them back from the file with
one ``pread`` into a plain ``bytes``.

A file is never changed in place (a shard is published by a rename), and the main process
opens it by path only if it is still the inode the worker read. If it is gone (evicted under a
``cache_limit`` by another process before the main process took the batch), the main process
reads the sample again through its own dataset. ``FERRY_SAMPLE_HANDOFF=copy`` turns the hand-off
off (the bytes then travel through the pipe).
"""

import os
import threading
import weakref
from collections import OrderedDict
from multiprocessing.reduction import ForkingPickler
from typing import Any, Optional, Tuple

from .errors import DataLossError


class SampleBytes(bytes):
    """A sample field's bytes in a DataLoader worker: a ``bytes`` (a subclass) that crosses to
    the main process as its place in the cache file."""


def enabled() -> bool:
    return os.environ.get("FERRY_SAMPLE_HANDOFF", "file") != "copy"


# Datasets of this process by token, for reading a sample again when its file is gone.
_datasets: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
_next_token = [os.getpid() << 20]
_lock = threading.Lock()


def register(dataset: Any) -> int:
    """A token that names `dataset` in this process (and in the workers forked from it)."""
    with _lock:
        _next_token[0] += 1
        _datasets[_next_token[0]] = dataset
        return _next_token[0]


class _OpenFiles:
    """The cache files the main process reads hand-offs from, kept open (64 at most): one
    ``pread`` per field. Keyed by (path, inode): an fd stays valid for the inode it opened even
    if the path is removed or published again. An open fd also keeps an evicted file's blocks
    on disk, so every _SWEEP_EVERY reads the fds of files no longer in the folder are closed."""

    _MAX = 64
    _SWEEP_EVERY = 256

    def __init__(self) -> None:
        self._fds: "OrderedDict[Tuple[bytes, int], int]" = OrderedDict()
        self._lock = threading.Lock()
        self._reads = 0

    def forget_inherited(self) -> None:
        """In a child made by fork: the parent's fds are not this process's to keep or close,
        and its lock may have been held by a thread the child does not have."""
        self._fds = OrderedDict()
        self._lock = threading.Lock()

    def read(self, path: bytes, inode: int, offset: int, length: int) -> Optional[bytes]:
        """The bytes at [offset, offset + length) of the file `path` if it is still `inode`;
        None when it is gone or another file now."""
        key = (path, inode)
        with self._lock:
            self._reads += 1
            if self._reads % self._SWEEP_EVERY == 0:
                self._close_removed()
            fd = self._fds.get(key)
            if fd is not None:
                self._fds.move_to_end(key)
        if fd is None:
            fd = self._open(path, inode)
            if fd is None:
                return None
        data = os.pread(fd, length, offset)
        return data if len(data) == length else None

    def _close_removed(self) -> None:
        """Closes the fds of files removed from the folder (evicted). Holds the lock."""
        for key, fd in list(self._fds.items()):
            if os.fstat(fd).st_nlink == 0:
                os.close(fd)
                del self._fds[key]

    def _open(self, path: bytes, inode: int) -> Optional[int]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        if os.fstat(fd).st_ino != inode:
            os.close(fd)
            return None
        with self._lock:
            known = self._fds.get((path, inode))
            if known is not None:  # another thread opened it meanwhile
                os.close(fd)
                return known
            self._fds[(path, inode)] = fd
            while len(self._fds) > self._MAX:
                _, old = self._fds.popitem(last=False)
                os.close(old)
        return fd


_files = _OpenFiles()
os.register_at_fork(after_in_child=_files.forget_inherited)


def _from_file(path: bytes, inode: int, offset: int, sample_id: int, column: int, token: int,
               length: int) -> bytes:
    data = _files.read(path, inode, offset, length)
    if data is not None:
        return data
    dataset = _datasets.get(token)
    if dataset is None:
        raise DataLossError(
            f"{os.fsdecode(path)}: sample {sample_id}'s bytes were removed from the cache folder "
            f"before this process read them, and the dataset that could read them again is gone")
    _, _, values = dataset._native().get(sample_id)
    if isinstance(values, dict):  # a shard whose columns are not the dataset's: in column order
        values = list(values.values())
    return bytes(values[column])


def _reduce(field: SampleBytes):
    at = getattr(field, "_at", None)
    if at is None:
        return bytes, (bytes(field),)
    return _from_file, (*at, len(field))


ForkingPickler.register(SampleBytes, _reduce)
