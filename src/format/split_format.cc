#include "format/split_format.h"

#include <fmt/format.h>

#include <utility>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "format/split_shard.h"

namespace ferry::internal_format {
namespace {

namespace fs = std::filesystem;

// Where the .meta of the shard whose data file is at `path` is: the folder of the description
// holds both, each at its basename.
fs::path CompanionPath(const fs::path& path, const ShardDescription& shard,
                       const CompanionFile& companion) {
  const std::string data = path.string();
  if (data.size() > shard.raw_data.basename.size() && data.ends_with(shard.raw_data.basename)) {
    return data.substr(0, data.size() - shard.raw_data.basename.size()) + companion.raw.basename;
  }
  return path.parent_path() / fs::path(companion.raw.basename).filename();
}

class SplitShardReader final : public ShardReader {
 public:
  SplitShardReader(SplitShard shard, std::shared_ptr<const void> owner, const ShardConfig* config,
                   std::string origin)
      : shard_(std::move(shard)),
        owner_(std::move(owner)),
        config_(config),
        origin_(std::move(origin)) {}

  uint32_t num_samples() const override { return shard_.num_samples(); }
  const std::string& origin() const override { return origin_; }
  const std::shared_ptr<const void>& owner() const override { return owner_; }

  Status ReadSample(uint32_t i, SampleFields& out) const override {
    out.config = config_;
    return shard_.Fields(i, out.fields);
  }

 private:
  SplitShard shard_;
  std::shared_ptr<const void> owner_;  // the mapped data file and the shard's config
  const ShardConfig* config_;
  std::string origin_;
};

// What a reader keeps alive: the data (mapped, or decompressed into memory) and the
// description's config its samples point to.
template <typename Data>
struct SplitBody {
  Data data;
  std::shared_ptr<const ShardConfig> config;
};

// A reader over `data` and `meta`, the shard's two raw files, after checking them against the
// description; `owner` keeps `data` alive.
Result<std::unique_ptr<ShardReader>> MakeReader(const std::string& format, std::string_view data,
                                                std::string_view meta,
                                                std::shared_ptr<const void> owner,
                                                const ShardDescription& shard,
                                                const std::string& data_origin,
                                                const std::string& meta_origin) {
  for (const auto& [origin, size, info] : {std::tuple{&data_origin, data.size(), &shard.raw_data},
                                           {&meta_origin, meta.size(), &shard.companions[0].raw}}) {
    if (size != info->bytes) {
      return DataLossError(
          fmt::format("{}: {} bytes, the index says {}", *origin, size, info->bytes));
    }
  }
  const ShardConfig& config = *shard.config;
  SplitShardConfig split{.format = format,
                         .column_names = config.column_names,
                         .column_encodings = config.split_encodings,
                         .newline = config.newline};
  FERRY_ASSIGN_OR_RETURN(SplitShard opened,
                         SplitShard::Open(data, meta, owner, std::move(split), data_origin));
  if (opened.num_samples() != shard.samples) {
    return DataLossError(fmt::format("{}: holds {} samples, the index says {}", meta_origin,
                                     opened.num_samples(), shard.samples));
  }
  return std::unique_ptr<ShardReader>(std::make_unique<SplitShardReader>(
      std::move(opened), std::move(owner), shard.config.get(), data_origin));
}

Status CheckCompanions(const std::string& origin, const std::string& format,
                       const ShardDescription& shard) {
  if (shard.companions.size() == 1) return Status::Ok();
  return InvalidArgumentError(
      fmt::format("{}: a {} shard is read with its .meta; the description lists {} companion files",
                  origin, format, shard.companions.size()));
}

}  // namespace

Result<std::unique_ptr<ShardReader>> SplitFormat::Open(const fs::path& path,
                                                       const ShardDescription& shard) const {
  FERRY_RETURN_IF_ERROR(CheckCompanions(path.string(), name_, shard));
  const fs::path meta_path = CompanionPath(path, shard, shard.companions[0]);
  FERRY_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(path));
  auto body = std::make_shared<SplitBody<MappedFile>>(
      SplitBody<MappedFile>{std::move(mapped), shard.config});
  FERRY_ASSIGN_OR_RETURN(const std::string meta, ReadFileToString(meta_path));
  const std::string_view data = body->data.data();
  return MakeReader(name_, data, meta, std::move(body), shard, path.string(), meta_path.string());
}

Result<std::unique_ptr<ShardReader>> SplitFormat::FromBuffers(std::vector<std::string> files,
                                                              const ShardDescription& shard,
                                                              std::string origin) const {
  FERRY_RETURN_IF_ERROR(CheckCompanions(origin, name_, shard));
  if (files.size() != 2) {
    return InvalidArgumentError(
        fmt::format("{}: a {} shard is 2 files, not {}", origin, name_, files.size()));
  }
  auto body = std::make_shared<SplitBody<std::string>>(
      SplitBody<std::string>{std::move(files[1]), shard.config});
  const std::string_view data = body->data;
  return MakeReader(name_, data, files[0], std::move(body), shard, origin,
                    origin + " (" + shard.companions[0].raw.basename + ")");
}

Result<std::unique_ptr<ShardReader>> SplitFormat::FromBuffer(std::string /*data*/,
                                                             const ShardDescription& shard,
                                                             std::string origin) const {
  return InvalidArgumentError(
      fmt::format("{}: a {} shard is read with its .meta ({})", origin, name_,
                  shard.companions.empty() ? "none listed" : shard.companions[0].raw.basename));
}

}  // namespace ferry::internal_format
