#!/usr/bin/python3
"""Baseline for ferry-fetch-bench: boto3 GETs of every object under a prefix from a thread pool
(the usual way Python code fetches many objects). Endpoint and keys from AWS_* variables."""
import argparse
import concurrent.futures
import os
import resource
import time

import boto3
from botocore.config import Config


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--threads", type=int, default=64)
    a = p.parse_args()
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      region_name=os.environ.get("AWS_REGION", "us-east-1"),
                      config=Config(max_pool_connections=a.threads, s3={"addressing_style": "path"}))
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=a.bucket, Prefix=a.prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]

    def fetch(key):
        return len(s3.get_object(Bucket=a.bucket, Key=key)["Body"].read())

    cpu0 = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        total = sum(pool.map(fetch, keys))
    s = time.monotonic() - t0
    cpu = sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - cpu0
    label = f"boto3, {a.threads} threads"
    print(f"{label:<28} {len(keys):8d} objects {total / 1e6:9.1f} MB  {s:7.2f} s  "
          f"{len(keys) / s:8.0f} objects/s  {total / 1e6 / s:8.1f} MB/s  cpu {cpu / s:.2f}")


if __name__ == "__main__":
    main()
