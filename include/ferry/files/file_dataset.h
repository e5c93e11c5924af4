// FileDataset: a folder of many small files - a remote prefix (s3://bucket/images/) or a local
// path (often a FUSE mount where every open costs a round trip) - read as a dataset, with the
// files of the coming samples fetched ahead, many at once, into the node-local cache.
//
//   FileDatasetOptions options;
//   options.root = "s3://bucket/images/";
//   options.local = "/tmp/cache/images";
//   auto ds = FileDataset::Open(options).value();
//   auto it = ds->Iterate({.world = {}, .worker = {}, .epoch = 0}).value();
//   while (auto sample = it->Next().value()) { ... sample->data, sample->label ... }
//
// Listing: the root is listed once (recursively, filtered by `extensions`, sorted by path) and
// the list - paths, sizes, etags - is kept in <local>/.ferry/listing.json; later opens reuse it
// unless `refresh` is set or it is older than `listing_max_age`. A new listing that gives a file
// another etag or size than the stored one drops that file's cached copy, so a changed remote
// file is fetched again. With labels "folder", a file's label is the rank of its first folder
// under the root among all such folders (torchvision's ImageFolder rule). A root that holds an
// MDS dataset (index.json beside shard.*.mds files, in it or in a folder under it) is refused
// at open: it is read with StreamingDataset.
//
// Encoding: the `data` column is jpeg, png or bytes, decided once from the names of all the
// listed files (the image kind most of them have, else bytes; or `encoding` forced). Listed
// files whose names do not match it are an error at open that names them, unless `skip_other`
// leaves them out: a stray file never silently changes the column's type.
//
// Cache: the files are cached through the streaming engine's ShardCache, each file one "shard"
// under its path relative to the root: the same cross-process locks, temporary-then-rename
// downloads and eviction under `cache_limit`. Without `local`, a local root is read in place.
//
// Order (FileOrder): a permutation of the files per epoch (identity without shuffle; a pure
// function of shuffle_seed and epoch), dealt as torch's DistributedSampler deals it: padded by
// repeating its start to a multiple of the ranks (or cut to one, `drop_last`), rank r takes every
// ranks-th file from position r, and the rank's DataLoader workers take every workers-th of those.
// Every file is read exactly once per epoch whenever the ranks divide the file count.
//
// Fetch-ahead: an iterator keeps up to `concurrency` files being fetched ahead of its position
// (and at most `max_bytes_in_flight` bytes fetched and not yet read). With concurrency "auto"
// (nullopt) it measures each fetch's latency and the mean file size and keeps
// target_bytes_per_s x latency / mean size requests in flight (Little's law), within
// [kMinAutoConcurrency, max_concurrency]; the choice is the gauge /ferry/files/concurrency.
//
// Packing (`pack`): the files an iterator fetched in a full epoch are also written, in its
// order, into local MDS shards under <local>/.ferry/packs/ (one folder per worker of the world,
// published by renaming it into place once complete, with a map of file -> sample); any later
// read of a packed file comes from the shards, so later epochs open a few large files instead of
// one per sample. In pack mode an iterator fetches into memory and does not keep per-file copies.
//
// Metrics: /ferry/files/{fetched,fetched_bytes,missing,packed_reads,wait_ns} and
// /ferry/files/concurrency, beside the cache's and the stores' own counters.
//
// Thread-safety: FileDataset is shared by any number of iterators and threads; one FileIterator
// is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"

namespace ferry {

enum class FileLabels { kNone, kFolder };
enum class OnMissing { kError, kSkip };
/// The encoding of the `data` column that ferry.DataLoader decodes: kAuto decides it from the
/// names of all the listed files (src/files/file_encoding.h).
enum class FileEncoding { kAuto, kJpeg, kPng, kBytes };

struct FileDatasetOptions {
  std::string root;                     // a store URL or a local path: the folder of files
  std::string local;                    // the cache folder; empty: a local root is read in place
  std::optional<uint64_t> cache_limit;  // bytes of cached files
  bool shuffle = false;
  uint64_t shuffle_seed = 9176;
  bool drop_last = false;  // cut to a multiple of the ranks instead of padding
  FileLabels labels = FileLabels::kFolder;
  /// Kept file name endings, case-insensitive, with or without the dot ("jpg", ".png"); empty:
  /// every file.
  std::vector<std::string> extensions;
  /// The `data` column's encoding. A listed file whose name does not match it (notes.txt among
  /// JPEGs) is an error at open naming it, or left out with `skip_other`.
  FileEncoding encoding = FileEncoding::kAuto;
  bool skip_other = false;
  bool refresh = false;  // list the root again even if a stored listing is there
  std::optional<std::chrono::seconds> listing_max_age;  // nullopt: a stored listing never expires
  OnMissing on_missing = OnMissing::kError;
  bool pack = false;
  std::optional<uint32_t> concurrency;  // files fetched at once per iterator; nullopt: auto
  uint32_t max_concurrency = 256;       // the bound of auto
  uint64_t target_bytes_per_s = uint64_t{1} << 30;  // what auto sizes for
  uint64_t max_bytes_in_flight = uint64_t{256} << 20;
};

/// One file of the listing.
struct FileEntry {
  std::string path;  // relative to the root, '/'-separated
  uint64_t size = 0;
  std::string etag;    // the store's etag (or the local file's mtime and size); may be empty
  int64_t label = -1;  // -1 without labels
  friend bool operator==(const FileEntry&, const FileEntry&) = default;
};

struct FileSample {
  uint64_t index = 0;  // in the listing
  std::string path;    // relative to the root
  int64_t label = -1;
  std::string data;  // the file's bytes
};

struct FileIterateOptions {
  WorldShape world;
  WorkerId worker;
  uint64_t epoch = 0;
  uint64_t skip = 0;  // samples of this worker's sequence already read (resumption)
};

class FileIterator {
 public:
  virtual ~FileIterator() = default;
  /// The next file, nullopt at the end of the worker's share of the epoch, or the error that
  /// stopped it (naming the file). With on_missing kSkip a file gone from the remote is skipped.
  virtual Result<std::optional<FileSample>> Next() = 0;
  /// Waits up to `timeout` for the fetch the next Next() would wait for; true when it will not
  /// wait (a file skipped as missing may still make it wait for the one after). For callers that
  /// must stay responsive: Python checks for Ctrl+C between such waits.
  virtual bool AwaitNext(std::chrono::milliseconds /*timeout*/) { return true; }
  /// Files of this worker's sequence not yet returned or skipped.
  virtual uint64_t remaining() const = 0;
};

class FileDataset {
 public:
  /// Lists the root (or reuses the stored listing) and opens the cache.
  static Result<std::shared_ptr<FileDataset>> Open(FileDatasetOptions options);
  virtual ~FileDataset() = default;

  virtual const FileDatasetOptions& options() const = 0;
  virtual const std::vector<FileEntry>& files() const = 0;
  /// The label names (first folders under the root), sorted; empty without labels.
  virtual const std::vector<std::string>& classes() const = 0;
  /// True when this open listed the root (false: the stored listing was reused).
  virtual bool listed() const = 0;
  /// The `data` column's encoding: "jpeg", "png" or "bytes" (every file in files() matches it).
  virtual const std::string& data_encoding() const = 0;
  /// Listed files left out because their names did not match data_encoding() (skip_other).
  virtual uint64_t skipped_other() const = 0;

  /// File `index` alone: from a pack or the cache, else fetched now.
  virtual Result<FileSample> Get(uint64_t index) = 0;

  /// The files one worker reads in `epoch`, in order (see the file comment).
  virtual Result<std::vector<uint64_t>> Order(const WorldShape& world, const WorkerId& worker,
                                              uint64_t epoch) const = 0;

  /// An iterator over one worker's files of one epoch, fetching ahead.
  virtual Result<std::unique_ptr<FileIterator>> Iterate(const FileIterateOptions& options) = 0;

 protected:
  FileDataset() = default;
};

}  // namespace ferry
