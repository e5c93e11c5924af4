#include "ferry/format/local_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "base/mutex.h"
#include "ferry/format/shard_format.h"
#include "format/compression.h"
#include "format/hash.h"
#include "format/webdataset_index.h"

namespace ferry {
namespace {

Status CheckHash(std::string_view data, const FileInfo& info, std::string_view algorithm,
                 const std::filesystem::path& path) {
  const std::string* expected = info.FindHash(algorithm);
  if (expected == nullptr) {
    return InvalidArgumentError(fmt::format("{}: the index has no '{}' digest to validate against",
                                            path.string(), algorithm));
  }
  FERRY_ASSIGN_OR_RETURN(std::string actual, HashHex(algorithm, data));
  if (actual != *expected) {
    return DataLossError(fmt::format("{}: {} digest is {} but the index says {}", path.string(),
                                     algorithm, actual, *expected));
  }
  return Status::Ok();
}

}  // namespace

Result<DatasetDescription> ReadLocalIndex(const std::filesystem::path& folder) {
  const std::filesystem::path index_path = folder / "index.json";
  auto text = ReadFileToString(index_path);
  if (!text) {
    if (text.error().code() == StatusCode::kNotFound) {
      std::error_code ec;
      if (!std::filesystem::exists(folder, ec)) {
        return NotFoundError(fmt::format("{} does not exist (so neither does {})", folder.string(),
                                         index_path.string()));
      }
      // A folder of WebDataset tars without their list: counted in place.
      FERRY_ASSIGN_OR_RETURN(std::optional<DatasetDescription> tars,
                             internal_format::CountLocalTarShards(folder));
      if (tars) return std::move(*tars);
      return InvalidArgumentError(
          fmt::format("{} is not a dataset: {} does not exist, and there are no .tar shards",
                      folder.string(), index_path.string()));
    }
    return text.error();
  }
  return ParseIndexFile(*text, index_path.string());
}

struct LocalDataset::RecentReaders {
  Mutex mu;
  std::vector<std::pair<size_t, std::shared_ptr<const ShardReader>>> open
      GUARDED_BY(mu);  // most recently used first
};

LocalDataset::LocalDataset() : recent_(std::make_unique<RecentReaders>()) {}
LocalDataset::~LocalDataset() = default;

Result<std::unique_ptr<LocalDataset>> LocalDataset::Open(const std::filesystem::path& root,
                                                         LocalDatasetOptions options) {
  std::unique_ptr<LocalDataset> ds(new LocalDataset());
  ds->folder_ = options.split.empty() ? root : root / options.split;
  const std::filesystem::path index_path = ds->folder_ / "index.json";
  FERRY_ASSIGN_OR_RETURN(ds->index_, ReadLocalIndex(ds->folder_));
  if (options.validate_hash && !IsKnownHash(*options.validate_hash)) {
    return InvalidArgumentError(
        fmt::format("validate_hash: unknown hash '{}'", *options.validate_hash));
  }
  for (size_t k = 0; k < ds->index_.shards.size(); ++k) {
    FERRY_RETURN_IF_ERROR(FindShardFormat(ds->index_.shards[k].format)
                              .status()
                              .WithContext(fmt::format("{}: shard {}", index_path.string(), k)));
    const ShardConfig& config = *ds->index_.shards[k].config;
    if (config.HasUnsafeColumn() && !options.allow_unsafe_types) {
      size_t c = 0;
      while (!config.column_encodings[c].unsafe()) ++c;
      return InvalidArgumentError(fmt::format(
          "{}: shard {}: Column {} contains an unsafe type: {}, which runs arbitrary code when "
          "unpickled; pass allow_unsafe_types to read it as raw bytes",
          index_path.string(), k, config.column_names[c], config.column_encodings[c].text()));
    }
  }
  ds->options_ = std::move(options);
  ds->options_.max_open_shards = std::max<size_t>(1, ds->options_.max_open_shards);
  ds->shard_starts_.reserve(ds->index_.shards.size());
  for (const auto& s : ds->index_.shards) {
    ds->shard_starts_.push_back(ds->num_samples_);
    ds->num_samples_ += s.samples;
  }
  return ds;
}

Result<std::pair<size_t, uint32_t>> LocalDataset::Locate(uint64_t i) const {
  if (i >= num_samples_) {
    return OutOfRangeError(fmt::format("sample {} is past the end of {} ({} samples)", i,
                                       folder_.string(), num_samples_));
  }
  // The last shard whose start is <= i and that holds samples (empty shards cover nothing).
  auto it = std::upper_bound(shard_starts_.begin(), shard_starts_.end(), i);
  size_t k = static_cast<size_t>(it - shard_starts_.begin()) - 1;
  while (index_.shards[k].samples == 0) --k;  // equal starts: step back past empty shards
  return std::pair<size_t, uint32_t>(k, static_cast<uint32_t>(i - shard_starts_[k]));
}

Result<std::shared_ptr<const ShardReader>> LocalDataset::Shard(size_t k) const {
  if (k >= index_.shards.size()) {
    return OutOfRangeError(fmt::format("shard {} does not exist in {} ({} shards)", k,
                                       folder_.string(), index_.shards.size()));
  }
  {
    MutexLock lock(recent_->mu);
    auto& open = recent_->open;
    for (size_t j = 0; j < open.size(); ++j) {
      if (open[j].first == k) {
        std::rotate(open.begin(), open.begin() + static_cast<ptrdiff_t>(j),
                    open.begin() + static_cast<ptrdiff_t>(j) + 1);
        return open.front().second;
      }
    }
  }
  // Open outside the lock: decompression may take a while. Two threads may race to open the same
  // shard; both results are valid and one wins the cache slot.
  FERRY_ASSIGN_OR_RETURN(auto reader, OpenShard(k));
  MutexLock lock(recent_->mu);
  auto& open = recent_->open;
  open.insert(open.begin(), {k, reader});
  if (open.size() > options_.max_open_shards) open.pop_back();
  return reader;
}

Result<std::shared_ptr<const ShardReader>> LocalDataset::OpenShard(size_t k) const {
  const ShardDescription& entry = index_.shards[k];
  FERRY_ASSIGN_OR_RETURN(const ShardFormat* format, FindShardFormat(entry.format));
  const std::vector<ShardFile> files = entry.files();
  std::error_code ec;
  const auto raw_here = [&](const ShardFile& f) {
    return std::filesystem::exists(folder_ / f.raw->basename, ec) || f.zip == nullptr;
  };
  if (std::all_of(files.begin(), files.end(), raw_here)) {
    if (options_.validate_hash) {
      for (const ShardFile& f : files) {
        const std::filesystem::path path = folder_ / f.raw->basename;
        FERRY_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
        FERRY_RETURN_IF_ERROR(CheckHash(file.data(), *f.raw, *options_.validate_hash, path));
      }
    }
    FERRY_ASSIGN_OR_RETURN(auto reader, format->Open(folder_ / entry.raw_data.basename, entry));
    return std::shared_ptr<const ShardReader>(std::move(reader));
  }
  // Some file is here only compressed: every file of the shard is read into memory.
  std::vector<std::string> raws;
  for (const ShardFile& f : files) {
    const std::filesystem::path raw_path = folder_ / f.raw->basename;
    if (std::filesystem::exists(raw_path, ec) || f.zip == nullptr) {
      FERRY_ASSIGN_OR_RETURN(std::string raw, ReadFileToString(raw_path));
      if (options_.validate_hash) {
        FERRY_RETURN_IF_ERROR(CheckHash(raw, *f.raw, *options_.validate_hash, raw_path));
      }
      raws.push_back(std::move(raw));
      continue;
    }
    const std::filesystem::path zip_path = folder_ / f.zip->basename;
    FERRY_ASSIGN_OR_RETURN(MappedFile zipped, MappedFile::Open(zip_path));
    if (zipped.size() != f.zip->bytes) {
      return DataLossError(fmt::format("{}: file holds {} bytes but the index says {}",
                                       zip_path.string(), zipped.size(), f.zip->bytes));
    }
    if (options_.validate_hash) {
      FERRY_RETURN_IF_ERROR(CheckHash(zipped.data(), *f.zip, *options_.validate_hash, zip_path));
    }
    FERRY_ASSIGN_OR_RETURN(Compression compression, Compression::Parse(*entry.config->compression));
    auto raw = compression.Decompress(zipped.data(), f.raw->bytes);
    if (!raw) return raw.error().WithContext(zip_path.string());
    raws.push_back(std::move(*raw));
  }
  const FileInfo& named = entry.zip_data ? *entry.zip_data : entry.raw_data;
  FERRY_ASSIGN_OR_RETURN(
      auto reader, format->FromBuffers(std::move(raws), entry,
                                       (folder_ / named.basename).string() + " (decompressed)"));
  return std::shared_ptr<const ShardReader>(std::move(reader));
}

Result<std::vector<Value>> LocalDataset::Get(uint64_t i) const {
  FERRY_ASSIGN_OR_RETURN(auto where, Locate(i));
  FERRY_ASSIGN_OR_RETURN(auto shard, Shard(where.first));
  SampleFields sample;
  FERRY_RETURN_IF_ERROR(shard->ReadSample(where.second, sample));
  const ShardConfig& config = *sample.config;
  std::vector<Value> values;
  values.reserve(sample.fields.size());
  for (size_t c = 0; c < sample.fields.size(); ++c) {
    auto v = DecodeValue(config.column_encodings[c], sample.fields[c]);
    if (!v) {
      return v.error().WithContext(fmt::format("{}: sample {}: column '{}'", shard->origin(),
                                               where.second, config.column_names[c]));
    }
    values.push_back(std::move(*v));
  }
  return values;
}

}  // namespace ferry
