// PyDataset: what ferry._ferry.Dataset holds - the native StreamingDataset, destroyed only in the
// process that opened it (fork_safe.h says why).
#pragma once

#include <memory>

#include "ferry/stream/streaming_dataset.h"
#include "python/fork_safe.h"

namespace ferry::python {

struct PyDataset {
  ForkSafe<std::shared_ptr<StreamingDataset>> dataset;

  StreamingDataset& get() { return *dataset.get(); }
  const StreamingDataset& get() const { return *dataset.get(); }
  std::shared_ptr<StreamingDataset> shared() const { return dataset.get(); }
};

}  // namespace ferry::python
