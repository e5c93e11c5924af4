// ferry convert SRC OUT: a folder of files, or an ImageFolder (one sub-folder per class), into
// MDS shards that Mosaic Streaming reads unchanged. SRC is a local (or mounted) folder, or a
// prefix in any store (s3://, az://, gs://, ...), whose files are fetched with many requests in
// flight (FileDataset's FetchAhead). OUT is a local folder, or a prefix in any writable store:
// the shards are then written into a local staging folder and each is uploaded as soon as it is
// complete while the conversion goes on, index.json last (DatasetUploader).
//
// Columns, named as FileDataset names them: `data` (the file's bytes; jpeg, png or bytes as
// decided from ALL the files by internal_files::DecideFileEncoding, files named like the kind
// are checked to start like one), `label` (int: the class index, from sorted folder names;
// written to classes.json beside index.json) and `path` (str: the path relative to SRC). A file
// whose name does not match the data column's kind is an error naming it, or skipped with
// --skip-other: one stray notes.txt never turns a jpeg column into bytes. Files are read on
// several threads (or fetched concurrently) but written in a fixed order (class, then path), so
// one folder always gives the same shards. With --to webdataset the same files become WebDataset
// tars instead (src/cli/folder_writer.h: a sample per key, a field per extension, `cls` the label).
//
// --part K/N converts only the K-th of N equal, consecutive slices of the files (in that same
// order, K from 0) into OUT/part-KKKKK/, a sub-dataset, for schedulers that run one process per
// machine (Slurm arrays, Kubernetes indexed jobs); `ferry merge-index OUT --parts N` then joins
// them into the dataset one convert would have written, sample for sample. Every part lists the
// whole folder, so the data column's kind and the classes are decided from all the files, and
// each part writes the same classes.json into OUT.
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
#include "cli/convert_dataset.h"
#include "cli/dataset_uploader.h"
#include "cli/folder_writer.h"
#include "cli/image_folder.h"
#include "cli/progress.h"
#include "cli/scratch_folder.h"
#include "cli/transfer.h"
#include "ferry/format/mds_writer.h"
#include "ferry/storage/registry.h"
#include "files/fetch_ahead.h"
#include "files/file_encoding.h"
#include "files/file_listing.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct ConvertOptions {
  std::string src;
  std::string out;
  std::string local;  // staging folder for a store OUT; empty: a temporary one
  std::string size_limit = "64mb";
  std::string compression = "none";
  std::string hashes = "xxh64";
  std::string columns = "data,label,path";
  std::string encoding = "auto";
  std::string extensions;
  bool skip_other = false;
  bool keep_local = false;
  bool overwrite = false;
  bool quiet = false;
  size_t threads = std::max(2u, std::thread::hardware_concurrency());
  uint32_t jobs = 0;  // requests in flight for a remote SRC; 0 = auto
  std::string to = "mds";
  std::string part;       // "K/N": convert only that slice, into OUT/part-KKKKK
  std::string part_name;  // the part's sub-folder instead of part-KKKKK (an attempt's own)
};

struct Part {
  uint32_t index = 0;
  uint32_t count = 1;
};

Result<std::optional<Part>> ParsePart(const std::string& text) {
  if (text.empty()) return std::optional<Part>();
  unsigned index = 0, count = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "%u/%u%c", &index, &count, &end) != 2 || count == 0 ||
      index >= count || count > 99999) {
    return InvalidArgumentError(
        fmt::format("--part '{}': expected K/N with 0 <= K < N <= 99999 (K counts from 0)", text));
  }
  return std::optional<Part>(Part{index, count});
}

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

// --columns as a set of data/label/path; `image`, convert's name before FileDataset's `data`
// was adopted, is read as `data` with a warning.
Result<std::set<std::string>> ParseColumns(std::string_view text) {
  std::set<std::string> wanted;
  for (std::string c : SplitList(text)) {
    if (c == "image") {
      std::fprintf(stderr,
                   "ferry convert: warning: --columns image is deprecated: the column is named "
                   "data (as FileDataset names it)\n");
      c = "data";
    }
    if (c != "data" && c != "label" && c != "path") {
      return InvalidArgumentError(
          fmt::format("--columns: unknown column '{}' (data, label, path)", c));
    }
    wanted.insert(c);
  }
  if (wanted.empty()) {
    return InvalidArgumentError("--columns: choose at least one of data, label, path");
  }
  return wanted;
}

// Refuses OUT inside SRC: its shards would be listed as samples of a class on the next run.
Status CheckFolders(const fs::path& src, const fs::path& out) {
  std::error_code ec;
  const auto s = fs::weakly_canonical(src, ec);
  const auto o = fs::weakly_canonical(out, ec);
  if (ec) return Status::Ok();
  auto [src_end, out_it] = std::mismatch(s.begin(), s.end(), o.begin(), o.end());
  if (src_end == s.end()) {
    return InvalidArgumentError(
        fmt::format("output {} lies inside the source folder {}", out.string(), src.string()));
  }
  return Status::Ok();
}

// The same rule for two store prefixes.
Status CheckPrefixes(const StoreAndKey& src, const StoreAndKey& out) {
  const std::string s = FolderKey(src.store->ToUrl(src.key));
  const std::string o = FolderKey(out.store->ToUrl(out.key));
  if (o.starts_with(s)) {
    return InvalidArgumentError(fmt::format("output {} lies inside the source prefix {}",
                                            http::RedactUrl(o), http::RedactUrl(s)));
  }
  return Status::Ok();
}

// A store OUT holding a dataset (its index.json) is refused unless --overwrite; returns whether
// it holds one.
Result<bool> CheckStoreOutput(const StoreAndKey& out, std::string_view out_name, bool overwrite) {
  if (out.store->read_only()) {
    return InvalidArgumentError(
        fmt::format("{}: {}:// is read-only; convert into a writable store or a local folder",
                    out_name, out.store->scheme()));
  }
  auto head = out.store->Head(JoinKey(out.key, "index.json"));
  if (!head) {
    if (head.error().code() == StatusCode::kNotFound) return false;
    return head.error();
  }
  if (!overwrite) {
    return AlreadyExistsError(
        fmt::format("{}: holds a dataset (index.json); pass --overwrite to replace it", out_name));
  }
  return true;
}

Result<int> RunConvert(const ConvertOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(const std::set<std::string> wanted, ParseColumns(o.columns));
  FERRY_ASSIGN_OR_RETURN(std::optional<uint64_t> size_limit, ResolveSizeLimit(o.size_limit));
  std::vector<std::string> hashes =
      o.hashes == "none" ? std::vector<std::string>{} : SplitList(o.hashes);
  std::sort(hashes.begin(), hashes.end());
  FERRY_ASSIGN_OR_RETURN(const FileEncoding asked,
                         internal_files::ParseFileEncoding(o.encoding, "--encoding"));
  auto extensions = internal_files::NormalizeExtensions(SplitList(o.extensions));
  if (!extensions) return extensions.error().WithContext("--extensions");

  FERRY_ASSIGN_OR_RETURN(const std::optional<Part> part, ParsePart(o.part));
  if (!o.part_name.empty() &&
      (!part || o.part_name.find('/') != std::string::npos || o.part_name.starts_with('.'))) {
    return InvalidArgumentError(fmt::format(
        "--part-name '{}': a folder name (no '/', not hidden), given with --part", o.part_name));
  }
  // A part goes into a sub-dataset of its own below OUT.
  const std::string part_folder = !part                  ? ""
                                  : !o.part_name.empty() ? o.part_name
                                                         : fmt::format("part-{:05}", part->index);
  const std::string out_url =
      part ? fmt::format("{}{}{}", o.out, o.out.ends_with('/') ? "" : "/", part_folder) : o.out;

  // A dataset converts between formats; a folder of files into MDS or WebDataset.
  FERRY_ASSIGN_OR_RETURN(const bool dataset, IsDatasetSource(o.src));
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey out, OpenUrl(out_url));
  if (dataset && part) {
    return InvalidArgumentError(
        fmt::format("--part splits a folder of files; {} is a dataset, which converts in one run",
                    http::RedactUrl(o.src)));
  }
  if (dataset) {
    if (!out.store->LocalPath(out.key)) {
      FERRY_RETURN_IF_ERROR(CheckStoreOutput(out, http::RedactUrl(o.out), o.overwrite).status());
    }
    std::optional<std::string> compression;
    if (o.compression != "none") compression = o.compression;
    return ConvertDataset({.src = o.src,
                           .out = o.out,
                           .to = o.to,
                           .size_limit = size_limit,
                           .compression = compression,
                           .hashes = hashes,
                           .overwrite = o.overwrite,
                           .quiet = o.quiet});
  }
  if (o.to != "mds" && o.to != "webdataset") {
    return InvalidArgumentError(fmt::format(
        "--to {}: a folder of files converts into mds or webdataset ({} holds no dataset)", o.to,
        http::RedactUrl(o.src)));
  }
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey src, OpenUrl(o.src));
  const std::optional<fs::path> src_local = src.store->LocalPath(src.key);
  const std::optional<fs::path> out_local = out.store->LocalPath(out.key);
  const std::string src_name = src_local ? o.src : http::RedactUrl(o.src);
  const std::string out_name = out_local ? out_url : http::RedactUrl(out_url);
  if (out_local && (!o.local.empty() || o.keep_local)) {
    return InvalidArgumentError(
        fmt::format("--local and --keep-local stage a store OUT; {} is a local folder", out_name));
  }
  if (o.keep_local && o.local.empty()) {
    return InvalidArgumentError("--keep-local keeps the staged dataset in --local: give --local");
  }
  if (src_local && out_local) FERRY_RETURN_IF_ERROR(CheckFolders(*src_local, *out_local));
  if (!src_local && !out_local) FERRY_RETURN_IF_ERROR(CheckPrefixes(src, out));
  bool replacing = false;  // a store OUT's dataset, removed once the conversion is known to run
  if (!out_local) {
    FERRY_ASSIGN_OR_RETURN(replacing, CheckStoreOutput(out, out_name, o.overwrite));
  }

  FolderListing listing;
  if (src_local) {
    FERRY_ASSIGN_OR_RETURN(listing, ListImageFolder(*src_local));
  } else {
    FERRY_ASSIGN_OR_RETURN(listing, ListRemoteImageFolder(*src.store, src.key, src_name));
  }
  if (wanted.count("label") && !listing.labeled && o.columns != ConvertOptions().columns) {
    return InvalidArgumentError(
        fmt::format("--columns label: {} has no class sub-folders to take labels from", o.src));
  }
  const bool with_label = wanted.count("label") && listing.labeled;
  const bool with_data = wanted.count("data") > 0;
  const bool with_path = wanted.count("path") > 0;

  // What is taken, and as what: --extensions first, then the data column's kind from the rest.
  size_t skipped_by_extension = 0;
  if (!extensions->empty()) {
    std::vector<size_t> drop;
    for (size_t i = 0; i < listing.files.size(); ++i) {
      if (!internal_files::HasExtension(listing.files[i].relative, *extensions)) drop.push_back(i);
    }
    skipped_by_extension = drop.size();
    RemoveFiles(listing, drop);
  }
  const internal_files::FileNameAt name_of = [&listing](size_t i) -> std::string_view {
    return listing.files[i].relative;
  };
  internal_files::EncodingDecision decision{.encoding = "bytes", .reason = "", .others = {}};
  std::string skipped_other;  // for the summary
  if (with_data) {
    decision = internal_files::DecideFileEncoding(asked, listing.files.size(), name_of);
    if (!decision.others.empty() && !o.skip_other) {
      return internal_files::OtherFilesError(
          decision, listing.files.size(), name_of, src_name,
          "pass --skip-other to leave them out (or --extensions to take only some), or "
          "--encoding bytes to store every file as it is");
    }
    if (!decision.others.empty()) {
      skipped_other = fmt::format("; skipped {} files not named like {} files (--skip-other): {}",
                                  decision.others.size(), decision.encoding,
                                  internal_files::DescribeOthers(decision, name_of));
      RemoveFiles(listing, decision.others);
    }
  }
  if (listing.files.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: no file is left to convert ({} without the extensions {}{})", src_name,
                    skipped_by_extension, o.extensions, skipped_other));
  }

  size_t part_start = 0;  // the part's first file in the whole listing
  if (part) {
    const size_t n = listing.files.size();
    part_start = n * part->index / part->count;
    const size_t part_end = n * (part->index + 1) / part->count;
    std::vector<size_t> drop;
    for (size_t i = 0; i < n; ++i) {
      if (i < part_start || i >= part_end) drop.push_back(i);
    }
    RemoveFiles(listing, drop);
  }

  // A store OUT is written into a staging folder first, and uploaded from there.
  std::unique_ptr<ScratchFolder> temp;
  fs::path folder;
  if (out_local) {
    folder = *out_local;
  } else if (!o.local.empty()) {
    folder = o.local;
  } else {
    FERRY_ASSIGN_OR_RETURN(temp, ScratchFolder::Create("convert"));
    folder = temp->path();
  }
  std::unique_ptr<DatasetUploader> uploader;  // outlives the writer, whose threads call it
  if (!out_local) {
    uploader = std::make_unique<DatasetUploader>(
        out.store, out.key, folder, DatasetUploaderOptions{.keep_local = o.keep_local});
  }

  FolderWriterOptions writer_options{.to = o.to,
                                     .out = folder,
                                     .with_data = with_data,
                                     .with_label = with_label,
                                     .with_path = with_path && o.to == "mds",
                                     .encoding = decision.encoding,
                                     .hashes = hashes,
                                     .size_limit = size_limit,
                                     .exist_ok = o.overwrite || temp != nullptr};
  if (o.compression != "none") writer_options.compression = o.compression;
  if (uploader) {
    writer_options.on_shard_written = [u = uploader.get()](const std::string& basename) {
      u->Add(basename);
    };
  }
  auto writer = FolderWriter::Create(writer_options);
  if (!writer) {
    if (writer.error().code() == StatusCode::kAlreadyExists) {
      return writer.error().WithContext("pass --overwrite to replace it");
    }
    return writer.error();
  }
  // The old index goes before the first new shard, so that no reader pairs it with them; not
  // earlier, so that a conversion refused for its options leaves the old dataset whole.
  if (replacing) {
    FERRY_RETURN_IF_ERROR(out.store->Remove(JoinKey(out.key, "index.json")));
  }
  // Read ahead in order, many at once: local files on `threads` threads, remote ones with
  // `jobs` requests in flight (auto: sized from the measured latency, as FileDataset does).
  std::unique_ptr<internal_files::FetchAhead> reader;
  if (with_data) {
    std::vector<uint64_t> order(listing.files.size());
    for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
    // One file each, whole: small enough that a fetch in progress is let finish at the end.
    std::shared_ptr<ObjectStore> store = src_local ? nullptr : src.store;
    auto fetch = [&listing, store, prefix = src.key](uint64_t i,
                                                     std::stop_token) -> Result<std::string> {
      const FolderFile& f = listing.files[i];
      if (!store) return ReadFileToString(f.path);
      return store->Get(JoinKey(prefix, f.relative));
    };
    const uint32_t local_threads = static_cast<uint32_t>(std::max<size_t>(1, o.threads));
    const std::optional<uint32_t> concurrency = src_local ? std::optional<uint32_t>(local_threads)
                                                : o.jobs  ? std::optional<uint32_t>(o.jobs)
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
    std::string data;
    if (with_data) {
      auto next = reader->Next();
      FERRY_ASSIGN_OR_RETURN(data, std::move(next->second));
      if (!internal_files::StartsLike(decision.encoding, data)) {
        return InvalidArgumentError(fmt::format(
            "{}: named like a {} file but is not one (it does not start like one); rename it, "
            "convert it, or pass --encoding bytes",
            src_local ? file.path.string() : fmt::format("{}/{}", src_name, file.relative),
            decision.encoding == "jpeg" ? "JPEG" : "PNG"));
      }
      bytes_read += data.size();
    }
    Status s = (*writer)->Write(file, std::move(data));
    // A full disk is the output's, not this file's.
    if (!s.ok()) return IsDiskFullError(s) ? s : s.WithContext(file.relative);
    if (uploader) FERRY_RETURN_IF_ERROR(uploader->error());  // not hours later, at the end
    progress.Update(i + 1, bytes_read);
  }
  FERRY_ASSIGN_OR_RETURN(DatasetDescription index, (*writer)->Finish());
  progress.Finish();
  std::vector<std::string> closing;
  if (with_label) {
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(
        folder / "classes.json",
        DumpPythonJson(nlohmann::ordered_json(listing.classes), JsonKeyOrder::kInsertion)));
    closing.push_back("classes.json");
  }
  closing.push_back("index.json");
  if (part && with_label) {
    // The merged dataset's classes.json, beside the parts: the same text from every part.
    const std::string classes =
        DumpPythonJson(nlohmann::ordered_json(listing.classes), JsonKeyOrder::kInsertion);
    FERRY_ASSIGN_OR_RETURN(const StoreAndKey root, OpenUrl(o.out));
    FERRY_RETURN_IF_ERROR(root.store->Put(JoinKey(root.key, "classes.json"), classes));
  }
  if (uploader) {
    FERRY_RETURN_IF_ERROR(uploader->Finish(closing));
    std::set<std::string> keep;
    for (const ShardDescription& s : index.shards) {
      keep.insert(s.raw_data.basename);
      if (s.zip_data) keep.insert(s.zip_data->basename);
    }
    if (replacing) FERRY_RETURN_IF_ERROR(uploader->RemoveOtherShards(keep));
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  uint64_t zip_bytes = 0;
  uint64_t raw_bytes = 0;
  for (const auto& s : index.shards) {
    zip_bytes += s.zip_data ? s.zip_data->bytes : 0;
    raw_bytes += s.raw_data.bytes;
  }
  std::string summary =
      part ? fmt::format("part {} of {} (files {} to {}): ", part->index, part->count, part_start,
                         part_start + listing.files.size())
           : std::string();
  summary += fmt::format(
      "converted {} files ({}) into {} shards in {:.2f} s: {:.0f} files/s, {:.1f} MB/s; raw {}",
      listing.files.size(), FormatBytes(listing.total_bytes), index.shards.size(), seconds,
      static_cast<double>(listing.files.size()) / seconds,
      static_cast<double>(listing.total_bytes) / 1e6 / seconds, FormatBytes(raw_bytes));
  if (zip_bytes > 0) summary += fmt::format(", compressed {}", FormatBytes(zip_bytes));
  if (with_data) summary += fmt::format("; data: {} ({})", decision.encoding, decision.reason);
  if (listing.labeled) summary += fmt::format("; {} classes", listing.classes.size());
  if (listing.skipped_top_level > 0) {
    summary += fmt::format("; skipped {} files directly in {} (not in a class folder)",
                           listing.skipped_top_level, src_name);
  }
  if (skipped_by_extension > 0) {
    summary += fmt::format("; skipped {} files without the extensions {}", skipped_by_extension,
                           o.extensions);
  }
  summary += skipped_other;
  if (uploader) {
    summary += fmt::format("; uploaded {} files ({}) to {}", uploader->files_uploaded(),
                           FormatBytes(uploader->bytes_uploaded()), out_name);
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
      "store URL (s3://bucket/images/, fetched with many requests in flight), into MDS shards in\n"
      "a local folder or under a store URL (each shard uploaded once complete, index.json last).\n"
      "Columns, as FileDataset names them: data (the file's bytes: jpeg or png when most files\n"
      "are named so, else bytes; see --encoding), label (int, class index from sorted folder\n"
      "names, names written to classes.json), path (str, relative path).\n"
      "With --to webdataset, into WebDataset tars instead: a sample per file (files sharing a\n"
      "name up to the first dot are one), its field named by the extension, cls the label.\n"
      "A dataset (MDS; Mosaic's JSON, CSV or TSV; a folder of WebDataset tars, or a pattern\n"
      "such as train-{000000..000127}.tar) converts into another format (--to): MDS columns\n"
      "become WebDataset fields of the same names, keyed by the __key__ column or the sample\n"
      "index; WebDataset fields become bytes columns and __key__. JSON, CSV and TSV hold str,\n"
      "int and float columns only: str and number columns keep their type, WebDataset's txt\n"
      "fields become str and cls fields int; any other column is an error naming it.");
  app->add_option("src", o->src, "Folder or store URL (s3://, az://, gs://, ...) to convert")
      ->required();
  app->add_option("out", o->out,
                  "Output folder or store URL (must hold no dataset unless --overwrite)")
      ->required();
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
  app->add_option("--columns", o->columns,
                  "Which of data,label,path to write (image: a deprecated name for data)")
      ->capture_default_str();
  app->add_option("--encoding", o->encoding,
                  "The data column's encoding: auto (the image kind, jpeg or png, that most files "
                  "are named as, else bytes), jpeg, png or bytes. Files not named like it are an "
                  "error, or skipped with --skip-other")
      ->capture_default_str();
  app->add_flag("--skip-other", o->skip_other,
                "Skip the files whose names do not match the data column's encoding (counted in "
                "the summary)");
  app->add_option("--extensions", o->extensions,
                  "Comma-separated: take only files with these extensions (jpg,jpeg,png); the "
                  "others are skipped and counted");
  app->add_option("--threads", o->threads, "Threads reading local files")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--jobs", o->jobs,
                  "Requests in flight for a remote SRC (default: sized from the measured latency)");
  app->add_option("--local", o->local,
                  "With a store OUT: the folder to stage shards in before each is uploaded "
                  "(default: a temporary folder)");
  app->add_flag("--keep-local", o->keep_local,
                "With a store OUT: keep the staged dataset in --local after uploading it");
  app->add_flag("--overwrite", o->overwrite, "Replace a dataset already in OUT");
  app->add_option("--part", o->part,
                  "K/N: convert only the K-th of N equal slices of the files (K from 0) into "
                  "OUT/part-KKKKK; run all N (on N machines), then `ferry merge-index OUT "
                  "--parts N`");
  app->add_option("--part-name", o->part_name,
                  "The part's sub-folder instead of part-KKKKK (ferry.convert gives each attempt "
                  "of a part its own, and merges the ones that finished)");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  app->add_option("--to", o->to,
                  "Output format: mds, webdataset, or (from a dataset) json, csv or tsv")
      ->check(CLI::IsMember({"mds", "webdataset", "json", "csv", "tsv"}))
      ->capture_default_str();
  return {app, [o] { return RunConvert(*o); }};
}

}  // namespace ferry::cli
