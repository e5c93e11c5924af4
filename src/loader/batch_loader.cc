#include "loader/batch_loader.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace ferry::internal_loader {
namespace {

bool IsIntKind(EncodingKind k) { return IsBinaryIntKind(k) || k == EncodingKind::kStrInt; }

bool IsFloatKind(EncodingKind k) { return IsBinaryFloatKind(k) || k == EncodingKind::kStrFloat; }

bool IsObjectKind(EncodingKind k) {
  return k == EncodingKind::kBytes || k == EncodingKind::kStr || k == EncodingKind::kJpeg ||
         k == EncodingKind::kPng;
}

}  // namespace

ColumnEncoding FieldEncoding(std::string_view field) {
  const std::string_view ext = field.substr(field.rfind('.') + 1);
  std::string_view encoding = "bytes";
  if (ext == "jpg" || ext == "jpeg") {
    encoding = "jpeg";
  } else if (ext == "png") {
    encoding = "png";
  } else if (ext == "cls" || ext == "cls2" || ext == "class" || ext == "count" || ext == "index" ||
             ext == "inx" || ext == "id") {
    encoding = "str_int";
  } else if (ext == "txt" || ext == "text" || ext == "transcript") {
    encoding = "str";
  }
  return ColumnEncoding::Parse(encoding).value();
}

std::shared_ptr<uint8_t[]> BufferPool::Get(size_t bytes) {
  std::unique_ptr<uint8_t[]> buffer;
  {
    MutexLock lock(mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->first == bytes) {
        buffer = std::move(it->second);
        free_.erase(it);
        break;
      }
    }
  }
  if (!buffer) buffer.reset(new uint8_t[bytes]);
  std::weak_ptr<BufferPool> pool = weak_from_this();
  return std::shared_ptr<uint8_t[]>(buffer.release(), [pool, bytes](uint8_t* p) {
    if (auto alive = pool.lock()) {
      alive->Put(p, bytes);
    } else {
      delete[] p;
    }
  });
}

void BufferPool::Put(uint8_t* buffer, size_t bytes) {
  std::unique_ptr<uint8_t[]> owned(buffer);
  MutexLock lock(mu_);
  if (free_.size() < max_free_) free_.emplace_back(bytes, std::move(owned));
}

Result<std::unique_ptr<BatchLoader>> BatchLoader::Start(std::shared_ptr<StreamingDataset> dataset,
                                                        BatchLoaderOptions options,
                                                        WorldShape world, WorkerId rank,
                                                        uint64_t epoch,
                                                        std::vector<ThreadStart> starts) {
  if (options.batch_size == 0 || options.num_threads == 0 || options.prefetch_factor == 0) {
    return InvalidArgumentError(
        fmt::format("batch_size ({}), num_threads ({}) and prefetch_factor ({}) must be at least 1",
                    options.batch_size, options.num_threads, options.prefetch_factor));
  }
  if (world.workers_per_rank != options.num_threads || starts.size() != options.num_threads) {
    return InvalidArgumentError(
        fmt::format("the world has {} workers per rank and {} starts for {} threads",
                    world.workers_per_rank, starts.size(), options.num_threads));
  }
  if (dataset->options().order.batch_size != options.batch_size) {
    return InvalidArgumentError(
        fmt::format("the dataset deals batches of {} samples, the loader makes batches of {}",
                    dataset->options().order.batch_size, options.batch_size));
  }
  const ShardConfig* config = nullptr;
  for (const auto& index : dataset->indexes()) {
    if (!index->shards.empty()) {
      config = index->shards.front().config.get();
      break;
    }
  }
  // A dataset whose samples name their own fields declares no columns: a field is taken by name
  // from each sample, and read as its extension says.
  const bool own_fields = config != nullptr && config->column_names.empty();
  std::unique_ptr<BatchLoader> loader(new BatchLoader());
  for (const ColumnSpec& spec : options.columns) {
    auto index = config ? config->ColumnIndex(spec.name) : std::nullopt;
    std::optional<ColumnEncoding> encoding;
    if (!index && own_fields) {
      encoding = FieldEncoding(spec.name);
      index = 0;  // found by name in each sample
    }
    if (!index) {
      return InvalidArgumentError(fmt::format("the dataset has no column {}", spec.name));
    }
    const ColumnEncoding& declared = encoding ? *encoding : config->column_encodings[*index];
    Column column{.name = spec.name,
                  .index = *index,
                  .kind = declared.kind(),
                  .encoding = encoding,
                  .image = std::nullopt};
    if (spec.image) {
      if (column.kind != EncodingKind::kJpeg && column.kind != EncodingKind::kPng) {
        return InvalidArgumentError(
            fmt::format("column {} is {}: image transforms apply to jpeg and png columns",
                        spec.name, declared.text()));
      }
      FERRY_ASSIGN_OR_RETURN(column.image, ImagePipeline::Create(*spec.image));
    } else if (!IsIntKind(column.kind) && !IsFloatKind(column.kind) && !IsObjectKind(column.kind)) {
      return InvalidArgumentError(fmt::format(
          "column {} is {}: the loader batches images, numbers, bytes and str (leave it out, or "
          "use StreamingDataset with torch's DataLoader)",
          spec.name, declared.text()));
    }
    loader->columns_.push_back(std::move(column));
  }
  loader->dataset_ = dataset;
  // Enough for every batch queued or being filled, of every column, plus a few held by Python.
  loader->pool_ = std::make_shared<BufferPool>(
      (size_t{options.num_threads} * (options.prefetch_factor + 1) + 4) *
      std::max<size_t>(1, options.columns.size()));
  loader->options_ = options;
  loader->epoch_ = epoch;
  for (uint32_t t = 0; t < options.num_threads; ++t) {
    auto worker = std::make_unique<Worker>(options.prefetch_factor);
    FERRY_ASSIGN_OR_RETURN(
        worker->it,
        dataset->Iterate(
            {.world = world,
             .worker = {.node = rank.node, .rank = rank.rank, .worker = starts[t].plan_worker},
             .epoch = epoch,
             .resume_from = starts[t].resume_from,
             .skip = starts[t].skip}));
    const uint64_t remaining = worker->it->remaining();
    loader->num_batches_ += options.drop_last
                                ? remaining / options.batch_size
                                : (remaining + options.batch_size - 1) / options.batch_size;
    loader->workers_.push_back(std::move(worker));
  }
  for (auto& worker : loader->workers_) {
    Worker* w = worker.get();
    BatchLoader* self = loader.get();
    w->thread = std::jthread([self, w](std::stop_token stop) { self->Run(*w, stop); });
  }
  return loader;
}

BatchLoader::~BatchLoader() {
  for (auto& w : workers_) {
    w->thread.request_stop();
    w->queue.Close();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

std::shared_ptr<Batch> BatchLoader::NewBatch() const {
  auto batch = std::make_shared<Batch>();
  const uint64_t b = options_.batch_size;
  batch->ids.reserve(b);
  for (const Column& c : columns_) {
    BatchColumn out{.name = c.name,
                    .dtype = BatchDType::kObject,
                    .shape = {b},
                    .data = nullptr,
                    .objects = {},
                    .text = c.kind == EncodingKind::kStr};
    size_t bytes = 0;
    if (c.image) {
      const auto& o = c.image->options();
      out.dtype = o.to_float ? BatchDType::kFloat32 : BatchDType::kUInt8;
      out.shape = o.channels_first
                      ? std::vector<uint64_t>{b, 3, c.image->out_height(), c.image->out_width()}
                      : std::vector<uint64_t>{b, c.image->out_height(), c.image->out_width(), 3};
      bytes = b * c.image->out_bytes();
    } else if (IsIntKind(c.kind)) {
      out.dtype = BatchDType::kInt64;
      bytes = b * 8;
    } else if (IsFloatKind(c.kind)) {
      out.dtype = BatchDType::kFloat64;
      bytes = b * 8;
    } else {
      out.objects.reserve(b);
    }
    if (bytes > 0) out.data = pool_->Get(bytes);
    batch->columns.push_back(std::move(out));
  }
  return batch;
}

Status BatchLoader::Fill(Batch& batch, uint32_t slot, const Sample& sample, uint64_t epoch) const {
  batch.ids.push_back(sample.id);
  for (size_t i = 0; i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    BatchColumn& out = batch.columns[i];
    // The index Start found, unless this shard's columns differ (a merged dataset may mix
    // configs): a name comparison per sample instead of a search.
    const auto& names = sample.config->column_names;
    const auto index = c.index < names.size() && names[c.index] == c.name
                           ? std::optional<size_t>(c.index)
                           : sample.config->ColumnIndex(c.name);
    if (!index) return DataLossError(fmt::format("sample {} has no column {}", sample.id, c.name));
    const std::string_view field = sample.fields[*index];
    auto context = [&](const Status& s) {
      return s.WithContext(fmt::format("sample {}, column {}", sample.id, c.name));
    };
    if (c.image) {
      SampleRng rng(options_.seed, epoch, sample.id);
      Status s = c.image->Apply(field, rng, out.data.get() + slot * c.image->out_bytes());
      if (!s.ok()) return context(s);
    } else if (out.dtype == BatchDType::kInt64 || out.dtype == BatchDType::kFloat64) {
      auto value =
          DecodeValue(c.encoding ? *c.encoding : sample.config->column_encodings[*index], field);
      if (!value) return context(value.status());
      if (out.dtype == BatchDType::kInt64) {
        int64_t v = 0;
        if (const auto* s = std::get_if<int64_t>(&value->variant())) {
          v = *s;
        } else if (const auto* u = std::get_if<uint64_t>(&value->variant());
                   u && *u <= uint64_t(std::numeric_limits<int64_t>::max())) {
          v = static_cast<int64_t>(*u);
        } else {
          return context(OutOfRangeError("the value does not fit a 64-bit signed integer"));
        }
        std::memcpy(out.data.get() + slot * 8, &v, 8);
      } else {
        const double v = std::get<double>(value->variant());
        std::memcpy(out.data.get() + slot * 8, &v, 8);
      }
    } else {
      out.objects.emplace_back(field);
    }
  }
  return Status::Ok();
}

void BatchLoader::Run(Worker& worker, std::stop_token stop) {
  auto fail = [&](Status status) {
    worker.status = std::move(status);
    worker.queue.Close();
  };
  while (!stop.stop_requested()) {
    std::shared_ptr<Batch> batch = NewBatch();
    uint32_t slot = 0;
    bool end = false;
    while (slot < options_.batch_size && !stop.stop_requested()) {
      auto sample = worker.it->Next();
      if (!sample) return fail(sample.status());
      if (!*sample) {
        end = true;
        break;
      }
      if (Status s = Fill(*batch, slot, **sample, epoch_); !s.ok()) return fail(std::move(s));
      ++slot;
    }
    if (stop.stop_requested()) break;
    if (slot > 0 && (slot == options_.batch_size || !options_.drop_last)) {
      batch->size = slot;
      for (auto& c : batch->columns) c.shape[0] = slot;
      if (!worker.queue.Push(std::move(batch), stop)) break;
    }
    if (end) break;
  }
  worker.queue.Close();
}

Result<std::optional<std::shared_ptr<Batch>>> BatchLoader::Next(std::chrono::milliseconds timeout) {
  // Round robin over the threads, skipping those that are done (as torch's DataLoader skips
  // exhausted workers); the epoch ends when all are.
  for (size_t tried = 0; tried < workers_.size(); ++tried) {
    Worker& worker = *workers_[next_ % workers_.size()];
    bool drained = false;
    auto batch = worker.queue.PopFor(timeout, drained);
    if (batch) {
      ++next_;
      return std::optional<std::shared_ptr<Batch>>(std::move(*batch));
    }
    if (!drained) return std::optional<std::shared_ptr<Batch>>();  // timed out
    if (!worker.status.ok()) return worker.status;
    ++next_;
  }
  return std::optional<std::shared_ptr<Batch>>(nullptr);
}

}  // namespace ferry::internal_loader
