#include "files/file_pack.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <system_error>

#include "base/file_util.h"
#include "base/log.h"
#include "cache/cache_layout.h"
#include "format/hash.h"

namespace ferry::internal_files {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kTmpMarker = ".tmp-";

// Removes .tmp-<pid>-* folders whose writer process is gone.
void RemoveAbandonedPacks(const fs::path& packs_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(packs_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t marker = name.find(kTmpMarker);
    if (marker == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + marker + kTmpMarker.size(), nullptr, 10);
    if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) continue;
    fs::remove_all(entry.path(), ec);
    Log().debug("files: removed {}, a pack left by a writer that is gone", entry.path().string());
  }
}

}  // namespace

std::string ListingDigest(const std::vector<FileEntry>& files) {
  std::string text;
  for (const FileEntry& f : files) text += fmt::format("{}\n{}\n{}\n", f.path, f.size, f.etag);
  return HashHex("xxh64", text).value_or("");
}

Result<std::unique_ptr<PackWriter>> PackWriter::Create(const fs::path& packs_dir, std::string name,
                                                       std::string listing_digest) {
  FERRY_RETURN_IF_ERROR(internal_cache::CreateCacheFolders(packs_dir));
  RemoveAbandonedPacks(packs_dir);
  static std::atomic<uint64_t> counter{0};
  std::unique_ptr<PackWriter> writer(new PackWriter());
  writer->final_ = packs_dir / name;
  writer->tmp_ = packs_dir / fmt::format("{}{}{}-{}", name, kTmpMarker, ::getpid(), counter++);
  writer->listing_digest_ = std::move(listing_digest);
  FERRY_ASSIGN_OR_RETURN(
      writer->writer_,
      MdsWriter::Create({.out = writer->tmp_,
                         .columns = {{"data", "bytes"}, {"label", "int"}, {"path", "str"}},
                         .flush_threads = 1}));
  return writer;
}

PackWriter::~PackWriter() {
  if (published_) return;
  writer_.reset();
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

Status PackWriter::Add(uint64_t file, const FileEntry& entry, std::string_view data) {
  // Column order: data, label, path (sorted).
  const Value values[] = {Value(Bytes{std::string(data)}), Value(entry.label),
                          Value(std::string(entry.path))};
  FERRY_RETURN_IF_ERROR(writer_->WriteValues(values));
  files_.push_back(file);
  return Status::Ok();
}

Status PackWriter::Publish() {
  FERRY_RETURN_IF_ERROR(writer_->Finish().status());
  const nlohmann::json map = {{"listing", listing_digest_}, {"files", files_}};
  FERRY_RETURN_IF_ERROR(WriteFileAtomically(tmp_ / "files.json", map.dump()));
  if (::rename(tmp_.c_str(), final_.c_str()) != 0) {
    if (errno != EEXIST && errno != ENOTEMPTY) return ErrnoToStatus(errno, "rename", tmp_);
    Log().debug("files: {} was published by another process first", final_.string());
    return Status::Ok();  // the destructor drops ours
  }
  published_ = true;
  return Status::Ok();
}

Result<std::shared_ptr<const PackSet>> PackSet::Load(const fs::path& packs_dir,
                                                     std::string_view listing_digest) {
  auto set = std::make_shared<PackSet>();
  std::error_code ec;
  if (!fs::is_directory(packs_dir, ec)) return std::shared_ptr<const PackSet>(set);
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(packs_dir, ec)) {
    if (entry.path().filename().string().find(kTmpMarker) == std::string::npos) {
      folders.push_back(entry.path());
    }
  }
  std::sort(folders.begin(), folders.end());
  for (const fs::path& folder : folders) {
    auto text = ReadFileToString(folder / "files.json");
    if (!text) continue;
    std::vector<uint64_t> files;
    try {
      const auto map = nlohmann::json::parse(*text);
      if (map.at("listing").get<std::string>() != listing_digest) continue;
      files = map.at("files").get<std::vector<uint64_t>>();
    } catch (const nlohmann::json::exception& e) {
      Log().warn("files: ignoring pack {}: files.json: {}", folder.string(), e.what());
      continue;
    }
    auto dataset = LocalDataset::Open(folder);
    if (!dataset) {
      Log().warn("files: ignoring pack {}: {}", folder.string(), dataset.error().message());
      continue;
    }
    if ((*dataset)->num_samples() != files.size()) {
      Log().warn("files: ignoring pack {}: {} samples, files.json lists {}", folder.string(),
                 (*dataset)->num_samples(), files.size());
      continue;
    }
    const auto pack = static_cast<uint32_t>(set->packs_.size());
    for (uint64_t i = 0; i < files.size(); ++i) set->where_.try_emplace(files[i], pack, i);
    set->packs_.push_back(std::move(*dataset));
  }
  return std::shared_ptr<const PackSet>(set);
}

Result<std::string> PackSet::Read(uint64_t file) const {
  const auto& [pack, sample] = where_.at(file);
  const LocalDataset& dataset = *packs_[pack];
  FERRY_ASSIGN_OR_RETURN(const auto located, dataset.Locate(sample));
  FERRY_ASSIGN_OR_RETURN(const auto reader, dataset.Shard(located.first));
  SampleFields fields;
  FERRY_RETURN_IF_ERROR(reader->ReadSample(located.second, fields));
  return std::string(fields.fields.at(0));  // "data" is the first column
}

}  // namespace ferry::internal_files
