#!/usr/bin/python3
"""ferry.DataLoader against torch's DataLoader, in one run, on a local MDS dataset of JPEGs.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/loader_bench.py DATASET
        [--batches 30] [--rounds 2] [--threads 2]

Pipelines (the same work both ways): decode + RandomResizedCrop(224) + RandomHorizontalFlip +
ToTensor (float32 NCHW), batch 64 - ferry.DataLoader with ferry.transforms in native threads,
against torch.utils.data.DataLoader(num_workers=2) running torchvision's transforms on the PIL
images ferry.StreamingDataset returns. Then raw (no decode): encoded bytes and labels. Rounds
alternate the two loaders; each figure is the best round. Prints a markdown table.
"""

import argparse
import time

import torch
import torch.utils.data
import torchvision.transforms as tv

import ferry
from ferry import transforms as T


class TorchvisionDataset(torch.utils.data.IterableDataset):
    """What a user of Mosaic Streaming writes: transforms applied to each sample in a worker."""

    def __init__(self, dataset, transform):
        self.dataset, self.transform = dataset, transform

    def __iter__(self):
        for sample in self.dataset:
            yield self.transform(sample["data"]), sample["label"]


def raw_collate(batch):
    return [s["data"] for s in batch], [s["label"] for s in batch]


def timed(loader, batches):
    start = time.perf_counter()
    n = 0
    for k, batch in enumerate(loader):
        first = batch["data"] if isinstance(batch, dict) else batch[0]
        n += len(first)
        if k + 1 == batches:
            break
    return n / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    b, w = 64, args.threads

    def ferry_decode():
        ds = ferry.StreamingDataset(batch_size=b, local=args.dataset, shuffle=True)
        return ferry.DataLoader(ds, batch_size=b, num_threads=w, columns=["data", "label"],
                                transform=[T.Decode(), T.RandomResizedCrop(224),
                                           T.RandomHorizontalFlip(), T.ToTensor("NCHW")])

    def torch_decode():
        ds = ferry.StreamingDataset(batch_size=b, local=args.dataset, shuffle=True)
        pipeline = tv.Compose([tv.RandomResizedCrop(224), tv.RandomHorizontalFlip(), tv.ToTensor()])
        return torch.utils.data.DataLoader(TorchvisionDataset(ds, pipeline), batch_size=b,
                                           num_workers=w)

    def ferry_raw():
        ds = ferry.StreamingDataset(batch_size=b, local=args.dataset, shuffle=True)
        return ferry.DataLoader(ds, batch_size=b, num_threads=w, columns=["data", "label"])

    def torch_raw():
        ds = ferry.StreamingDataset(batch_size=b, local=args.dataset, shuffle=True, image_format="bytes")
        return torch.utils.data.DataLoader(ds, batch_size=b, num_workers=w,
                                           collate_fn=raw_collate)

    best = {}
    for _ in range(args.rounds):
        for name, make in (("ferry decode", ferry_decode), ("torch decode", torch_decode),
                           ("ferry raw", ferry_raw), ("torch raw", torch_raw)):
            rate = timed(make(), args.batches)
            best[name] = max(best.get(name, 0), rate)
    print(f"| pipeline | ferry.DataLoader ({w} threads) samples/s | torch DataLoader "
          f"({w} workers) samples/s | ratio |")
    print("|---|---|---|---|")
    for what in ("decode", "raw"):
        f, t = best[f"ferry {what}"], best[f"torch {what}"]
        label = ("decode + RandomResizedCrop(224) + flip + ToTensor, batch 64" if what == "decode"
                 else "raw (encoded bytes + label), batch 64")
        print(f"| {label} | {f:.0f} | {t:.0f} | {f / t:.2f}x |")


if __name__ == "__main__":
    main()
