// File packs: the files one iterator fetched in a full epoch, written in its order into local MDS
// shards, so that later epochs read a few large local files instead of one per sample.
//
//   <local>/.ferry/packs/<name>/            one pack: an MDS dataset (columns data: bytes,
//                                           label: int, path: str) and files.json, the listing
//                                           index of each sample and the listing's digest
//   <local>/.ferry/packs/<name>.tmp-<pid>-<n>   a pack being written
//
// A pack becomes visible only by the rename of its complete folder (index.json and files.json
// written first), so a killed writer leaves a .tmp-* folder that no reader opens and that the
// next PackWriter of the folder removes once its writer is gone (the pid in its name is dead).
// Two processes packing under one name both write; the first rename wins and the other drops
// its copy. A pack whose listing digest is not the dataset's current one (the root changed and
// was listed again) is ignored.
//
// Thread-safety: a PackWriter is used by one thread; a PackSet may be read from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ferry/files/file_dataset.h"
#include "ferry/format/local_dataset.h"
#include "ferry/format/mds_writer.h"
#include "ferry/result.h"

namespace ferry::internal_files {

class PackWriter {
 public:
  /// Starts writing pack `name` under `packs_dir` for the listing with digest `listing_digest`.
  static Result<std::unique_ptr<PackWriter>> Create(const std::filesystem::path& packs_dir,
                                                    std::string name, std::string listing_digest);
  ~PackWriter();  // an unpublished pack's folder is removed
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  Status Add(uint64_t file, const FileEntry& entry, std::string_view data);
  /// Finishes the shards and renames the pack into place (or drops it when another process
  /// published the same name first).
  Status Publish();

 private:
  PackWriter() = default;

  std::filesystem::path tmp_;
  std::filesystem::path final_;
  std::string listing_digest_;
  std::unique_ptr<MdsWriter> writer_;
  std::vector<uint64_t> files_;
  bool published_ = false;
};

class PackSet {
 public:
  /// The published packs under `packs_dir` made for `listing_digest` (none when the folder is
  /// missing). A pack that cannot be read is skipped and logged: its files are fetched again.
  static Result<std::shared_ptr<const PackSet>> Load(const std::filesystem::path& packs_dir,
                                                     std::string_view listing_digest);

  bool Has(uint64_t file) const { return where_.contains(file); }
  size_t packed_files() const { return where_.size(); }
  /// The bytes of packed file `file`. \pre Has(file)
  Result<std::string> Read(uint64_t file) const;

 private:
  std::vector<std::unique_ptr<LocalDataset>> packs_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> where_;  // file -> (pack, sample)
};

/// A digest of a listing's files (paths, sizes, etags): packs are valid only for it.
std::string ListingDigest(const std::vector<FileEntry>& files);

}  // namespace ferry::internal_files
