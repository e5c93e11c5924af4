"""What opening a huge index costs each process (issue 26): a dataset of --shards shards and
--samples samples per shard (its index.json only: opening reads no shard), opened by one process
after another as the ranks and DataLoader workers of a node do. Each open runs in a process of
its own, after `import torch` (which every such process pays anyway, and which is not counted):

  ferry, first on the node   StreamingDataset(remote=..., local=CACHE) into an empty cache
                             folder: fetches index.json, parses it, writes .ferry/index.bin
  ferry, each other process  the same with the folder filled: one stat of the remote index,
                             then the binary form
  ferry + mirror, each other the same with --mirror (a copy of DIR) as a second remote: the
  process                    mirrors' copies of index.json shown the same once per node, then
                             asked only their versions (src/stream/stream_mirrors.h); with
                             --base, the older module too
  ferry, JSON per process    ferry-index-load-bench json: the index.json parsed alone, no
                             dataset around it: what every process paid without the binary
                             form
  Mosaic Streaming           its StreamingDataset on the same index.json (--mosaic-src, a
                             checkout of its source; never part of this repository), which
                             every process parses
  N at once, empty folder    --together N processes opening an empty cache folder at the same
                             moment, as the ranks and workers of a job start (the slowest open,
                             the median kept and the largest peak); with --base, the same with
                             an older ferry module (its build/release/python) beside it

Prints a markdown table with, per method, the median seconds, the resident MB the open added
and kept, and its peak over the start (with their ranges over --rounds rounds; methods
alternate within a round).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/index_load.py DIR \\
        --bench build/release/bench/ferry-index-load-bench [--mosaic-src PATH] [--rounds 3]

DIR is a folder with the index.json (bench/index_load.sh writes one).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(method, remote, cache, mosaic_src, mirror=None):
    """Opens the dataset once in this process; prints {"seconds", "rss_added_mb",
    "peak_added_mb", "samples"}."""
    import torch  # noqa: F401  (paid by every training process; not what is measured)

    if method == "mosaic":
        sys.path.insert(0, os.path.dirname(__file__))
        from dropin_vs_mosaic import _mosaic
        streaming = _mosaic(mosaic_src)
    else:
        import ferry
    before = _rss_mb()
    start = time.perf_counter()
    if method == "mosaic":
        ds = streaming.StreamingDataset(local=remote, batch_size=64, shuffle=True)
    else:
        remotes = [f"file://{remote}"] + ([f"file://{mirror}"] if mirror else [])
        ds = ferry.StreamingDataset(remote=remotes if mirror else remotes[0], local=cache,
                                    batch_size=64, shuffle=True)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss_added_mb": _rss_mb() - before,
                      "peak_added_mb": max(0.0, _peak_mb() - before), "samples": len(ds)}))


def _run(cmd, pythonpath=None):
    env = {**os.environ, "PYTHONPATH": pythonpath} if pythonpath else None
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def _together(cmd, n, cache, pythonpath):
    """Starts n copies of cmd at once into the empty folder `cache`; one result for them all."""
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": pythonpath}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(n)]
    runs = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(err.strip()[-2000:])
        runs.append(json.loads(out.strip().splitlines()[-1]))
    shutil.rmtree(cache, ignore_errors=True)
    return {"seconds": max(r["seconds"] for r in runs),
            "rss_added_mb": statistics.median(r["rss_added_mb"] for r in runs),
            "peak_added_mb": max(r["peak_added_mb"] for r in runs),
            "samples": runs[0]["samples"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--bench", required=True, help="the ferry-index-load-bench binary")
    parser.add_argument("--mosaic-src")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--together", type=int, default=8)
    parser.add_argument("--base", help="an older ferry module's folder (build/release/python)")
    parser.add_argument("--mirror", help="a copy of DIR, opened as DIR's mirror")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    remote = os.path.abspath(args.dir)
    if args.one:
        one(args.one, remote, args.cache, args.mosaic_src, args.mirror)
        return

    work = tempfile.mkdtemp(prefix="ferry-index-load-")
    cache = os.path.join(work, "cache")
    me = [sys.executable, os.path.abspath(__file__), remote, "--bench", args.bench]
    methods = [
        ("ferry, first on the node",
         lambda: (shutil.rmtree(cache, ignore_errors=True),
                  _run(me + ["--one", "ferry", "--cache", cache]))[1]),
        ("ferry, each other process", lambda: _run(me + ["--one", "ferry", "--cache", cache])),
        ("ferry, JSON parsed per process", lambda: _run([args.bench, "json", remote])),
    ]
    one_ferry = me + ["--one", "ferry", "--cache", cache]
    methods.append((f"ferry, {args.together} at once, empty folder", lambda: _together(
        one_ferry, args.together, cache, os.environ.get("PYTHONPATH", ""))))
    if args.base:
        methods.append((f"ferry base build, {args.together} at once, empty folder",
                        lambda: _together(one_ferry, args.together, cache, args.base)))
    if args.mirror:
        mirrored = one_ferry + ["--mirror", os.path.abspath(args.mirror)]
        builds = [("ferry", None)] + ([("ferry base build", args.base)] if args.base else [])
        for build, path in builds:
            # The first open fills the folder (and keeps the versions); the one measured is the
            # next, as every other rank and worker opens.
            methods.append((f"{build} + mirror, each other process",
                            lambda path=path: (shutil.rmtree(cache, ignore_errors=True),
                                               _run(mirrored, path),
                                               _run(mirrored, path))[2]))
    if args.mosaic_src:
        methods.append(("Mosaic Streaming", lambda: _run(
            me + ["--one", "mosaic", "--cache", cache, "--mosaic-src", args.mosaic_src])))
    results = {name: [] for name, _ in methods}
    samples = None
    try:
        for rnd in range(args.rounds):
            # "each other process" needs the first's folder: the two stay in that order.
            rest = methods[2:]
            order = methods[:2] + rest[rnd % len(rest):] + rest[:rnd % len(rest)]
            for name, run in order:
                r = run()
                samples = samples or r["samples"]
                if r["samples"] != samples:
                    raise SystemExit(f"{name}: {r['samples']} samples, not {samples}")
                results[name].append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    size = os.path.getsize(os.path.join(remote, "index.json"))
    print(f"index.json of {size / 1e6:.0f} MB, {samples:,} samples; {args.rounds} rounds")
    print()
    print("| method | open s | resident MB added, kept | resident MB added, peak |")
    print("|---|---|---|---|")

    def cell(values, digits):
        return (f"{statistics.median(values):.{digits}f} "
                f"({min(values):.{digits}f}-{max(values):.{digits}f})")

    for name, runs in results.items():
        print(f"| {name} | {cell([r['seconds'] for r in runs], 3)} "
              f"| {cell([r['rss_added_mb'] for r in runs], 0)} "
              f"| {cell([r['peak_added_mb'] for r in runs], 0)} |")


if __name__ == "__main__":
    main()
