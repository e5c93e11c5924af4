"""Conversion throughput against worker count: ferry.convert.files_to_mds on a Dask LocalCluster
of 1, 2, 4 ... worker processes, against one `ferry convert` process of the same folder in the
same run (the baseline). bench/convert_scaling.sh starts the servers, the WAN emulator and the
data; this is its measuring half.

  convert_scaling.py SRC_URL OUT_DIR --files N --workers "1 2 4" --repeat R
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

from distributed import Client, LocalCluster

from ferry import _cli
from ferry.convert import files_to_mds


def timed(fn):
    start = time.monotonic()
    fn()
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("src")
    parser.add_argument("out")
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--workers", default="1 2 4")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    def fresh(name):
        path = os.path.join(args.out, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    def single():
        subprocess.run([_cli.executable(), "convert", args.src, fresh("single"), "-q"],
                       check=True, stdout=subprocess.DEVNULL)

    rows = []
    base = statistics.median(timed(single) for _ in range(args.repeat))
    rows.append(("one `ferry convert` (baseline)", 1, base))
    for workers in [int(w) for w in args.workers.split()]:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, host="127.0.0.1") as cluster, \
                Client(cluster) as client:
            runs = [timed(lambda: files_to_mds(args.src, fresh(f"dask{workers}"),
                                               parts=4 * workers, client=client))
                    for _ in range(args.repeat)]
        rows.append((f"files_to_mds, {workers} Dask workers, {4 * workers} parts", workers,
                     statistics.median(runs)))
    print(f"{args.files} files, median of {args.repeat}, {os.cpu_count()} cores")
    print("| run | workers | seconds | files/s | vs one convert |")
    print("|---|---|---|---|---|")
    for name, workers, seconds in rows:
        print(f"| {name} | {workers} | {seconds:.2f} | {args.files / seconds:,.0f} | "
              f"{base / seconds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
