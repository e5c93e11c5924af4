#include "format/webdataset_format.h"

#include <fmt/format.h>

#include <map>
#include <variant>

#include "base/mapped_file.h"
#include "format/webdataset_samples.h"

namespace ferry::internal_format {
namespace {

// What every view a reader hands out points into: the shard's bytes, its samples' keys and the
// configs naming their fields.
struct Body {
  std::variant<std::string, MappedFile> bytes;
  std::string keys;  // every sample's key, one after another
  std::vector<std::shared_ptr<const ShardConfig>> configs;

  std::string_view data() const {
    if (const auto* file = std::get_if<MappedFile>(&bytes)) return file->data();
    return std::get<std::string>(bytes);
  }
};

struct Member {
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct SampleAt {
  uint32_t config = 0;      // into Body::configs
  uint64_t key_offset = 0;  // into Body::keys
  uint32_t key_size = 0;
  uint64_t first_member = 0;  // into members_; as many as the config has fields, less the key
};

class WebDatasetShardReader final : public ShardReader {
 public:
  static Result<std::unique_ptr<ShardReader>> Open(std::shared_ptr<Body> body,
                                                   const ShardDescription& shard,
                                                   std::string origin) {
    auto bad = [&](std::string_view what) {
      return DataLossError(fmt::format("{}: {}", origin, what));
    };
    const std::string_view data = body->data();
    if (data.size() != shard.raw_data.bytes) {
      return bad(fmt::format("file holds {} bytes but the description says {}", data.size(),
                             shard.raw_data.bytes));
    }
    FERRY_ASSIGN_OR_RETURN(const std::vector<WebDatasetSample> samples,
                           ReadWebDatasetSamples(data, origin));
    if (samples.size() != shard.samples) {
      return bad(fmt::format("holds {} samples but the description says {}", samples.size(),
                             shard.samples));
    }
    auto reader = std::unique_ptr<WebDatasetShardReader>(new WebDatasetShardReader());
    static const ColumnEncoding kStr = ColumnEncoding::Parse("str").value();
    static const ColumnEncoding kBytes = ColumnEncoding::Parse("bytes").value();
    std::map<std::vector<std::string>, uint32_t> config_of;
    for (const WebDatasetSample& sample : samples) {
      std::vector<std::string> names;
      names.reserve(sample.fields.size() + 1);
      names.push_back("__key__");
      for (const WebDatasetField& f : sample.fields) names.push_back(f.name);
      auto [it, added] = config_of.try_emplace(names, static_cast<uint32_t>(body->configs.size()));
      if (added) {
        auto config = std::make_shared<ShardConfig>();
        config->column_names = std::move(names);
        config->column_encodings.assign(config->column_names.size(), kBytes);
        config->column_encodings[0] = kStr;
        config->column_sizes.assign(config->column_names.size(), std::nullopt);
        config->compression = shard.config->compression;
        body->configs.push_back(std::move(config));
      }
      reader->samples_.push_back({.config = it->second,
                                  .key_offset = body->keys.size(),
                                  .key_size = static_cast<uint32_t>(sample.key.size()),
                                  .first_member = reader->members_.size()});
      body->keys += sample.key;
      for (const WebDatasetField& f : sample.fields) {
        reader->members_.push_back({.offset = f.offset, .size = f.size});
      }
    }
    reader->data_ = data;
    reader->body_ = body;
    reader->owner_ = std::move(body);
    reader->origin_ = std::move(origin);
    return std::unique_ptr<ShardReader>(std::move(reader));
  }

  uint32_t num_samples() const override { return static_cast<uint32_t>(samples_.size()); }
  const std::string& origin() const override { return origin_; }
  const std::shared_ptr<const void>& owner() const override { return owner_; }

  Status ReadSample(uint32_t i, SampleFields& out) const override {
    const SampleAt& s = samples_[i];
    const ShardConfig& config = *body_->configs[s.config];
    out.config = &config;
    out.fields.resize(config.column_names.size());
    out.fields[0] = std::string_view(body_->keys).substr(s.key_offset, s.key_size);
    for (size_t f = 1; f < out.fields.size(); ++f) {
      const Member& m = members_[s.first_member + f - 1];
      out.fields[f] = data_.substr(m.offset, m.size);  // ScanTar kept it inside the archive
    }
    return Status::Ok();
  }

 private:
  WebDatasetShardReader() = default;

  std::string_view data_;
  std::shared_ptr<const Body> body_;
  std::shared_ptr<const void> owner_;  // body_, as the interface hands it out
  std::string origin_;
  std::vector<SampleAt> samples_;
  std::vector<Member> members_;
};

}  // namespace

Result<std::unique_ptr<ShardReader>> WebDatasetFormat::Open(const std::filesystem::path& path,
                                                            const ShardDescription& shard) const {
  FERRY_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  auto body = std::make_shared<Body>();
  body->bytes = std::move(file);
  return WebDatasetShardReader::Open(std::move(body), shard, path.string());
}

Result<std::unique_ptr<ShardReader>> WebDatasetFormat::FromBuffer(std::string data,
                                                                  const ShardDescription& shard,
                                                                  std::string origin) const {
  auto body = std::make_shared<Body>();
  body->bytes = std::move(data);
  return WebDatasetShardReader::Open(std::move(body), shard, std::move(origin));
}

}  // namespace ferry::internal_format
