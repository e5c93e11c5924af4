#include "ferry/format/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <system_error>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "ferry/format/index.h"
#include "ferry/format/local_dataset.h"
#include "ferry/format/mds_shard_reader.h"
#include "format/compression.h"
#include "format/hash.h"
#include "image/jpeg_codec.h"
#include "image/png_codec.h"

namespace ferry {
namespace {

// Checks one file's size and every listed digest; returns what is wrong, or "" when fine.
std::string CheckFile(std::string_view data, const FileInfo& info) {
  if (data.size() != info.bytes) {
    return fmt::format("holds {} bytes but the index says {}", data.size(), info.bytes);
  }
  std::vector<std::string> wrong;
  for (const auto& [algo, expected] : info.hashes) {
    auto actual = HashHex(algo, data);
    if (!actual) {
      wrong.push_back(actual.error().message());
    } else if (*actual != expected) {
      wrong.push_back(fmt::format("{} is {}, index says {}", algo, *actual, expected));
    }
  }
  if (wrong.empty()) return "";
  return fmt::format("hash mismatch: {}", fmt::join(wrong, "; "));
}

// JPEG at an eighth of its size: libjpeg still reads and Huffman-decodes every entropy-coded
// byte (a truncated or garbled scan is found), only the inverse DCT and the pixels are smaller.
Status DecodeImage(EncodingKind kind, std::string_view file) {
  if (kind == EncodingKind::kPng) return DecodePng(file).status();
  return DecodeJpeg(file, /*scale_denominator=*/8).status();
}

// jpeg and png payloads (alone or in lists) are whole image files, stored as they are: decoding
// the image is the only way to know that the payload decodes.
Status DecodeImages(const ColumnEncoding& encoding, const Value& value) {
  switch (encoding.kind()) {
    case EncodingKind::kJpeg:
    case EncodingKind::kPng:
      return DecodeImage(encoding.kind(), std::get<Bytes>(value).data);
    case EncodingKind::kListJpeg:
    case EncodingKind::kJpegArray:
    case EncodingKind::kListPng: {
      const auto& items = std::get<ValueList>(value);
      const EncodingKind kind =
          encoding.kind() == EncodingKind::kListPng ? EncodingKind::kPng : EncodingKind::kJpeg;
      for (size_t i = 0; i < items.size(); ++i) {
        Status s = DecodeImage(kind, std::get<Bytes>(items[i]).data);
        if (!s.ok()) return s.WithContext(fmt::format("element {}", i));
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();  // pil images are checked by DecodeValue itself
  }
}

class ShardVerifier {
 public:
  ShardVerifier(const std::filesystem::path& folder, const VerifyOptions& options,
                VerifyReport& report)
      : folder_(folder), options_(options), report_(report) {}

  void Verify(size_t k, const ShardDescription& entry) {
    const std::filesystem::path raw_path = folder_ / entry.raw_data.basename;
    std::error_code ec;
    const bool raw_exists = std::filesystem::exists(raw_path, ec);
    std::optional<MdsShardReader> reader;

    if (entry.zip_data) {
      const std::filesystem::path zip_path = folder_ / entry.zip_data->basename;
      auto zipped = MappedFile::Open(zip_path);
      if (!zipped) {
        // The raw file alone is enough to read the shard, as the reference does.
        if (!raw_exists) Problem(k, entry.zip_data->basename, zipped.error().message());
      } else {
        report_.bytes_read += zipped->size();
        if (auto why = CheckFile(zipped->data(), *entry.zip_data); !why.empty()) {
          Problem(k, entry.zip_data->basename, why);
        } else {
          auto compression = Compression::Parse(*entry.config->compression);
          auto raw = compression ? compression->Decompress(zipped->data(), entry.raw_data.bytes)
                                 : Result<std::string>(compression.error());
          if (!raw) {
            Problem(k, entry.zip_data->basename, raw.error().message());
          } else if (auto why2 = CheckFile(*raw, entry.raw_data); !why2.empty()) {
            Problem(k, entry.zip_data->basename, "decompressed shard " + why2);
          } else {
            auto r = MdsShardReader::FromBuffer(std::move(*raw), entry, entry.zip_data->basename);
            if (!r) {
              Problem(k, entry.zip_data->basename, StripOrigin(r.error().message()));
            } else {
              reader.emplace(std::move(*r));
            }
          }
        }
      }
    }
    if (raw_exists || !entry.zip_data) {
      auto mapped = MappedFile::Open(raw_path);
      if (!mapped) {
        Problem(k, entry.raw_data.basename, mapped.error().message());
      } else {
        report_.bytes_read += mapped->size();
        if (auto why = CheckFile(mapped->data(), entry.raw_data); !why.empty()) {
          Problem(k, entry.raw_data.basename, why);
        } else {
          auto r = MdsShardReader::Open(raw_path, entry);
          if (!r) {
            Problem(k, entry.raw_data.basename, StripOrigin(r.error().message()));
          } else if (!reader) {
            reader.emplace(std::move(*r));
          }
        }
      }
    }
    if (reader) VerifySamples(k, *reader, entry);
  }

 private:
  void VerifySamples(size_t k, const MdsShardReader& reader, const ShardDescription& entry) {
    const ShardConfig& config = reader.config();
    std::vector<std::string_view> fields(reader.num_columns());
    for (uint32_t i = 0; i < reader.num_samples(); ++i) {
      ++report_.samples;
      if (Status s = reader.ReadFields(i, fields); !s.ok()) {
        Problem(k, entry.raw_data.basename, StripOrigin(s.message()));
        return;  // one bad record usually means the rest are shifted too
      }
      if (!options_.decode_samples) continue;
      for (size_t c = 0; c < fields.size(); ++c) {
        auto v = DecodeValue(config.column_encodings[c], fields[c]);
        Status s = v ? DecodeImages(config.column_encodings[c], *v) : v.error();
        if (!s.ok()) {
          Problem(
              k, entry.raw_data.basename,
              fmt::format("sample {}: column '{}': {}", i, config.column_names[c], s.message()));
          return;
        }
      }
    }
  }

  // Reader errors start with the file path, which the report already names.
  std::string StripOrigin(const std::string& message) const {
    const size_t colon = message.find(": ");
    return colon == std::string::npos ? message : message.substr(colon + 2);
  }

  void Problem(size_t k, std::string file, std::string what) {
    report_.problems.push_back({k, std::move(file), std::move(what)});
  }

  const std::filesystem::path& folder_;
  const VerifyOptions& options_;
  VerifyReport& report_;
};

}  // namespace

std::vector<size_t> VerifyReport::bad_shards() const {
  std::set<size_t> bad;
  for (const auto& p : problems) bad.insert(p.shard);
  return {bad.begin(), bad.end()};
}

Result<VerifyReport> VerifyDataset(const std::filesystem::path& root,
                                   const VerifyOptions& options) {
  const std::filesystem::path folder = options.split.empty() ? root : root / options.split;
  FERRY_ASSIGN_OR_RETURN(DatasetDescription index, ReadLocalIndex(folder));
  VerifyReport report;
  ShardVerifier verifier(folder, options, report);
  for (size_t k = 0; k < index.shards.size(); ++k) {
    verifier.Verify(k, index.shards[k]);
    ++report.shards;
    if (options.progress) options.progress(k + 1, index.shards.size(), report.bytes_read);
  }
  return report;
}

}  // namespace ferry
