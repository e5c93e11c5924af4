#include "format/binary_index.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "base/little_endian.h"

namespace ferry::internal_format {
namespace {

constexpr std::string_view kMagic = "FERRYIX1";
constexpr size_t kHeaderBytes = 40;

// Body, in order:
//   configs:  count, then each: column names (count, strings), column encodings (count, their
//             text), column sizes (count, each 0 = none or size + 1), compression (0/1, string),
//             hash names (count, strings), size limit (0 = none or limit + 1), newline (string),
//             split encodings (count, strings)
//   formats:  count, then each name (string)
//   shards:   count, then each: config number, format number, samples, raw_data (file),
//             zip_data (0/1, file), companions (count, then each: file, 0/1, file)
//   file:     basename (string), bytes, hashes (count, then each: algorithm, digest)
// Numbers are LEB128; a string is its length, then its bytes.

class BodyWriter {
 public:
  void Number(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void String(std::string_view s) {
    Number(s.size());
    out_.append(s);
  }
  void Strings(const std::vector<std::string>& list) {
    Number(list.size());
    for (const std::string& s : list) String(s);
  }
  void File(const FileInfo& file) {
    String(file.basename);
    Number(file.bytes);
    Number(file.hashes.size());
    for (const auto& [algorithm, digest] : file.hashes) {
      String(algorithm);
      String(digest);
    }
  }
  void OptionalFile(const std::optional<FileInfo>& file) {
    Number(file ? 1 : 0);
    if (file) File(*file);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

// Reads the body; the first read past its end or of a malformed value sets failed() and yields
// zeros and empty strings from then on, so that a decode checks once per record.
class BodyReader {
 public:
  explicit BodyReader(std::string_view body) : p_(body.data()), end_(body.data() + body.size()) {}

  bool failed() const { return failed_; }
  bool at_end() const { return p_ == end_; }

  uint64_t Number() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Fail();
      const auto byte = static_cast<uint8_t>(*p_++);
      v |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return Fail();
  }
  // A count of items that each take at least `item_bytes`: more than the bytes left hold is
  // damage, and must not reserve memory for it.
  uint64_t Count(uint64_t item_bytes = 1) {
    const uint64_t n = Number();
    if (n > static_cast<uint64_t>(end_ - p_) / item_bytes) return Fail();
    return n;
  }
  std::string String() {
    const uint64_t n = Count();
    if (failed_) return {};
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<std::string> Strings() {
    std::vector<std::string> list(Count());
    for (std::string& s : list) s = String();
    return list;
  }
  FileInfo File() {
    FileInfo file;
    file.basename = String();
    file.bytes = Number();
    file.hashes.resize(Count());
    for (auto& [algorithm, digest] : file.hashes) {
      algorithm = String();
      digest = String();
    }
    return file;
  }
  std::optional<FileInfo> OptionalFile() {
    if (!Flag()) return std::nullopt;
    return File();
  }
  bool Flag() {
    const uint64_t v = Number();
    if (v > 1) Fail();
    return v == 1;
  }

 private:
  uint64_t Fail() {
    failed_ = true;
    p_ = end_;
    return 0;
  }

  const char* p_;
  const char* end_;
  bool failed_ = false;
};

void WriteConfig(const ShardConfig& config, BodyWriter& w) {
  w.Strings(config.column_names);
  w.Number(config.column_encodings.size());
  for (const ColumnEncoding& e : config.column_encodings) w.String(e.text());
  w.Number(config.column_sizes.size());
  for (const std::optional<uint32_t>& size : config.column_sizes) {
    w.Number(size ? uint64_t{*size} + 1 : 0);
  }
  w.Number(config.compression ? 1 : 0);
  if (config.compression) w.String(*config.compression);
  w.Strings(config.hashes);
  w.Number(config.size_limit ? *config.size_limit + 1 : 0);
  w.String(config.newline);
  w.Strings(config.split_encodings);
}

Result<ShardConfig> ReadConfig(BodyReader& r) {
  ShardConfig config;
  config.column_names = r.Strings();
  const uint64_t encodings = r.Count();
  for (uint64_t i = 0; i < encodings && !r.failed(); ++i) {
    FERRY_ASSIGN_OR_RETURN(ColumnEncoding encoding, ColumnEncoding::Parse(r.String()));
    config.column_encodings.push_back(std::move(encoding));
  }
  config.column_sizes.resize(r.Count());
  for (std::optional<uint32_t>& size : config.column_sizes) {
    const uint64_t v = r.Number();
    if (v > 0) size = static_cast<uint32_t>(v - 1);
  }
  if (r.Flag()) config.compression = r.String();
  config.hashes = r.Strings();
  if (const uint64_t limit = r.Number(); limit > 0) config.size_limit = limit - 1;
  config.newline = r.String();
  config.split_encodings = r.Strings();
  return config;
}

}  // namespace

BinaryIndexSource DescribeIndexSource(std::string_view index_json) {
  return {.bytes = index_json.size(), .xxh3 = XXH3_64bits(index_json.data(), index_json.size())};
}

Result<BinaryIndexSource> DescribeIndexFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::string chunk(1 << 20, '\0');
  BinaryIndexSource source;
  Status status;
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) status = ErrnoToStatus(errno, "read", path);
    if (n <= 0) break;
    XXH3_64bits_update(state.get(), chunk.data(), static_cast<size_t>(n));
    source.bytes += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (!status.ok()) return status;
  source.xxh3 = XXH3_64bits_digest(state.get());
  return source;
}

std::string EncodeBinaryIndex(const DatasetDescription& description,
                              const BinaryIndexSource& source) {
  // Shards of one writer run share their config object; equal configs that are not shared (a
  // merged index of many runs) are stored once too.
  std::vector<const ShardConfig*> configs;
  std::map<const ShardConfig*, uint64_t> config_number;
  std::vector<std::string_view> formats;
  std::map<std::string_view, uint64_t> format_number;
  std::vector<std::pair<uint64_t, uint64_t>> numbers;  // per shard: config, format
  numbers.reserve(description.shards.size());
  for (const ShardDescription& shard : description.shards) {
    auto [it, added] = config_number.try_emplace(shard.config.get(), configs.size());
    if (added) {
      for (size_t i = 0; i < configs.size(); ++i) {
        if (*configs[i] == *shard.config) {
          it->second = i;
          break;
        }
      }
      if (it->second == configs.size()) configs.push_back(shard.config.get());
    }
    auto [format, format_added] = format_number.try_emplace(shard.format, formats.size());
    if (format_added) formats.push_back(shard.format);
    numbers.emplace_back(it->second, format->second);
  }

  BodyWriter w;
  w.Number(configs.size());
  for (const ShardConfig* config : configs) WriteConfig(*config, w);
  w.Number(formats.size());
  for (std::string_view format : formats) w.String(format);
  w.Number(description.shards.size());
  for (size_t i = 0; i < description.shards.size(); ++i) {
    const ShardDescription& shard = description.shards[i];
    w.Number(numbers[i].first);
    w.Number(numbers[i].second);
    w.Number(shard.samples);
    w.File(shard.raw_data);
    w.OptionalFile(shard.zip_data);
    w.Number(shard.companions.size());
    for (const CompanionFile& companion : shard.companions) {
      w.File(companion.raw);
      w.OptionalFile(companion.zip);
    }
  }

  const std::string& body = w.out();
  std::string out;
  out.reserve(kHeaderBytes + body.size());
  out.append(kMagic);
  AppendLE<uint64_t>(out, source.bytes);
  AppendLE<uint64_t>(out, source.xxh3);
  AppendLE<uint64_t>(out, body.size());
  AppendLE<uint64_t>(out, XXH3_64bits(body.data(), body.size()));
  out.append(body);
  return out;
}

Result<DatasetDescription> DecodeBinaryIndex(std::string_view bytes,
                                             const BinaryIndexSource& source,
                                             std::string_view origin) {
  const auto damaged = [&](std::string_view what) {
    return DataLossError(fmt::format("{}: not a whole ferry binary index: {}", origin, what));
  };
  if (bytes.size() < kHeaderBytes || bytes.substr(0, kMagic.size()) != kMagic) {
    return damaged("no header of this layout");
  }
  const BinaryIndexSource made_from{.bytes = LoadLE<uint64_t>(bytes.data() + 8),
                                    .xxh3 = LoadLE<uint64_t>(bytes.data() + 16)};
  if (made_from != source) {
    return FailedPreconditionError(
        fmt::format("{}: made from another index.json ({} bytes, xxh3 {:016x}; this one is {} "
                    "bytes, xxh3 {:016x})",
                    origin, made_from.bytes, made_from.xxh3, source.bytes, source.xxh3));
  }
  const std::string_view body = bytes.substr(kHeaderBytes);
  if (LoadLE<uint64_t>(bytes.data() + 24) != body.size()) {
    return damaged(fmt::format("the header says {} bytes of body, the file has {}",
                               LoadLE<uint64_t>(bytes.data() + 24), body.size()));
  }
  if (LoadLE<uint64_t>(bytes.data() + 32) != XXH3_64bits(body.data(), body.size())) {
    return damaged("the body does not match its digest");
  }

  BodyReader r(body);
  std::vector<std::shared_ptr<const ShardConfig>> configs(r.Count());
  for (auto& config : configs) {
    auto read = ReadConfig(r);
    if (!read) return damaged(read.error().message());
    config = std::make_shared<const ShardConfig>(std::move(*read));
  }
  const std::vector<std::string> formats = r.Strings();
  DatasetDescription description;
  // config, format, samples, basename, bytes, hashes, zip_data, companions
  constexpr uint64_t kLeastShardBytes = 8;
  description.shards.resize(r.Count(kLeastShardBytes));
  for (ShardDescription& shard : description.shards) {
    const uint64_t config = r.Number();
    const uint64_t format = r.Number();
    if (r.failed() || config >= configs.size() || format >= formats.size()) {
      return damaged("a shard refers to a config or format it does not hold");
    }
    shard.config = configs[config];
    shard.format = formats[format];
    shard.samples = r.Number();
    shard.raw_data = r.File();
    shard.zip_data = r.OptionalFile();
    shard.companions.resize(r.Count());
    for (CompanionFile& companion : shard.companions) {
      companion.raw = r.File();
      companion.zip = r.OptionalFile();
    }
  }
  if (r.failed() || !r.at_end()) return damaged("the body does not parse");
  return description;
}

}  // namespace ferry::internal_format
