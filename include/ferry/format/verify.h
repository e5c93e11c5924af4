// VerifyDataset: checks every byte of a local dataset against its index, whatever the format
// of its shards (MDS, WebDataset, Mosaic's JSON/CSV/TSV).
//
// For each shard and each of its files (a .meta companion, then the data): the files exist with
// the sizes the index gives; every listed hash of every file matches; a compressed file
// decompresses to exactly its raw size and the raw hashes; the shard opens through its format
// (for MDS: the header, config block and every offset are valid); and every sample splits into
// its fields and each decodes (ndarray shapes, image list tables, UTF-8 text, numeric text, JSON
// values, ..., and every jpeg and png image, alone or in a list, through the image codecs). All
// problems are collected, one line per bad file or sample, rather than stopping at the first.
//
// Thread-safety: a free function; it reads the dataset folder only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ferry/result.h"

namespace ferry {

struct VerifyOptions {
  std::string split;
  bool decode_samples = true;  // also decode every payload, not only the layout
  /// Called after each shard with (shards done, total shards, bytes read so far).
  std::function<void(size_t, size_t, uint64_t)> progress;
};

struct ShardProblem {
  size_t shard = 0;
  std::string file;     // basename of the file at fault
  std::string problem;  // what is wrong
};

struct VerifyReport {
  size_t shards = 0;
  uint64_t samples = 0;
  uint64_t bytes_read = 0;
  std::vector<ShardProblem> problems;

  bool ok() const { return problems.empty(); }
  /// Indexes of the shards with at least one problem, ascending.
  std::vector<size_t> bad_shards() const;
};

/// A report (possibly listing problems), or an error when the index itself cannot be read.
Result<VerifyReport> VerifyDataset(const std::filesystem::path& root, const VerifyOptions& options);

}  // namespace ferry
