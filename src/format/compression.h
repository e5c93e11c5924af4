// Shard compression (spec §7): "<family>" or "<family>:<level>" for br, bz2, gz, snappy, zstd.
//
// A whole raw shard is compressed in one piece. zstd output is one frame that records the
// content size (the reference's python-zstd reader refuses anything else); gz output is one
// gzip member with Python's header layout; snappy is the raw block format (not framing).
//
// Thread-safety: Compression is an immutable value; Compress/Decompress are reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry {

enum class CompressionFamily { kBrotli, kBzip2, kGzip, kSnappy, kZstd };

class Compression {
 public:
  /// "zstd", "zstd:7", "br:11", ... kInvalidArgument for an unknown family or a level out of
  /// range (snappy takes none).
  static Result<Compression> Parse(std::string_view spec);

  CompressionFamily family() const { return family_; }
  /// The spec exactly as given ("zstd:7"), which index.json stores.
  const std::string& spec() const { return spec_; }
  /// The file extension, the family name only: "zstd" for "zstd:7".
  std::string_view extension() const;
  int level() const { return level_; }

  Result<std::string> Compress(std::string_view raw) const;

  /// Compress into `out` (replacing its contents), reusing its capacity: a writer that
  /// compresses shard after shard does not fault in fresh pages for each.
  Status CompressInto(std::string_view raw, std::string& out) const;

  /// Decompresses a whole file. `max_size` bounds the output: a stream that would expand past
  /// it is kDataLoss (a corrupt or hostile size field never makes us allocate more).
  Result<std::string> Decompress(std::string_view compressed, uint64_t max_size) const;

 private:
  CompressionFamily family_ = CompressionFamily::kZstd;
  std::string spec_;
  int level_ = 0;
};

}  // namespace ferry
