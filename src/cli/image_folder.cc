#include "cli/image_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "base/file_util.h"
#include "base/utf8.h"
#include "cli/transfer.h"
#include "ferry/format/index.h"
#include "files/file_encoding.h"
#include "storage/object_key.h"

namespace ferry {
namespace {

bool IsHidden(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name.front() == '.';
}

Status AddFile(const std::filesystem::path& root, const std::filesystem::directory_entry& entry,
               int64_t label, FolderListing& out) {
  std::error_code ec;
  FolderFile f;
  f.path = entry.path();
  f.relative = entry.path().lexically_relative(root).generic_string();
  if (!IsValidUtf8(f.relative)) {
    return InvalidArgumentError(
        fmt::format("{}: file name is not UTF-8, so it cannot be stored in a str column",
                    entry.path().string()));
  }
  f.label = label;
  f.bytes = entry.file_size(ec);
  if (ec) return ErrnoToStatus(ec.value(), "stat", entry.path());
  out.total_bytes += f.bytes;
  out.files.push_back(std::move(f));
  return Status::Ok();
}

Status AddTree(const std::filesystem::path& root, const std::filesystem::path& dir, int64_t label,
               FolderListing& out) {
  std::error_code ec;
  auto it = std::filesystem::recursive_directory_iterator(
      dir, std::filesystem::directory_options::follow_directory_symlink, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (IsHidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) FERRY_RETURN_IF_ERROR(AddFile(root, *it, label, out));
  }
  if (ec) return ErrnoToStatus(ec.value(), "list folder", dir);
  return Status::Ok();
}

}  // namespace

namespace {

// The order, once the files are known.
Status Finish(FolderListing& out, std::string_view root) {
  if (out.files.empty()) {
    return InvalidArgumentError(fmt::format("{}: holds no files to convert", root));
  }
  std::sort(out.files.begin(), out.files.end(), [](const FolderFile& a, const FolderFile& b) {
    return a.label != b.label ? a.label < b.label : a.relative < b.relative;
  });
  return Status::Ok();
}

}  // namespace

Result<FolderListing> ListRemoteImageFolder(ObjectStore& store, std::string_view prefix,
                                            std::string_view url) {
  const std::string folder = FolderKey(prefix);
  FERRY_ASSIGN_OR_RETURN(ListResult listed, store.List(folder, /*recursive=*/true));
  FolderListing out;
  std::vector<FolderFile> top;
  std::vector<std::pair<std::string, FolderFile>> nested;  // class name, file
  for (ObjectInfo& object : listed.objects) {
    if (!object.key.starts_with(folder)) continue;
    std::string relative = object.key.substr(folder.size());
    if (relative.empty() || relative.back() == '/') continue;  // "folder" markers
    FERRY_RETURN_IF_ERROR(ValidateBasename(relative).WithContext(url));
    bool hidden = false;
    for (size_t start = 0; start < relative.size();) {
      hidden |= relative[start] == '.';
      const size_t slash = relative.find('/', start);
      start = slash == std::string::npos ? relative.size() : slash + 1;
    }
    if (hidden) continue;
    if (!IsValidUtf8(relative)) {
      return InvalidArgumentError(fmt::format(
          "{}/{}: file name is not UTF-8, so it cannot be stored in a str column", url, relative));
    }
    FolderFile f{.path = relative, .relative = relative, .label = -1, .bytes = object.size};
    const size_t slash = relative.find('/');
    if (slash == std::string::npos) {
      top.push_back(std::move(f));
    } else {
      nested.emplace_back(relative.substr(0, slash), std::move(f));
    }
  }
  out.labeled = !nested.empty();
  if (out.labeled) {
    for (const auto& [name, file] : nested) out.classes.push_back(name);
    std::sort(out.classes.begin(), out.classes.end());
    out.classes.erase(std::unique(out.classes.begin(), out.classes.end()), out.classes.end());
    for (auto& [name, file] : nested) {
      file.label =
          std::lower_bound(out.classes.begin(), out.classes.end(), name) - out.classes.begin();
      out.files.push_back(std::move(file));
    }
    out.skipped_top_level = top.size();
  } else {
    out.files = std::move(top);
  }
  for (const FolderFile& f : out.files) out.total_bytes += f.bytes;
  FERRY_RETURN_IF_ERROR(Finish(out, url));
  return out;
}

Result<FolderListing> ListImageFolder(const std::filesystem::path& root) {
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) {
    return NotFoundError(fmt::format("{}: no such folder", root.string()));
  }
  if (!std::filesystem::is_directory(root, ec)) {
    return InvalidArgumentError(fmt::format("{}: not a folder", root.string()));
  }
  FolderListing out;
  std::vector<std::filesystem::directory_entry> top_files;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (IsHidden(entry.path())) continue;
    if (entry.is_directory()) {
      out.classes.push_back(entry.path().filename().string());
    } else if (entry.is_regular_file()) {
      top_files.push_back(entry);
    }
  }
  if (ec) return ErrnoToStatus(ec.value(), "list folder", root);
  std::sort(out.classes.begin(), out.classes.end());
  out.labeled = !out.classes.empty();
  if (out.labeled) {
    for (const auto& name : out.classes) {
      if (!IsValidUtf8(name)) {
        return InvalidArgumentError(
            fmt::format("{}: class folder name is not UTF-8", (root / name).string()));
      }
    }
    for (size_t label = 0; label < out.classes.size(); ++label) {
      FERRY_RETURN_IF_ERROR(
          AddTree(root, root / out.classes[label], static_cast<int64_t>(label), out));
    }
    out.skipped_top_level = top_files.size();
  } else {
    for (const auto& entry : top_files) FERRY_RETURN_IF_ERROR(AddFile(root, entry, -1, out));
  }
  FERRY_RETURN_IF_ERROR(Finish(out, root.string()));
  return out;
}

void RemoveFiles(FolderListing& listing, const std::vector<size_t>& indexes) {
  for (size_t i : indexes) listing.total_bytes -= listing.files[i].bytes;
  internal_files::RemoveAt(listing.files, indexes);
}

}  // namespace ferry
