// ferry convert SRC OUT: a folder of files, or an ImageFolder (one sub-folder per class), into
// MDS shards that Mosaic Streaming reads unchanged. SRC is a local (or mounted) folder, or a
// prefix in any store (s3://, az://, gs://, ...), whose files are fetched with many requests in
// flight (FileDataset's FetchAhead).
//
// Columns: `image` (jpeg when every file is named .jpg/.jpeg - each is then checked to really
// be a JPEG - else bytes), `label` (int: the class index, from sorted folder names; written to
// classes.json beside index.json) and `path` (str: the path relative to SRC). Files are read on
// several threads (or fetched concurrently) but written in a fixed order (class, then path), so
// one folder always gives the same shards.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <thread>

#include "base/file_util.h"
#include "base/human_size.h"
#include "base/python_json.h"
#include "cache/shard_downloader.h"
#include "cli/command.h"
#include "cli/image_folder.h"
#include "cli/progress.h"
#include "ferry/format/mds_writer.h"
#include "ferry/storage/registry.h"
#include "files/fetch_ahead.h"
#include "storage/http/http_types.h"

namespace ferry::cli {
namespace {

struct ConvertOptions {
  std::string src;
  std::string out;
  std::string size_limit = "64mb";
  std::string compression = "none";
  std::string hashes = "xxh64";
  std::string columns = "image,label,path";
  bool overwrite = false;
  bool quiet = false;
  size_t threads = std::max(2u, std::thread::hardware_concurrency());
  uint32_t jobs = 0;  // requests in flight for a remote SRC; 0 = auto
};

bool IsUrl(std::string_view text) { return text.find("://") != std::string_view::npos; }

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string item(text.substr(start, comma - start));
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool LooksLikeJpeg(std::string_view data) {
  return data.size() >= 3 && static_cast<unsigned char>(data[0]) == 0xFF &&
         static_cast<unsigned char>(data[1]) == 0xD8 && static_cast<unsigned char>(data[2]) == 0xFF;
}

// Refuses OUT inside SRC: its shards would be listed as samples of a class on the next run.
Status CheckFolders(const std::filesystem::path& src, const std::filesystem::path& out) {
  std::error_code ec;
  const auto s = std::filesystem::weakly_canonical(src, ec);
  const auto o = std::filesystem::weakly_canonical(out, ec);
  if (ec) return Status::Ok();
  auto [src_end, out_it] = std::mismatch(s.begin(), s.end(), o.begin(), o.end());
  if (src_end == s.end()) {
    return InvalidArgumentError(
        fmt::format("output {} lies inside the source folder {}", out.string(), src.string()));
  }
  return Status::Ok();
}

Result<int> RunConvert(const ConvertOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const bool remote = IsUrl(o.src);
  if (!remote) FERRY_RETURN_IF_ERROR(CheckFolders(o.src, o.out));
  FERRY_ASSIGN_OR_RETURN(std::optional<uint64_t> size_limit, ResolveSizeLimit(o.size_limit));
  std::vector<std::string> hashes =
      o.hashes == "none" ? std::vector<std::string>{} : SplitList(o.hashes);
  std::sort(hashes.begin(), hashes.end());
  const std::set<std::string> wanted = [&] {
    auto list = SplitList(o.columns);
    return std::set<std::string>(list.begin(), list.end());
  }();
  for (const auto& c : wanted) {
    if (c != "image" && c != "label" && c != "path") {
      return InvalidArgumentError(
          fmt::format("--columns: unknown column '{}' (image, label, path)", c));
    }
  }
  if (wanted.empty())
    return InvalidArgumentError("--columns: choose at least one of image, label, path");

  std::shared_ptr<ObjectStore> store;
  std::string prefix;
  std::string src_name = o.src;
  FolderListing listing;
  if (remote) {
    FERRY_ASSIGN_OR_RETURN(StoreAndKey opened, OpenUrl(o.src));
    store = std::move(opened.store);
    prefix = std::move(opened.key);
    src_name = http::RedactUrl(o.src);
    FERRY_ASSIGN_OR_RETURN(listing, ListRemoteImageFolder(*store, prefix, src_name));
  } else {
    FERRY_ASSIGN_OR_RETURN(listing, ListImageFolder(o.src));
  }
  if (wanted.count("label") && !listing.labeled && o.columns != ConvertOptions().columns) {
    return InvalidArgumentError(
        fmt::format("--columns label: {} has no class sub-folders to take labels from", o.src));
  }
  const bool with_label = wanted.count("label") && listing.labeled;
  const bool with_image = wanted.count("image") > 0;
  const bool with_path = wanted.count("path") > 0;
  const std::string image_encoding = listing.all_jpeg_names ? "jpeg" : "bytes";

  MdsWriterOptions writer_options;
  writer_options.out = o.out;
  if (with_image) writer_options.columns.emplace_back("image", image_encoding);
  if (with_label) writer_options.columns.emplace_back("label", "int");
  if (with_path) writer_options.columns.emplace_back("path", "str");
  if (o.compression != "none") writer_options.compression = o.compression;
  writer_options.hashes = hashes;
  writer_options.size_limit = size_limit;
  writer_options.exist_ok = o.overwrite;
  auto writer = MdsWriter::Create(writer_options);
  if (!writer) {
    if (writer.error().code() == StatusCode::kAlreadyExists) {
      return writer.error().WithContext("pass --overwrite to replace it");
    }
    return writer.error();
  }
  // Column order in the writer is sorted: image < label < path.
  std::vector<Value> values;

  // Read ahead in order, many at once: local files on `threads` threads, remote ones with
  // `jobs` requests in flight (auto: sized from the measured latency, as FileDataset does).
  std::unique_ptr<internal_files::FetchAhead> reader;
  if (with_image) {
    std::vector<uint64_t> order(listing.files.size());
    for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
    // One file each, whole: small enough that a fetch in progress is let finish at the end.
    auto fetch = [&listing, store, prefix](uint64_t i, std::stop_token) -> Result<std::string> {
      const FolderFile& f = listing.files[i];
      if (!store) return ReadFileToString(f.path);
      return store->Get(internal_cache::RemoteKeyOf(prefix, f.relative));
    };
    const uint32_t local_threads = static_cast<uint32_t>(std::max<size_t>(1, o.threads));
    const std::optional<uint32_t> concurrency = !remote  ? std::optional<uint32_t>(local_threads)
                                                : o.jobs ? std::optional<uint32_t>(o.jobs)
                                                         : std::nullopt;
    reader = std::make_unique<internal_files::FetchAhead>(
        std::move(order), fetch, [&listing](uint64_t i) { return listing.files[i].bytes; },
        internal_files::FetchAheadOptions{.concurrency = concurrency,
                                          .max_bytes_in_flight = 256ull << 20});
  }
  ProgressBar progress("convert", "files", listing.files.size(), !o.quiet);
  uint64_t bytes_read = 0;
  for (size_t i = 0; i < listing.files.size(); ++i) {
    const FolderFile& file = listing.files[i];
    values.clear();
    if (with_image) {
      auto next = reader->Next();
      FERRY_ASSIGN_OR_RETURN(std::string data, std::move(next->second));
      if (image_encoding == "jpeg" && !LooksLikeJpeg(data)) {
        return InvalidArgumentError(fmt::format(
            "{}: named like a JPEG but is not one (no FF D8 FF marker); rename it or convert it",
            remote ? fmt::format("{}/{}", src_name, file.relative) : file.path.string()));
      }
      bytes_read += data.size();
      values.emplace_back(Bytes{std::move(data)});
    }
    if (with_label) values.emplace_back(file.label);
    if (with_path) values.emplace_back(file.relative);
    Status s = (*writer)->WriteValues(values);
    if (!s.ok()) return s.WithContext(file.relative);
    progress.Update(i + 1, bytes_read);
  }
  FERRY_ASSIGN_OR_RETURN(Index index, (*writer)->Finish());
  progress.Finish();
  if (with_label) {
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(
        std::filesystem::path(o.out) / "classes.json",
        DumpPythonJson(nlohmann::ordered_json(listing.classes), JsonKeyOrder::kInsertion)));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  uint64_t zip_bytes = 0;
  for (const auto& s : index.shards) zip_bytes += s.zip_data ? s.zip_data->bytes : 0;
  std::string summary = fmt::format(
      "converted {} files ({}) into {} shards in {:.2f} s: {:.0f} files/s, {:.1f} MB/s; raw {}",
      listing.files.size(), FormatBytes(listing.total_bytes), index.shards.size(), seconds,
      static_cast<double>(listing.files.size()) / seconds,
      static_cast<double>(listing.total_bytes) / 1e6 / seconds,
      FormatBytes((*writer)->raw_bytes_written()));
  if (zip_bytes > 0) summary += fmt::format(", compressed {}", FormatBytes(zip_bytes));
  if (listing.labeled) summary += fmt::format("; {} classes", listing.classes.size());
  if (listing.skipped_top_level > 0) {
    summary += fmt::format("; skipped {} files directly in {} (not in a class folder)",
                           listing.skipped_top_level, src_name);
  }
  std::printf("%s\n", summary.c_str());
  return 0;
}

}  // namespace

Command AddConvertCommand(CLI::App& parent) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* app = parent.add_subcommand(
      "convert",
      "Convert a folder of files or an ImageFolder (one sub-folder per class), local or under a\n"
      "store URL (s3://bucket/images/, fetched with many requests in flight), into MDS shards.\n"
      "Columns: image (jpeg if every file is a .jpg/.jpeg, else bytes), label (int, class index\n"
      "from sorted folder names, names written to classes.json), path (str, relative path).");
  app->add_option("src", o->src, "Folder or store URL (s3://, az://, gs://, ...) to convert")
      ->required();
  app->add_option("out", o->out, "Output folder (must be empty unless --overwrite)")->required();
  app->add_option("--size-limit", o->size_limit,
                  "Raw shard size limit: bytes or 64mb, 256mb, ... (0 = one shard)")
      ->capture_default_str();
  app->add_option("--compression", o->compression,
                  "none, zstd[:1-22], gz[:0-9], br[:0-11], bz2[:1-9] or snappy")
      ->capture_default_str();
  app->add_option("--hashes", o->hashes,
                  "Comma-separated: md5, sha1, sha256, sha3_256, blake2b, xxh64, xxh3_64, ... or "
                  "none")
      ->capture_default_str();
  app->add_option("--columns", o->columns, "Which of image,label,path to write")
      ->capture_default_str();
  app->add_option("--threads", o->threads, "Threads reading local files")->capture_default_str();
  app->add_option("--jobs", o->jobs,
                  "Requests in flight for a remote SRC (default: sized from the measured latency)");
  app->add_flag("--overwrite", o->overwrite, "Replace a dataset already in OUT");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  return {app, [o] { return RunConvert(*o); }};
}

}  // namespace ferry::cli
