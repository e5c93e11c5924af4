"""Opening a dataset of many streams (issue 26): URL/sNNNNN for each of --streams streams, one
StreamingDataset(streams=[Stream(remote=..., local=...), ...]) opened into empty cache folders
(cold: every index.json fetched) and again with them filled (warm: ferry revalidates each index
with a HEAD; Mosaic fetches each again). Each open runs in a process of its own, after `import
torch` (not counted); methods alternate within each round. Prints a markdown table of medians
and ranges.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/many_streams.py URL \\
        --streams 200 --local DIR [--rounds 3] [--base PYTHONPATH] [--mosaic-src PATH]

--base runs an older ferry module (its build/release/python) beside this one; --mosaic-src
Mosaic Streaming from a checkout of its source (S3_ENDPOINT_URL and AWS_* from the
environment).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def one(method, url, streams, local, mosaic_src):
    import torch  # noqa: F401  (paid by every training process; not what is measured)

    names = [f"s{s:05d}" for s in range(streams)]
    start = time.perf_counter()
    if method == "mosaic":
        sys.path.insert(0, os.path.dirname(__file__))
        from dropin_vs_mosaic import _mosaic
        streaming = _mosaic(mosaic_src)
        start = time.perf_counter()
        ds = streaming.StreamingDataset(
            streams=[streaming.Stream(remote=f"{url}/{n}", local=os.path.join(local, n))
                     for n in names], batch_size=64)
    else:
        import ferry
        start = time.perf_counter()
        ds = ferry.StreamingDataset(
            streams=[ferry.Stream(remote=f"{url}/{n}", local=os.path.join(local, n))
                     for n in names], batch_size=64)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "samples": ds.num_samples}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--streams", type=int, required=True)
    parser.add_argument("--local", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base")
    parser.add_argument("--mosaic-src")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one, args.url, args.streams, args.local, args.mosaic_src)
        return

    methods = [("ferry", "ferry (this build)", os.environ.get("PYTHONPATH", ""))]
    if args.base:
        methods.append(("ferry", "ferry (base build)", args.base))
    if args.mosaic_src:
        methods.append(("mosaic", "Mosaic Streaming", os.environ.get("PYTHONPATH", "")))
    results = {}
    for rnd in range(args.rounds):
        for method, name, path in methods[rnd % len(methods):] + methods[:rnd % len(methods)]:
            local = os.path.join(args.local, method)
            shutil.rmtree(local, ignore_errors=True)
            for phase in ("cold", "warm"):
                cmd = [sys.executable, os.path.abspath(__file__), args.url, "--streams",
                       str(args.streams), "--local", local, "--one", method]
                if args.mosaic_src:
                    cmd += ["--mosaic-src", args.mosaic_src]
                run = subprocess.run(cmd, capture_output=True, text=True,
                                     env={**os.environ, "PYTHONPATH": path})
                if run.returncode != 0:
                    raise SystemExit(f"{name} {phase}: {run.stderr.strip()[-2000:]}")
                r = json.loads(run.stdout.strip().splitlines()[-1])
                if r["samples"] != 10 * args.streams:
                    raise SystemExit(f"{name} {phase}: {r['samples']} samples")
                results.setdefault((name, phase), []).append(r["seconds"])
            shutil.rmtree(local, ignore_errors=True)
    print(f"{args.streams} streams of one shard each; {args.rounds} rounds")
    print()
    print("| method | cold open s | warm open s |")
    print("|---|---|---|")
    for _, name, _ in methods:
        cells = []
        for phase in ("cold", "warm"):
            v = results[(name, phase)]
            cells.append(f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})")
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
