#include "ferry/format/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <system_error>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "ferry/format/index.h"
#include "ferry/format/local_dataset.h"
#include "ferry/format/shard_format.h"
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
    auto format = FindShardFormat(entry.format);
    if (!format) {
      Problem(k, entry.raw_data.basename, format.error().message());
      return;
    }
    std::vector<std::string> raws;
    bool whole = true;
    for (const ShardFile& file : entry.files()) {
      std::optional<std::string> raw = LoadFile(k, entry, file);
      if (raw) {
        raws.push_back(std::move(*raw));
      } else {
        whole = false;
      }
    }
    if (!whole) return;
    auto reader = (*format)->FromBuffers(std::move(raws), entry, entry.raw_data.basename);
    if (!reader) {
      Problem(k, entry.raw_data.basename, StripOrigin(reader.error().message()));
      return;
    }
    VerifySamples(k, **reader, entry);
  }

 private:
  // The raw contents of `file`, after checking every form of it that is here (sizes, hashes, a
  // compressed form's decompression); nullopt, with the problems said, when neither form is
  // usable. A raw file alone is enough to read the shard, as the reference does.
  std::optional<std::string> LoadFile(size_t k, const ShardDescription& entry,
                                      const ShardFile& file) {
    const std::filesystem::path raw_path = folder_ / file.raw->basename;
    std::error_code ec;
    const bool raw_exists = std::filesystem::exists(raw_path, ec);
    std::optional<std::string> raw;
    if (file.zip) {
      const std::filesystem::path zip_path = folder_ / file.zip->basename;
      auto zipped = MappedFile::Open(zip_path);
      if (!zipped) {
        if (!raw_exists) Problem(k, file.zip->basename, zipped.error().message());
      } else {
        report_.bytes_read += zipped->size();
        if (auto why = CheckFile(zipped->data(), *file.zip); !why.empty()) {
          Problem(k, file.zip->basename, why);
        } else {
          auto compression = Compression::Parse(*entry.config->compression);
          auto unzipped = compression ? compression->Decompress(zipped->data(), file.raw->bytes)
                                      : Result<std::string>(compression.error());
          if (!unzipped) {
            Problem(k, file.zip->basename, unzipped.error().message());
          } else if (auto why2 = CheckFile(*unzipped, *file.raw); !why2.empty()) {
            Problem(k, file.zip->basename, "decompressed shard " + why2);
          } else {
            raw = std::move(*unzipped);
          }
        }
      }
    }
    if (raw_exists || !file.zip) {
      auto mapped = MappedFile::Open(raw_path);
      if (!mapped) {
        Problem(k, file.raw->basename, mapped.error().message());
      } else {
        report_.bytes_read += mapped->size();
        if (auto why = CheckFile(mapped->data(), *file.raw); !why.empty()) {
          Problem(k, file.raw->basename, why);
        } else if (!raw) {
          raw = std::string(mapped->data());
        }
      }
    }
    return raw;
  }

  void VerifySamples(size_t k, const ShardReader& reader, const ShardDescription& entry) {
    SampleFields sample;
    for (uint32_t i = 0; i < reader.num_samples(); ++i) {
      ++report_.samples;
      if (Status s = reader.ReadSample(i, sample); !s.ok()) {
        Problem(k, entry.raw_data.basename, StripOrigin(s.message()));
        return;  // one bad record usually means the rest are shifted too
      }
      if (!options_.decode_samples) continue;
      const ShardConfig& config = *sample.config;
      for (size_t c = 0; c < sample.fields.size(); ++c) {
        auto v = DecodeValue(config.column_encodings[c], sample.fields[c]);
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
