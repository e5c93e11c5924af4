// InstrumentedStore: an ObjectStore decorator that counts what passes through it, per scheme:
//   /ferry/storage/<scheme>/requests      calls that reach the store (head, read, write, list,
//                                         remove; a read's internal retries count once)
//   /ferry/storage/<scheme>/bytes_read    bytes delivered by reads
//   /ferry/storage/<scheme>/bytes_written bytes of writes
//   /ferry/storage/<scheme>/errors        calls that failed (not a read its caller broke off)
//   /ferry/storage/<scheme>/in_flight     calls under way now (a gauge)
// The streaming engine wraps every remote in one, so that "zero remote requests in epoch 2" is a
// number, not a belief.
//
// Thread-safety: as the wrapped store.
#pragma once

#include <memory>

#include "ferry/storage/object_store.h"

namespace ferry {

std::shared_ptr<ObjectStore> Instrument(std::shared_ptr<ObjectStore> store);

}  // namespace ferry
