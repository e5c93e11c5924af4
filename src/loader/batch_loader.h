// BatchLoader: the native half of ferry.DataLoader. Worker threads read samples from a
// StreamingDataset, decode and transform image columns, and collate whole batches into
// contiguous buffers that Python wraps as tensors without copying.
//
// Order: thread t reads plan worker starts[t].plan_worker of a world with num_threads workers
// per rank, and makes whole batches of its own samples; Next() takes batches from the threads
// round robin, starting with thread 0 - exactly what torch's DataLoader does with num_threads
// worker processes, so the same resumption rule (python/ferry/dataset.py) serves both.
//
// Memory: each thread keeps at most `prefetch_factor` finished batches queued, plus the one it
// is filling. Destroying the loader stops the threads (they notice within one sample).
//
// Thread-safety: Next() from one thread at a time; the threads are internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/bounded_queue.h"
#include "base/mutex.h"
#include "ferry/format/encoding.h"
#include "ferry/stream/streaming_dataset.h"
#include "loader/image_pipeline.h"

namespace ferry::internal_loader {

/// What a batch holds for one column.
/// How the loader reads a field of a sample that names its own fields (a WebDataset one, whose
/// fields are all bytes), by its extension, as WebDataset's default decoders do: jpg/jpeg and png
/// as images, class indexes (cls, cls2, class, count, index, inx, id) as decimal text, txt, text
/// and transcript as str; anything else stays bytes.
ColumnEncoding FieldEncoding(std::string_view field);

struct ColumnSpec {
  std::string name;
  /// Set for image columns (jpeg, png): decoded and transformed to a fixed size.
  std::optional<ImagePipelineOptions> image;
};

struct BatchLoaderOptions {
  std::vector<ColumnSpec> columns;  // the columns to load; others are skipped
  uint32_t batch_size = 1;
  uint32_t num_threads = 1;
  uint32_t prefetch_factor = 2;
  bool drop_last = false;
  uint64_t seed = 0;  // of the per-sample transform generator
};

/// Where each thread starts (resumption), one per thread.
struct ThreadStart {
  uint32_t plan_worker = 0;
  uint64_t resume_from = 0;
  uint64_t skip = 0;
};

enum class BatchDType { kUInt8, kFloat32, kInt64, kFloat64, kObject };

struct BatchColumn {
  std::string name;
  BatchDType dtype = BatchDType::kObject;
  std::vector<uint64_t> shape;       // batch first
  std::shared_ptr<uint8_t[]> data;   // contiguous, for numeric dtypes
  std::vector<std::string> objects;  // kObject: the raw payload of each sample (bytes/str)
  bool text = false;                 // kObject holding str
};

struct Batch {
  uint32_t size = 0;
  std::vector<uint64_t> ids;
  std::vector<BatchColumn> columns;
};

// Batch buffers come back here when the last tensor viewing them is gone, so that a steady
// state allocates nothing (fresh multi-megabyte allocations are mmap()ed and zeroed by the
// kernel every time). Shared by the loader and the buffers' deleters: it outlives either.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(size_t max_free) : max_free_(max_free) {}
  std::shared_ptr<uint8_t[]> Get(size_t bytes);

 private:
  void Put(uint8_t* buffer, size_t bytes);

  const size_t max_free_;
  Mutex mu_;
  std::vector<std::pair<size_t, std::unique_ptr<uint8_t[]>>> free_ GUARDED_BY(mu_);
};

class BatchLoader {
 public:
  /// Starts the threads. kInvalidArgument for an unknown column, an image pipeline on a column
  /// that is not jpeg/png, or a column the loader cannot batch (ndarray, json, pil, lists, pkl).
  static Result<std::unique_ptr<BatchLoader>> Start(std::shared_ptr<StreamingDataset> dataset,
                                                    BatchLoaderOptions options, WorldShape world,
                                                    WorkerId rank, uint64_t epoch,
                                                    std::vector<ThreadStart> starts);
  ~BatchLoader();

  /// The next batch; nullptr at the end of the epoch; nullopt when `timeout` passed first.
  Result<std::optional<std::shared_ptr<Batch>>> Next(std::chrono::milliseconds timeout);

  /// Batches this rank will yield this epoch.
  uint64_t num_batches() const { return num_batches_; }

 private:
  struct Column {
    std::string name;
    size_t index = 0;  // in the dataset's columns
    EncodingKind kind = EncodingKind::kBytes;
    // Set for a field of a sample that names its own fields: how its extension says to read it
    // (the sample's own config says bytes).
    std::optional<ColumnEncoding> encoding;
    std::optional<ImagePipeline> image;
  };
  struct Worker {
    std::unique_ptr<SampleIterator> it;
    BoundedQueue<std::shared_ptr<Batch>> queue;
    Status status;  // set before the queue closes
    std::jthread thread;
    explicit Worker(size_t capacity) : queue(capacity) {}
  };

  BatchLoader() = default;
  void Run(Worker& worker, std::stop_token stop);
  std::shared_ptr<Batch> NewBatch() const;
  Status Fill(Batch& batch, uint32_t slot, const Sample& sample, uint64_t epoch) const;

  std::shared_ptr<StreamingDataset> dataset_;
  BatchLoaderOptions options_;
  std::vector<Column> columns_;
  uint64_t epoch_ = 0;
  uint64_t num_batches_ = 0;
  std::shared_ptr<BufferPool> pool_;
  std::vector<std::unique_ptr<Worker>> workers_;
  uint64_t next_ = 0;  // batches taken
};

}  // namespace ferry::internal_loader
