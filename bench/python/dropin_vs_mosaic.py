"""The loop a Mosaic Streaming user writes, run on ferry and on Mosaic Streaming side by side
(issue 26): a StreamingDataset under torch's DataLoader, shuffled, raw bytes (a `bytes` column:
nothing decoded), batches of 64, two epochs into an empty cache folder, from s3rver through
ferry-wan. Mosaic Streaming runs from a checkout of its source (--mosaic-src; never part of
this repository) with its defaults and 8 workers; ferry.StreamingDataset the same loop with 2
workers (its workers hand sample bytes over by file, python/ferry/_handoff.py, and once more
with FERRY_SAMPLE_HANDOFF=copy: through torch's pipe), and ferry.DataLoader (native threads)
beside them. With --ceiling DIR (the same dataset in a local folder) one more method measures
torch's own ceiling for handing over `bytes`: the same loop over samples of the same sizes made
in memory (a fresh `bytes` per sample), which no dataset whose workers send their bytes
through the pipe can beat. Methods alternate within each round, each run in a process of its
own, after one unrecorded run that warms s3rver up. Prints a markdown table: epoch 1 and 2
samples/s and the time to the first batch.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/dropin_vs_mosaic.py URL \\
        --local DIR --mosaic-src PATH [--rounds 3] [--mosaic-workers 8] [--workers 2] \\
        [--ceiling DIR]

URL is an MDS dataset with a `data` bytes column (bench/dropin_vs_mosaic.sh writes one); the
store settings come from the environment (AWS_*; S3_ENDPOINT_URL for Mosaic).
"""

import argparse
import json
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import time
import types

import torch.utils.data


class _Absent(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stands in for `transformers` and its submodules, which Mosaic Streaming imports at the top
    of modules the loop measured never uses (its text datasets, its StreamingDataLoader's
    batch types) and which this machine lacks: every name in them is a placeholder class."""

    def find_spec(self, name, path=None, target=None):
        if name == "transformers" or name.startswith("transformers."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: type(attr, (dict,), {})
        return module

    def exec_module(self, module):
        pass


def _mosaic(src):
    """Imports Mosaic Streaming from the checkout `src`."""
    if importlib.util.find_spec("transformers") is None:
        sys.meta_path.append(_Absent())
    sys.path.insert(0, src)
    import streaming
    return streaming


def _collate(samples):
    return [s["data"] for s in samples], [int(s["label"]) for s in samples]


def _epochs(loader, batch):
    """(epoch 1 samples/s, epoch 2 samples/s, seconds to the first batch of epoch 1)."""
    out = []
    first = None
    for epoch in range(2):
        start = time.monotonic()
        n = 0
        for data, _ in loader:
            if first is None:
                first = time.monotonic() - start
            n += len(data)
        out.append(n / (time.monotonic() - start))
    return out[0], out[1], first


def run_mosaic(streaming, url, local, batch, workers):
    # Its defaults: predownload 8 x batch_size per worker. (Given explicitly with 8 workers,
    # Mosaic 0.14.0.dev0 read a sample of a shard still being written: an IndexError.)
    ds = streaming.StreamingDataset(remote=url, local=local, shuffle=True, batch_size=batch)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers,
                                         collate_fn=_collate)
    return _epochs(loader, batch)


def run_ferry_torch(url, local, batch, workers):
    import ferry
    ds = ferry.StreamingDataset(remote=url, local=local, shuffle=True, batch_size=batch)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers,
                                         collate_fn=_collate)
    return _epochs(loader, batch)


def run_ferry_native(url, local, batch, workers):
    import ferry
    ds = ferry.StreamingDataset(remote=url, local=local, shuffle=True, batch_size=batch)
    loader = ferry.DataLoader(ds, batch_size=batch, num_threads=workers)
    out = []
    first = None
    for epoch in range(2):
        start = time.monotonic()
        n = 0
        for b in loader:
            if first is None:
                first = time.monotonic() - start
            n += len(b["label"])
        out.append(n / (time.monotonic() - start))
    return out[0], out[1], first


class _InMemory(torch.utils.data.IterableDataset):
    """Samples of the given sizes, each a fresh `bytes` cut from one random buffer, split
    between the DataLoader's workers as a streaming dataset splits them."""

    def __init__(self, sizes):
        self.sizes = sizes

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        buffer = memoryview(os.urandom(max(self.sizes)))
        for i in range(worker, len(self.sizes), workers):
            yield {"data": bytes(buffer[:self.sizes[i]]), "label": i}


def run_torch_ceiling(folder, batch, workers):
    import ferry
    sizes = [len(s["data"]) for s in ferry.StreamingDataset(local=folder, batch_size=batch)]
    loader = torch.utils.data.DataLoader(_InMemory(sizes), batch_size=batch, num_workers=workers,
                                         collate_fn=_collate)
    return _epochs(loader, batch)


def _one(args):
    """One run, in a process of its own (--one): the libraries share nothing across runs."""
    local = os.path.join(os.path.abspath(args.local), "cache")
    shutil.rmtree(args.local, ignore_errors=True)
    if args.one == "mosaic":
        e1, e2, first = run_mosaic(_mosaic(args.mosaic_src), args.url, local, args.batch,
                                   args.mosaic_workers)
    elif args.one == "torch-ceiling":
        e1, e2, first = run_torch_ceiling(args.ceiling, args.batch, args.workers)
    elif args.one in ("ferry-torch", "ferry-torch-copy"):
        if args.one == "ferry-torch-copy":  # the bytes through torch's pipe (ferry/_handoff.py)
            os.environ["FERRY_SAMPLE_HANDOFF"] = "copy"
        e1, e2, first = run_ferry_torch(args.url, local, args.batch, args.workers)
    else:
        e1, e2, first = run_ferry_native(args.url, local, args.batch, args.workers)
    shutil.rmtree(args.local, ignore_errors=True)
    print(json.dumps({"epoch1": e1, "epoch2": e2, "first_batch_s": first}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--local", required=True)
    parser.add_argument("--mosaic-src", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--mosaic-workers", type=int, default=8)
    parser.add_argument("--ceiling", help="the dataset in a local folder: measure torch's own "
                        "ceiling for the hand-off of samples of its sizes")
    parser.add_argument("--one", choices=["mosaic", "ferry-torch", "ferry-torch-copy", "ferry-native",
                                 "torch-ceiling"],
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args)
        return
    methods = [
        ("mosaic", f"Mosaic Streaming, DataLoader {args.mosaic_workers} workers"),
        ("ferry-torch", f"ferry.StreamingDataset, DataLoader {args.workers} workers"),
        ("ferry-torch-copy", f"the same, FERRY_SAMPLE_HANDOFF=copy (bytes through torch's pipe)"),
        ("ferry-native", f"ferry.DataLoader, {args.workers} threads"),
    ]
    if args.ceiling:
        methods.append(("torch-ceiling",
                        f"in-memory bytes, DataLoader {args.workers} workers (torch's ceiling)"))
    # One unrecorded run first: the first reads after the upload find s3rver cold (its runs
    # were 2-3x slower, whichever method came first).
    subprocess.run([sys.executable, __file__, *sys.argv[1:], "--one", "ferry-native"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("| method | round | epoch 1 samples/s | epoch 2 samples/s | first batch s |")
    print("|---|---|---|---|---|")
    for rnd in range(1, args.rounds + 1):
        order = methods[rnd % len(methods):] + methods[:rnd % len(methods)]
        for key, name in order:
            run = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--one", key],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            sys.stderr.write(run.stderr)
            if run.returncode != 0:  # said in the table, and the rounds go on
                last = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
                print(f"| {name} | {rnd} | failed: {last} | | |", flush=True)
                continue
            r = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"| {name} | {rnd} | {r['epoch1']:.0f} | {r['epoch2']:.0f} | "
                  f"{r['first_batch_s']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
