#include "files/file_stream_view.h"

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/encoding.h"
#include "ferry/format/index.h"

namespace ferry {
namespace {

// One sample's bytes and the views into them.
struct OwnedSample {
  FileSample file;
  char label[8];  // MDS int: int64 little-endian
};

Sample ToSample(FileSample file, const std::shared_ptr<const ShardConfig>& config) {
  auto owned = std::make_shared<OwnedSample>();
  owned->file = std::move(file);
  const int64_t label = owned->file.label;
  std::memcpy(owned->label, &label, sizeof(label));  // little-endian hosts only (as MDS)
  Sample sample;
  sample.id = owned->file.index;
  sample.stream = 0;
  sample.fields = {owned->file.data, std::string_view(owned->label, sizeof(owned->label)),
                   owned->file.path};
  sample.config = config.get();
  sample.owner = std::move(owned);
  return sample;
}

class FileSampleIterator final : public SampleIterator {
 public:
  FileSampleIterator(std::unique_ptr<FileIterator> it, std::shared_ptr<const ShardConfig> config)
      : it_(std::move(it)), config_(std::move(config)) {}

  Result<std::optional<Sample>> Next() override {
    FERRY_ASSIGN_OR_RETURN(std::optional<FileSample> file, it_->Next());
    if (!file) return std::optional<Sample>();
    return std::optional<Sample>(ToSample(std::move(*file), config_));
  }
  bool AwaitNext(std::chrono::milliseconds timeout) override { return it_->AwaitNext(timeout); }
  uint64_t remaining() const override { return it_->remaining(); }

 private:
  std::unique_ptr<FileIterator> it_;
  std::shared_ptr<const ShardConfig> config_;
};

class FileStreamView final : public StreamingDataset {
 public:
  FileStreamView(std::shared_ptr<FileDataset> files, std::shared_ptr<const ShardConfig> config,
                 uint32_t batch_size)
      : files_(std::move(files)), config_(std::move(config)) {
    DatasetDescription index;
    index.shards.push_back({.config = config_,
                            .raw_data = {.basename = "files", .bytes = 0},
                            .samples = files_->files().size(),
                            .format = "file"});
    indexes_.push_back(std::make_shared<const DatasetDescription>(std::move(index)));
    options_.streams.push_back({.remote = files_->options().root,
                                .local = files_->options().local,
                                .split = "",
                                .proportion = std::nullopt,
                                .repeat = std::nullopt,
                                .choose = std::nullopt});
    options_.order.shuffle = files_->options().shuffle;
    options_.order.seed = files_->options().shuffle_seed;
    options_.order.batch_size = batch_size;
    options_.order.drop_last = files_->options().drop_last;
  }

  uint64_t num_samples() const override { return files_->files().size(); }
  uint64_t epoch_samples() const override { return files_->files().size(); }
  const std::vector<std::shared_ptr<const DatasetDescription>>& indexes() const override {
    return indexes_;
  }
  const StreamingOptions& options() const override { return options_; }

  // Files come whole and small: the stop is not heard.
  Result<Sample> Get(uint64_t id, std::stop_token) override {
    FERRY_ASSIGN_OR_RETURN(FileSample file, files_->Get(id));
    return ToSample(std::move(file), config_);
  }

  Result<std::shared_ptr<const EpochPlan>> Plan(const WorldShape&, uint64_t, uint64_t) override {
    return UnimplementedError(
        fmt::format("{}: a folder of files has no MDS epoch plan (its order is FileDataset::Order)",
                    files_->options().root));
  }

  Result<std::unique_ptr<SampleIterator>> Iterate(const IterateOptions& options) override {
    if (options.resume_from != 0) {
      return UnimplementedError(fmt::format(
          "{}: a folder of files resumes per worker (skip), not from a world-wide position",
          files_->options().root));
    }
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<FileIterator> it,
                           files_->Iterate({.world = options.world,
                                            .worker = options.worker,
                                            .epoch = options.epoch,
                                            .skip = options.skip}));
    return std::unique_ptr<SampleIterator>(new FileSampleIterator(std::move(it), config_));
  }

 private:
  std::shared_ptr<FileDataset> files_;
  std::shared_ptr<const ShardConfig> config_;
  std::vector<std::shared_ptr<const DatasetDescription>> indexes_;
  StreamingOptions options_;
};

}  // namespace

Result<std::shared_ptr<StreamingDataset>> ViewAsStream(std::shared_ptr<FileDataset> files,
                                                       uint32_t batch_size) {
  if (batch_size == 0) return InvalidArgumentError("batch_size must be at least 1");
  const std::string data_encoding = files->data_encoding();
  auto config = std::make_shared<ShardConfig>();
  for (const auto& [name, encoding] : std::vector<std::pair<std::string, std::string>>{
           {"data", data_encoding}, {"label", "int"}, {"path", "str"}}) {
    FERRY_ASSIGN_OR_RETURN(ColumnEncoding parsed, ColumnEncoding::Parse(encoding));
    config->column_names.push_back(name);
    config->column_encodings.push_back(std::move(parsed));
    config->column_sizes.push_back(config->column_encodings.back().fixed_size());
  }
  return std::shared_ptr<StreamingDataset>(
      new FileStreamView(std::move(files), std::move(config), batch_size));
}

}  // namespace ferry
