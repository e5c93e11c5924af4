#include "format/webdataset_writer.h"

#include <fmt/format.h>

#include <set>

#include "format/webdataset_index.h"

namespace ferry::internal_format {
namespace {

Status CheckSample(std::string_view key, std::span<const WebDatasetFieldData> fields,
                   std::string_view previous) {
  auto bad = [&](std::string_view what) {
    return InvalidArgumentError(fmt::format("sample '{}': {}", key, what));
  };
  const size_t slash = key.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (last.empty()) return bad("a key needs a name after its last '/'");
  if (last.find('.') != std::string_view::npos) {
    return bad("the key's last part has a '.', where WebDataset would split key from field");
  }
  if (key == previous) return bad("the same key as the sample before it: they would read as one");
  if (fields.empty()) return bad("no fields: WebDataset reads no sample from it");
  std::set<std::string_view> seen;
  for (const auto& [name, data] : fields) {
    if (name.empty() || name.find('/') != std::string_view::npos || name.starts_with("__")) {
      return bad(fmt::format("field '{}' is not a name WebDataset reads back", name));
    }
    for (char c : name) {
      if (c >= 'A' && c <= 'Z') {
        return bad(
            fmt::format("field '{}' has upper-case letters, which readers lower-case", name));
      }
    }
    if (!seen.insert(name).second) return bad(fmt::format("field '{}' twice", name));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<WebDatasetWriter>> WebDatasetWriter::Create(
    WebDatasetWriterOptions options) {
  std::error_code ec;
  if (!options.exist_ok && std::filesystem::exists(options.out / "index.json", ec)) {
    return AlreadyExistsError(
        fmt::format("{} already holds a dataset", (options.out / "index.json").string()));
  }
  std::filesystem::create_directories(options.out, ec);
  if (ec) {
    return InternalError(fmt::format("cannot create {}: {}", options.out.string(), ec.message()));
  }
  return std::unique_ptr<WebDatasetWriter>(new WebDatasetWriter(std::move(options)));
}

Status WebDatasetWriter::Write(std::string_view key, std::span<const WebDatasetFieldData> fields) {
  FERRY_RETURN_IF_ERROR(CheckSample(key, fields, previous_key_));
  uint64_t bytes = 0;
  for (const auto& [name, data] : fields) {
    FERRY_ASSIGN_OR_RETURN(const std::string header,
                           TarHeader(fmt::format("{}.{}", key, name), data.size()));
    bytes += header.size() + (data.size() + 511) / 512 * 512;
  }
  if (shard_ && shard_samples_ > 0 && shard_->bytes() + bytes > options_.size_limit) {
    FERRY_RETURN_IF_ERROR(CloseShard());
  }
  if (!shard_) {
    const std::string name = fmt::format("shard-{:06}.tar", description_.shards.size());
    FERRY_ASSIGN_OR_RETURN(TarWriter shard, TarWriter::Create(options_.out / name));
    shard_.emplace(std::move(shard));
    description_.shards.push_back(
        {.config = config_, .raw_data = {.basename = name}, .samples = 0, .format = "webdataset"});
  }
  for (const auto& [name, data] : fields) {
    FERRY_RETURN_IF_ERROR(shard_->Add(fmt::format("{}.{}", key, name), data));
  }
  ++shard_samples_;
  previous_key_ = key;
  return Status::Ok();
}

Status WebDatasetWriter::CloseShard() {
  FERRY_ASSIGN_OR_RETURN(const uint64_t bytes, shard_->Finish());
  shard_.reset();
  ShardDescription& shard = description_.shards.back();
  shard.raw_data.bytes = bytes;
  shard.samples = shard_samples_;
  shard_samples_ = 0;
  if (options_.on_shard_written) options_.on_shard_written(shard.raw_data.basename);
  return Status::Ok();
}

Result<DatasetDescription> WebDatasetWriter::Finish() {
  if (shard_) FERRY_RETURN_IF_ERROR(CloseShard());
  FERRY_RETURN_IF_ERROR(
      WriteFileAtomically(options_.out / "index.json", SerializeWebDatasetIndex(description_)));
  return description_;
}

}  // namespace ferry::internal_format
