"""Conversion on many processes or machines: a data frame (pandas, Dask, Spark) or a folder of
files into one MDS dataset, each partition or part written by the native writer as a
sub-dataset of its own, then merged (``ferry.util.merge_index``).

A task that is retried or run twice (a lost Dask worker, a Spark task attempt, speculation)
writes into a folder of its own (``part-KKKKK.<random>``); the driver merges, for each
partition, the attempt the engine reported as the result, so a failed or duplicate attempt
never reaches the merged dataset. Attempts that lost are deleted from a local ``out``; in a
store they are left (no index names them) and logged.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _cli
from .errors import InvalidArgumentError
from .util import _is_remote_url, merge_index as _merge_index
from .writer import MDSWriter

_log = logging.getLogger("ferry.convert")

# The writer arguments mds_kwargs may carry besides out and columns (Mosaic's names).
_WRITER_KWARGS = ("keep_local", "compression", "hashes", "size_limit")
# The folder of one attempt at a partition (_attempt_folder): only these are ever deleted.
_ATTEMPT = re.compile(r"^part-\d{5}\.[0-9a-f]{12}$")


def _join(root: str, name: str) -> str:
    return root.rstrip("/") + "/" + name


def _attempt_folder(partition: int) -> str:
    return f"part-{partition:05d}.{uuid.uuid4().hex[:12]}"


def _infer_columns(frame: Any) -> Dict[str, str]:
    """MDS encodings for a pandas frame's columns, from their dtypes (object columns from their
    first value: str or bytes). Anything else needs ``columns``."""
    columns = {}
    for name, dtype in frame.dtypes.items():
        kind = getattr(dtype, "kind", "O")
        if kind in "iu":
            columns[str(name)] = f"{'uint' if kind == 'u' else 'int'}{dtype.itemsize * 8}"
        elif kind == "f" and dtype.itemsize in (2, 4, 8):
            columns[str(name)] = f"float{dtype.itemsize * 8}"
        elif kind == "O":
            sample = next((v for v in frame[name] if v is not None), None)
            if isinstance(sample, str):
                columns[str(name)] = "str"
            elif isinstance(sample, (bytes, bytearray)):
                columns[str(name)] = "bytes"
            else:
                raise InvalidArgumentError(
                    f"column {name!r}: cannot tell its MDS encoding from {type(sample).__name__} "
                    f"values; pass columns={{{str(name)!r}: ...}} in mds_kwargs")
        else:
            raise InvalidArgumentError(
                f"column {name!r}: no MDS encoding for dtype {dtype}; pass columns in mds_kwargs")
    return columns


def _write_partition(frames: Iterable[Any], partition: int, out: str, columns: Dict[str, str],
                     writer_kwargs: Dict[str, Any],
                     udf_iterable: Optional[Callable[[Any], Iterable[Dict[str, Any]]]]
                     ) -> Dict[str, Any]:
    """Writes one partition (its pandas frames) into an attempt folder of its own below ``out``;
    returns {"partition", "folder", "samples"}. Runs on the engine's worker."""
    folder = _attempt_folder(partition)
    samples = 0
    with MDSWriter(out=_join(out, folder), columns=columns, exist_ok=True,
                   **writer_kwargs) as writer:
        for frame in frames:
            rows = (udf_iterable(frame) if udf_iterable is not None
                    else (dict(zip(frame.columns, row))
                          for row in frame.itertuples(index=False, name=None)))
            for row in rows:
                writer.write(row)
                samples += 1
    return {"partition": partition, "folder": folder, "samples": samples}


def _dask_partition(frame: Any, out: str, columns: Dict[str, str], writer_kwargs: Dict[str, Any],
                    udf_iterable: Any, partition_info: Optional[Dict[str, Any]] = None) -> Any:
    import pandas as pd

    number = partition_info["number"] if partition_info else 0
    return pd.DataFrame([_write_partition([frame], number, out, columns, writer_kwargs,
                                          udf_iterable)])


def _finish(out: str, results: Sequence[Dict[str, Any]], merge: bool) -> None:
    """Merges the winning attempt of each partition, in partition order, and deletes the other
    attempts of a local ``out``."""
    chosen: Dict[int, Dict[str, Any]] = {}
    for r in results:
        if r["partition"] in chosen:
            raise InvalidArgumentError(f"partition {r['partition']} was reported twice")
        chosen[r["partition"]] = r
    folders = [chosen[p]["folder"] for p in sorted(chosen)]
    if merge and folders:
        _merge_index([_join(out, f) + "/index.json" for f in folders], out)
    if not _is_remote_url(out) and os.path.isdir(out):
        keep = set(folders)
        for name in os.listdir(out):
            if _ATTEMPT.match(name) and name not in keep:
                shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    else:
        _log.debug("kept parts %s of %s; attempts that lost stay unreferenced", folders, out)


def dataframe_to_mds(dataframe: Any, merge_index: bool = True,
                     mds_kwargs: Optional[Dict[str, Any]] = None,
                     udf_iterable: Optional[Callable[[Any], Iterable[Dict[str, Any]]]] = None,
                     **kwargs: Any) -> Tuple[str, int]:
    """Writes a data frame as an MDS dataset, as Mosaic's ``dataframe_to_mds`` does: each
    partition with the native writer into a sub-dataset below ``out``, then (``merge_index``)
    one index.json over them in partition order. Returns ``(out, 0)`` (Mosaic's (path, failed
    count): a failure raises here instead).

    Args:
        dataframe: a pandas DataFrame (one partition), a Dask DataFrame (``map_partitions``; run
            on the current Dask client, if any), or a Spark DataFrame (``mapInPandas``; not run
            against Spark in ferry's tests).
        merge_index: merge the partitions' indexes into ``out/index.json``.
        mds_kwargs: the writer's settings: ``out`` (a local folder or a store URL, reachable from
            every worker), ``columns`` (name -> MDS encoding; inferred from the dtypes of a
            pandas or Dask frame when absent), ``keep_local``, ``compression``, ``hashes``,
            ``size_limit``. They may also be passed as keywords (``out=..., columns=...``).
        udf_iterable: a function from one partition's pandas frame to the samples (dicts) to
            write, instead of one sample per row.
    """
    settings = dict(mds_kwargs or {})
    settings.update(kwargs)
    out = settings.pop("out", None)
    if not out or not isinstance(out, str):
        raise InvalidArgumentError("dataframe_to_mds needs out: a local folder or a store URL")
    columns = settings.pop("columns", None)
    unknown = sorted(set(settings) - set(_WRITER_KWARGS))
    if unknown:
        raise InvalidArgumentError(f"dataframe_to_mds: unknown settings {unknown}")
    writer_kwargs = {k: settings[k] for k in _WRITER_KWARGS if k in settings}
    module = type(dataframe).__module__

    if module.startswith("pyspark"):
        if columns is None:
            raise InvalidArgumentError("a Spark DataFrame needs columns in mds_kwargs")

        def spark_partition(frames):  # runs on Spark's executors
            import pandas as pd
            from pyspark import TaskContext

            yield pd.DataFrame([_write_partition(frames, TaskContext.get().partitionId(), out,
                                                 columns, writer_kwargs, udf_iterable)])

        rows = dataframe.mapInPandas(
            spark_partition, "partition long, folder string, samples long").collect()
        results = [row.asDict() for row in rows]
    elif module.startswith("dask"):
        import pandas as pd

        if columns is None:
            columns = _infer_columns(dataframe._meta_nonempty)
        meta = pd.DataFrame({"partition": pd.Series(dtype="int64"),
                             "folder": pd.Series(dtype="object"),
                             "samples": pd.Series(dtype="int64")})
        done = dataframe.map_partitions(_dask_partition, out, columns, writer_kwargs,
                                        udf_iterable, meta=meta).compute()
        results = done.to_dict("records")
    elif module.startswith("pandas"):
        if columns is None:
            columns = _infer_columns(dataframe)
        results = [_write_partition([dataframe], 0, out, columns, writer_kwargs, udf_iterable)]
    else:
        raise InvalidArgumentError(
            f"dataframe_to_mds takes a pandas, Dask or Spark DataFrame, not {type(dataframe)}")
    _finish(out, results, merge_index)
    return out, 0


def _convert_part(src: str, out: str, part: int, parts: int, args: Sequence[str]
                  ) -> Dict[str, Any]:
    """One part of files_to_mds: ``ferry convert --part`` into an attempt folder of its own."""
    folder = _attempt_folder(part)
    command = [_cli.executable(), "convert", src, out, "--part", f"{part}/{parts}",
               "--part-name", folder, "-q", *args]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ferry convert part {part} of {parts} failed (exit "
                           f"{done.returncode}): {done.stderr.strip()[-2000:]}")
    return {"partition": part, "folder": folder, "samples": None}


def files_to_mds(src: str, out: str, *, parts: Optional[int] = None, client: Any = None,
                 processes: Optional[int] = None, size_limit: Optional[str] = None,
                 compression: Optional[str] = None, hashes: Optional[str] = None,
                 columns: Optional[str] = None, encoding: Optional[str] = None,
                 extensions: Optional[str] = None, skip_other: bool = False) -> str:
    """Converts a folder of files or an ImageFolder (local, or a prefix in a store) into one MDS
    dataset at ``out``, in ``parts`` parts: the files in ``ferry convert``'s order, cut into
    equal consecutive slices, each converted by ``ferry convert --part`` on a
    ``dask.distributed`` ``client``'s workers when one is given, else on ``processes`` local
    processes; then merged. The result is the dataset one ``ferry convert src out`` writes,
    sample for sample (its shards also cut at the parts' ends), with its classes.json. Options
    are ``ferry convert``'s (``docs/cli.md``). Returns ``out``.

    ``src`` and ``out`` must be reachable from every worker (a store URL, or a shared folder).
    """
    if parts is None:
        workers = len(client.scheduler_info()["workers"]) if client is not None else 0
        parts = max(1, 4 * (workers or processes or os.cpu_count() or 1))
    if parts < 1:
        raise InvalidArgumentError(f"parts must be at least 1, not {parts}")
    args: List[str] = []
    for flag, value in (("--size-limit", size_limit), ("--compression", compression),
                        ("--hashes", hashes), ("--columns", columns),
                        ("--encoding", encoding), ("--extensions", extensions)):
        if value is not None:
            args += [flag, str(value)]
    if skip_other:
        args.append("--skip-other")
    if client is not None:
        futures = client.map(_convert_part, [src] * parts, [out] * parts, range(parts),
                             [parts] * parts, [args] * parts, pure=False)
        results = client.gather(futures)
    else:
        with ThreadPoolExecutor(max_workers=processes or os.cpu_count() or 1) as pool:
            results = list(pool.map(lambda k: _convert_part(src, out, k, parts, args),
                                    range(parts)))
    _finish(out, results, merge=True)
    return out


__all__ = ["dataframe_to_mds", "files_to_mds"]
