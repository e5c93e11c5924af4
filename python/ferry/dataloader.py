"""StreamingDataLoader: torch's DataLoader plus the state_dict / load_state_dict that Composer
and Lightning call for exact mid-epoch resumption of a StreamingDataset."""

from __future__ import annotations

from typing import Any, Dict, Optional

import torch
import torch.utils.data

from .dataset import StreamingDataset


def _batch_size(batch: Any) -> int:
    # As the reference counts: a collated batch's first field has one entry per sample.
    if isinstance(batch, torch.Tensor):
        return len(batch)
    if isinstance(batch, dict):
        return len(next(iter(batch.values()))) if batch else 0
    if isinstance(batch, (list, tuple)):
        return len(batch[0]) if batch else 0
    return 1


class StreamingDataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` that counts the samples it yields, so that
    ``state_dict()`` says where the epoch is and ``load_state_dict()`` resumes there: the very
    batches that would have come next on the same world shape, every unread sample once on
    another (docs/python.md)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.num_samples_yielded = 0

    def __iter__(self):
        if isinstance(self.dataset, StreamingDataset):
            self.dataset._begin_epoch(self.num_workers)
        self.num_samples_yielded = 0
        for batch in super().__iter__():
            self.num_samples_yielded += _batch_size(batch)
            yield batch

    def state_dict(self) -> Optional[Dict[str, Any]]:
        if not isinstance(self.dataset, StreamingDataset):
            return None
        nodes, ranks_per_node, _, _ = self.dataset._world()
        return self.dataset.state_dict(self.num_samples_yielded * nodes * ranks_per_node, False)

    def load_state_dict(self, obj: Dict[str, Any]) -> None:
        if isinstance(self.dataset, StreamingDataset):
            self.dataset.load_state_dict(obj)


__all__ = ["StreamingDataLoader"]
