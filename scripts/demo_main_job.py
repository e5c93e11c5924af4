#!/usr/bin/python3
"""The main job of `make demo` (scripts/demo.sh runs it with the shards and the JPEG files
already on a loopback S3 server behind a WAN of 100 ms round trip):

  1. `ferry stream` the shards for two epochs - cold, then from the cache folder;
  2. a short PyTorch loop over ferry.DataLoader (decode, RandomResizedCrop, flip, to tensors)
     with ferry.diagnose saying whether it waits on data, and why;
  3. the same images read naively - one GET per file, as a plain torch Dataset would - for a
     limited number of files;
  4. the three side by side, and the verdict.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def stream_epochs(ferry, url, local):
    """[{epoch figures}] of `ferry stream --epochs 2 --json`, printed as it goes."""
    out = subprocess.run([ferry, "stream", url, "--local", local, "--epochs", "2", "--json"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    epochs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for e in epochs:
        print(f"epoch {e['epoch'] + 1}: {e['samples']} samples in {e['seconds']:.2f} s, "
              f"{e['samples_per_s']:.0f} samples/s, {e['mb_per_s']:.1f} MB/s, "
              f"{e['bytes_fetched'] / 1e6:.1f} MB fetched in {e['remote_requests']} requests, "
              f"{e['cache_hits']} cache hits")
    return epochs


def train_loop(url, local, steps):
    import torch

    import ferry
    from ferry import transforms as T

    ds = ferry.StreamingDataset(remote=url, local=local, shuffle=True, batch_size=32)
    loader = ferry.DataLoader(ds, batch_size=32, num_threads=2, transform=[
        T.RandomResizedCrop(96), T.RandomHorizontalFlip(), T.ToTensor()])
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 96 * 96, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    def step(batch):
        logits = model(batch["data"])  # ferry convert's column of the image files
        loss = torch.nn.functional.cross_entropy(logits, batch["label"] % 10)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()

    return ferry.diagnose(loader, step, steps=steps)


def naive_files(bucket, prefix, count):
    """(files, seconds): GETs one file at a time, as a Dataset of keys read in __getitem__."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      region_name=os.environ.get("AWS_REGION", "us-east-1"))
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", []) if o["Key"].endswith(".jpg")]
    keys = sorted(keys)[:count]
    start = time.perf_counter()
    for key in keys:
        s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return len(keys), time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ferry", required=True)
    p.add_argument("--url", required=True, help="the shards, s3://bucket/prefix")
    p.add_argument("--local", required=True, help="cache folder of the stream step")
    p.add_argument("--train-local", required=True, help="cache folder of the training loop")
    p.add_argument("--images", required=True, help="the JPEG files, s3://bucket/prefix")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--naive-files", type=int, default=150)
    a = p.parse_args()

    print("\n== 7. ferry stream: two epochs of the shards, cold then from the cache folder")
    epochs = stream_epochs(a.ferry, a.url, a.local)

    print("\n== 8. a PyTorch loop over ferry.DataLoader (decode, crop, flip) with ferry.diagnose")
    report = train_loop(a.url, a.train_local, a.steps)

    print(f"\n== 9. the same images read naively: one GET per file, {a.naive_files} files")
    bucket, _, prefix = a.images[len("s3://"):].partition("/")
    files, seconds = naive_files(bucket, prefix, a.naive_files)
    print(f"{files} files in {seconds:.2f} s: {files / seconds:.0f} samples/s")

    print("\n== summary: reading the same images over a link of 100 ms round trip")
    rows = [("ferry, epoch 1 (cold)", epochs[0]["samples"], epochs[0]["seconds"]),
            ("ferry, epoch 2 (cache)", epochs[1]["samples"], epochs[1]["seconds"]),
            ("naive, one GET per file", files, seconds)]
    naive_rate = files / seconds
    print(f"{'':26} {'samples':>8} {'seconds':>8} {'samples/s':>10} {'vs naive':>9}")
    for name, samples, secs in rows:
        rate = samples / secs
        print(f"{name:26} {samples:>8} {secs:>8.3f} {rate:>10.0f} {rate / naive_rate:>8.0f}x")
    print("(samples as bytes, undecoded, in every row; the loop above decodes and trains)")
    print(f"\nverdict of the training loop ({100 * report['waiting_fraction']:.0f} % waiting on "
          f"data): {report['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
