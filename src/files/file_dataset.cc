// FileDataset (include/ferry/files/file_dataset.h) from its pieces:
//   file_listing  the root's files, listed once and stored in the cache folder
//   file_order    which files a worker reads in an epoch
//   fetch_ahead   many fetches at once, ahead of the reader, handed over in order
//   file_pack     packing fetched files into local MDS shards
// and the streaming engine's ShardCache for the per-file cache: each file is one "shard" of a
// synthetic index (its path, its listed size), so the cross-process locks, the temporary +
// rename downloads and eviction under cache_limit are the very same code.
#include "ferry/files/file_dataset.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/file_util.h"
#include "base/log.h"
#include "base/mutex.h"
#include "cache/cache_layout.h"
#include "cache/file_lock.h"
#include "cache/shard_downloader.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "files/fetch_ahead.h"
#include "files/file_encoding.h"
#include "files/file_listing.h"
#include "files/file_order.h"
#include "files/file_pack.h"
#include "storage/http/http_types.h"
#include "storage/instrumented_store.h"
#include "storage/object_key.h"

namespace ferry {
namespace fs = std::filesystem;
using internal_files::FetchAhead;
using internal_files::Listing;
using internal_files::PackSet;
using internal_files::PackWriter;

namespace {

struct FileMetrics {
  metrics::Counter& fetched = metrics::GetCounter("/ferry/files/fetched");
  metrics::Counter& fetched_bytes = metrics::GetCounter("/ferry/files/fetched_bytes");
  metrics::Counter& missing = metrics::GetCounter("/ferry/files/missing");
  metrics::Counter& packed_reads = metrics::GetCounter("/ferry/files/packed_reads");
  metrics::Counter& wait_ns = metrics::GetCounter("/ferry/files/wait_ns");

  static FileMetrics& Get() {
    static FileMetrics instance;
    return instance;
  }
};

fs::path ListingPath(const fs::path& local) {
  return local / internal_cache::kBookkeepingFolder / "listing.json";
}

fs::path PacksDir(const fs::path& local) {
  return local / internal_cache::kBookkeepingFolder / "packs";
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Removes the cached copy of `path` under its use-lock, so that no reader has it open. A copy
// pinned by a reader elsewhere is waited for a little, then reported.
Status DropCachedCopy(const internal_cache::CacheLayout& layout, const std::string& path) {
  using internal_cache::FileLock;
  const fs::path file = layout.FilePath(path);
  std::error_code ec;
  if (!fs::exists(file, ec)) return Status::Ok();
  for (int attempt = 0; attempt < 50; ++attempt) {
    FERRY_ASSIGN_OR_RETURN(
        std::optional<FileLock> lock,
        FileLock::TryLock(layout.UseLockPath(path), internal_cache::LockMode::kExclusive));
    if (lock) {
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        return ErrnoToStatus(errno, "remove the outdated cached copy", file);
      }
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return UnavailableError(fmt::format(
      "{}: changed remotely, and its outdated cached copy is in use by another process; try "
      "again when it is done",
      file.string()));
}

class FileDatasetImpl;

class FileIteratorImpl final : public FileIterator {
 public:
  FileIteratorImpl(std::shared_ptr<FileDatasetImpl> dataset, std::unique_ptr<FetchAhead> fetch,
                   std::unique_ptr<PackWriter> pack)
      : dataset_(std::move(dataset)), fetch_(std::move(fetch)), pack_(std::move(pack)) {}

  Result<std::optional<FileSample>> Next() override;
  bool AwaitNext(std::chrono::milliseconds timeout) override { return fetch_->AwaitNext(timeout); }
  uint64_t remaining() const override { return fetch_->remaining(); }

 private:
  std::shared_ptr<FileDatasetImpl> dataset_;
  std::unique_ptr<FetchAhead> fetch_;
  std::unique_ptr<PackWriter> pack_;
};

class FileDatasetImpl final : public FileDataset,
                              public std::enable_shared_from_this<FileDatasetImpl> {
 public:
  FileDatasetImpl(FileDatasetOptions options, std::shared_ptr<ObjectStore> remote,
                  std::string prefix, std::string root_url, fs::path cache_root, Listing listing,
                  bool listed, std::string data_encoding, uint64_t skipped_other)
      : options_(std::move(options)),
        remote_(std::move(remote)),
        prefix_(std::move(prefix)),
        root_url_(std::move(root_url)),
        cache_root_(std::move(cache_root)),
        listing_(std::move(listing)),
        listed_(listed),
        data_encoding_(std::move(data_encoding)),
        skipped_other_(skipped_other) {}

  Status Init() {
    // Each file is a shard of one sample, described by the listing; the cache fetches it as it
    // would any shard, and FileDataset reads it whole.
    DatasetDescription index;
    auto config = std::make_shared<const ShardConfig>();
    index.shards.reserve(listing_.files.size());
    for (const FileEntry& f : listing_.files) {
      index.shards.push_back({.config = config,
                              .raw_data = {.basename = f.path, .bytes = f.size},
                              .samples = 1,
                              .format = "file"});
    }
    FERRY_ASSIGN_OR_RETURN(
        cache_, ShardCache::Open(remote_, prefix_, std::move(index),
                                 {.local = cache_root_,
                                  .cache_limit = options_.cache_limit,
                                  // A 16th of the limit: at the limit, one folder scan per that
                                  // many bytes fetched, not one per file.
                                  .eviction_headroom = options_.cache_limit.value_or(0) / 16,
                                  // A record per file would double the files of a cache of
                                  // small ones, outside the limit: these keep the size check.
                                  .digest_records = false}));
    if (options_.pack) digest_ = internal_files::ListingDigest(listing_.files);
    return Status::Ok();
  }

  const FileDatasetOptions& options() const override { return options_; }
  const std::vector<FileEntry>& files() const override { return listing_.files; }
  const std::vector<std::string>& classes() const override { return listing_.classes; }
  bool listed() const override { return listed_; }
  const std::string& data_encoding() const override { return data_encoding_; }
  uint64_t skipped_other() const override { return skipped_other_; }

  Result<FileSample> Get(uint64_t index) override {
    if (index >= listing_.files.size()) {
      return OutOfRangeError(fmt::format("{}: file {} asked for; the listing has {}", root_url_,
                                         index, listing_.files.size()));
    }
    std::shared_ptr<const PackSet> packs;
    if (options_.pack) {
      FERRY_ASSIGN_OR_RETURN(packs, Packs(/*reload=*/false));
    }
    FERRY_ASSIGN_OR_RETURN(std::string data, Fetch(index, packs.get(), /*to_memory=*/false));
    return Sample(index, std::move(data));
  }

  Result<std::vector<uint64_t>> Order(const WorldShape& world, const WorkerId& worker,
                                      uint64_t epoch) const override {
    return internal_files::WorkerFiles(listing_.files.size(), world, worker, epoch,
                                       {.shuffle = options_.shuffle,
                                        .seed = options_.shuffle_seed,
                                        .drop_last = options_.drop_last});
  }

  Result<std::unique_ptr<FileIterator>> Iterate(const FileIterateOptions& options) override {
    FERRY_ASSIGN_OR_RETURN(std::vector<uint64_t> files,
                           Order(options.world, options.worker, options.epoch));
    const bool whole_epoch = options.skip == 0;
    files.erase(files.begin(), files.begin() + std::min<uint64_t>(options.skip, files.size()));
    std::shared_ptr<const PackSet> packs;
    std::unique_ptr<PackWriter> writer;
    if (options_.pack) {
      // Reloaded: other workers and processes publish packs as they finish their epochs.
      FERRY_ASSIGN_OR_RETURN(packs, Packs(/*reload=*/true));
      const bool all_packed =
          std::all_of(files.begin(), files.end(), [&](uint64_t f) { return packs->Has(f); });
      // Only a whole pass is packed, so that a pack is one worker's complete share.
      if (whole_epoch && !all_packed) {
        const WorldShape& w = options.world;
        const WorkerId& id = options.worker;
        FERRY_ASSIGN_OR_RETURN(
            writer, PackWriter::Create(PacksDir(cache_root_),
                                       fmt::format("e{}-{}x{}x{}-{}-{}-{}", options.epoch, w.nodes,
                                                   w.ranks_per_node, w.workers_per_rank, id.node,
                                                   id.rank, id.worker),
                                       digest_));
      }
    }
    const bool to_memory = writer != nullptr;
    auto self = shared_from_this();
    auto fetch = std::make_unique<FetchAhead>(
        std::move(files),
        [self, packs, to_memory](uint64_t file, std::stop_token stop) {
          return self->Fetch(file, packs.get(), to_memory, stop);
        },
        [self](uint64_t file) { return self->listing_.files[file].size; },
        internal_files::FetchAheadOptions{.concurrency = options_.concurrency,
                                          .max_concurrency = options_.max_concurrency,
                                          .target_bytes_per_s = options_.target_bytes_per_s,
                                          .max_bytes_in_flight = options_.max_bytes_in_flight});
    return std::unique_ptr<FileIterator>(
        new FileIteratorImpl(std::move(self), std::move(fetch), std::move(writer)));
  }

  FileSample Sample(uint64_t index, std::string data) const {
    const FileEntry& entry = listing_.files[index];
    return {.index = index, .path = entry.path, .label = entry.label, .data = std::move(data)};
  }

  const FileEntry& entry(uint64_t index) const { return listing_.files[index]; }
  std::string FileUrl(uint64_t index) const {
    return http::RedactUrl(remote_ ? remote_->ToUrl(JoinKey(prefix_, listing_.files[index].path))
                                   : (cache_root_ / listing_.files[index].path).string());
  }

  // File `index`'s bytes: from a pack, else from the cache (downloading it if needed, until
  // `stop` is requested), or with `to_memory` (packing) straight from the remote.
  Result<std::string> Fetch(uint64_t index, const PackSet* packs, bool to_memory,
                            std::stop_token stop = {}) {
    FileMetrics& metrics = FileMetrics::Get();
    if (packs && packs->Has(index)) {
      metrics.packed_reads.Add();
      return packs->Read(index);
    }
    const FileEntry& file = listing_.files[index];
    Result<std::string> data = [&]() -> Result<std::string> {
      if (to_memory && remote_) {
        FERRY_ASSIGN_OR_RETURN(std::string bytes, remote_->Get(JoinKey(prefix_, file.path)));
        if (bytes.size() != file.size) {
          return DataLossError(fmt::format(
              "{}: {} bytes, the listing says {}: the file changed since it was listed (open "
              "with refresh to list again)",
              FileUrl(index), bytes.size(), file.size));
        }
        return bytes;
      }
      FERRY_ASSIGN_OR_RETURN(ShardHandle handle, cache_->Acquire(index, stop));
      return ReadFileToString(handle.path());
    }();
    if (!data) {
      const Status& error = data.error();
      if (error.code() == StatusCode::kNotFound) {
        return NotFoundError(fmt::format("{}: listed, but no longer there", FileUrl(index)));
      }
      return error;
    }
    metrics.fetched.Add();
    metrics.fetched_bytes.Add(data->size());
    return data;
  }

  bool skip_missing() const { return options_.on_missing == OnMissing::kSkip; }

 private:
  Result<std::shared_ptr<const PackSet>> Packs(bool reload) {
    MutexLock lock(mu_);
    if (!packs_ || reload) {
      FERRY_ASSIGN_OR_RETURN(packs_, PackSet::Load(PacksDir(cache_root_), digest_));
    }
    return packs_;
  }

  const FileDatasetOptions options_;
  const std::shared_ptr<ObjectStore> remote_;  // nullptr: a local root read in place
  const std::string prefix_;
  const std::string root_url_;
  const fs::path cache_root_;
  const Listing listing_;
  const bool listed_;
  const std::string data_encoding_;
  const uint64_t skipped_other_;
  std::unique_ptr<ShardCache> cache_;
  std::string digest_;

  Mutex mu_;
  std::shared_ptr<const PackSet> packs_ GUARDED_BY(mu_);
};

Result<std::optional<FileSample>> FileIteratorImpl::Next() {
  FileMetrics& metrics = FileMetrics::Get();
  while (true) {
    const auto start = std::chrono::steady_clock::now();
    auto item = fetch_->Next();
    metrics.wait_ns.Add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::steady_clock::now() - start)
                                                  .count()));
    if (!item) break;
    auto& [file, data] = *item;
    if (!data) {
      if (data.error().code() == StatusCode::kNotFound && dataset_->skip_missing()) {
        metrics.missing.Add();
        Log().warn("files: skipping {}", data.error().message());
        continue;
      }
      return data.error();
    }
    if (pack_) {
      if (Status s = pack_->Add(file, dataset_->entry(file), *data); !s.ok()) {
        Log().warn("files: not packing this epoch's files: {}", s.message());
        pack_.reset();
      }
    }
    return std::optional<FileSample>(dataset_->Sample(file, std::move(*data)));
  }
  if (pack_) {
    if (Status s = pack_->Publish(); !s.ok()) {
      Log().warn("files: the pack of this epoch's files was not published: {}", s.message());
    }
    pack_.reset();
  }
  return std::optional<FileSample>();
}

// The stored listing when it may be reused, else a fresh one (stored, and the cached copies of
// files it changed dropped).
Result<std::pair<Listing, bool>> LoadListing(ObjectStore& store, const std::string& prefix,
                                             const std::string& root_url, const fs::path& local,
                                             const FileDatasetOptions& options,
                                             const std::vector<std::string>& extensions) {
  std::optional<Listing> stored;
  if (!local.empty()) {
    const fs::path path = ListingPath(local);
    auto text = ReadFileToString(path);
    if (text) {
      FERRY_ASSIGN_OR_RETURN(Listing parsed, internal_files::ParseListing(*text, path.string()));
      if (parsed.root != root_url) {
        return InvalidArgumentError(fmt::format(
            "{}: this cache folder holds the files of {}, not {}: give each root its own `local`",
            local.string(), parsed.root, root_url));
      }
      stored = std::move(parsed);
    } else if (text.error().code() != StatusCode::kNotFound) {
      return text.error();
    }
  }
  if (stored && !options.refresh &&
      internal_files::SameQuery(*stored, root_url, options.labels, extensions) &&
      (!options.listing_max_age ||
       NowSeconds() - stored->listed_at_s <= options.listing_max_age->count())) {
    return std::make_pair(std::move(*stored), false);
  }
  FERRY_ASSIGN_OR_RETURN(Listing fresh, internal_files::ListFiles(store, prefix, root_url,
                                                                  options.labels, extensions));
  if (!local.empty()) {
    const internal_cache::CacheLayout layout(local);
    FERRY_RETURN_IF_ERROR(layout.CreateLocksDir());
    if (stored) {
      const std::vector<std::string> changed = internal_files::ChangedFiles(*stored, fresh);
      for (const std::string& path : changed) FERRY_RETURN_IF_ERROR(DropCachedCopy(layout, path));
      if (!changed.empty()) {
        Log().info("files: {}: {} file(s) changed or gone since the last listing", root_url,
                   changed.size());
      }
    }
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(
        ListingPath(local), internal_files::SerializeListing(fresh), internal_cache::Modes().file));
  }
  return std::make_pair(std::move(fresh), true);
}

// The data column's encoding from every listed file (file_encoding.h); the files that do not
// match it are an error naming them, or are left out of `listing` with skip_other. The stored
// listing keeps them, so that changing the option needs no new listing.
Result<std::string> ApplyEncoding(Listing& listing, const FileDatasetOptions& options,
                                  const std::string& root_url, uint64_t& skipped) {
  std::vector<FileEntry>& files = listing.files;
  const internal_files::FileNameAt name_of = [&files](size_t i) -> std::string_view {
    return files[i].path;
  };
  internal_files::EncodingDecision decision =
      internal_files::DecideFileEncoding(options.encoding, files.size(), name_of);
  skipped = decision.others.size();
  if (decision.others.empty()) return decision.encoding;
  if (!options.skip_other) {
    return internal_files::OtherFilesError(
        decision, files.size(), name_of, root_url,
        "leave them out with skip_other=True (or list only some extensions), or read every file "
        "as bytes with encoding=\"bytes\"");
  }
  Log().info("files: {}: leaving out {} file(s) not named like {} files ({}): {}", root_url,
             skipped, decision.encoding, decision.reason,
             internal_files::DescribeOthers(decision, name_of));
  internal_files::RemoveAt(files, decision.others);
  return decision.encoding;
}

}  // namespace

Result<std::shared_ptr<FileDataset>> FileDataset::Open(FileDatasetOptions options) {
  if (options.root.empty()) return InvalidArgumentError("FileDataset: `root` is empty");
  if (options.concurrency && *options.concurrency == 0) {
    return InvalidArgumentError(fmt::format("{}: concurrency must be at least 1", options.root));
  }
  if (options.max_concurrency == 0) {
    return InvalidArgumentError(
        fmt::format("{}: max_concurrency must be at least 1", options.root));
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<std::string> extensions,
                         internal_files::NormalizeExtensions(options.extensions));
  FERRY_ASSIGN_OR_RETURN(StoreAndKey opened, OpenUrl(options.root));
  const std::string root_url = http::RedactUrl(opened.store->ToUrl(opened.key));
  std::shared_ptr<ObjectStore> remote = Instrument(opened.store);
  fs::path cache_root;
  fs::path local;
  if (options.local.empty()) {
    auto in_place = opened.store->LocalPath(opened.key);
    if (!in_place) {
      return InvalidArgumentError(fmt::format(
          "{}: a remote root needs `local`, the cache folder to fetch its files into", root_url));
    }
    if (options.pack || options.cache_limit) {
      return InvalidArgumentError(fmt::format(
          "{}: pack and cache_limit need `local` (a root read in place is not cached)", root_url));
    }
    cache_root = *in_place;
  } else {
    local = fs::absolute(options.local);
    cache_root = local;
  }
  FERRY_ASSIGN_OR_RETURN(auto listing,
                         LoadListing(*remote, opened.key, root_url, local, options, extensions));
  uint64_t skipped_other = 0;
  FERRY_ASSIGN_OR_RETURN(std::string data_encoding,
                         ApplyEncoding(listing.first, options, root_url, skipped_other));
  if (options.pack && options.cache_limit) {
    uint64_t total = 0;
    for (const FileEntry& f : listing.first.files) total += f.size;
    if (total > *options.cache_limit) {
      return InvalidArgumentError(fmt::format(
          "{}: pack keeps every file ({} bytes) in the cache folder, over its cache_limit of {} "
          "bytes: raise the limit or do not pack",
          root_url, total, *options.cache_limit));
    }
  }
  auto dataset = std::make_shared<FileDatasetImpl>(
      std::move(options), local.empty() ? nullptr : std::move(remote), opened.key, root_url,
      cache_root, std::move(listing.first), listing.second, std::move(data_encoding),
      skipped_other);
  FERRY_RETURN_IF_ERROR(dataset->Init());
  return std::shared_ptr<FileDataset>(std::move(dataset));
}

}  // namespace ferry
