// ferry merge-index ROOT: combine the index.json of every sub-dataset below ROOT into
// ROOT/index.json, byte-compatible with Mosaic's merge_index (spec §10). ROOT is a local folder
// or a prefix in any store: there the sub-indexes are found with one recursive listing, read,
// merged by the same code (MergeIndexParts) and the result is written back to the store.
//
// --parts N: ROOT holds the parts of `ferry convert --part K/N`, and the merge is refused unless
// exactly part-00000 ... part-(N-1) hold an index.json - a part that failed, never ran or ran
// twice under another name would otherwise leave a dataset short of samples, silently.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/dataset_url.h"
#include "ferry/format/merge_index.h"

namespace ferry::cli {
namespace {

// MergeIndexUnder for a prefix in a store that is not local: the same choice of sub-indexes
// (FindSubIndexes) over one recursive listing, read and merged by the same code, and written
// back. A store offers no create-only write, so a writer racing this one could still slip an
// index in between the check and the write.
Result<size_t> MergeIndexInStore(const DatasetUrl& root) {
  FERRY_ASSIGN_OR_RETURN(const ListResult listing,
                         root.store().List(root.prefix(), /*recursive=*/true));
  std::vector<std::string> files;
  for (const ObjectInfo& obj : listing.objects)
    files.push_back(obj.key.substr(root.prefix().size()));
  std::string name = root.name();
  while (name.size() > 1 && name.ends_with('/')) name.pop_back();
  auto found = FindSubIndexes(std::move(files), name);
  if (!found && found.error().code() == StatusCode::kNotFound && listing.objects.empty()) {
    return NotFoundError(
        fmt::format("{} (nothing is there: does it exist?)", found.error().message()));
  }
  FERRY_RETURN_IF_ERROR(found.status());
  std::vector<IndexPart> parts;
  for (const SubIndex& sub : *found) {
    FERRY_ASSIGN_OR_RETURN(std::string text, root.store().Get(root.prefix() + sub.path));
    parts.push_back({root.UrlOf(sub.path), sub.folder, std::move(text)});
  }
  FERRY_ASSIGN_OR_RETURN(const MergedIndex merged, MergeIndexParts(parts));
  FERRY_RETURN_IF_ERROR(root.store().Put(root.prefix() + "index.json", merged.text));
  return merged.shards;
}

// The sub-index paths below `root` (relative, '/'-separated).
Result<std::vector<std::string>> FilesBelow(const DatasetUrl& root) {
  std::vector<std::string> files;
  if (const auto local = root.local()) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(*local, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() == "index.json") {
        files.push_back(std::filesystem::relative(it->path(), *local).generic_string());
      }
    }
    if (ec) return ErrnoToStatus(ec.value(), "list", *local);
    return files;
  }
  FERRY_ASSIGN_OR_RETURN(const ListResult listing,
                         root.store().List(root.prefix(), /*recursive=*/true));
  for (const ObjectInfo& obj : listing.objects) {
    files.push_back(obj.key.substr(root.prefix().size()));
  }
  return files;
}

// --parts N: the sub-indexes below `root` are exactly part-00000/index.json ... part-(N-1).
Status CheckParts(const DatasetUrl& root, uint32_t count) {
  FERRY_ASSIGN_OR_RETURN(std::vector<std::string> files, FilesBelow(root));
  std::set<std::string> found;
  std::vector<std::string> others;
  for (const std::string& f : files) {
    if (!f.ends_with("/index.json")) continue;  // ROOT's own index.json: the merge refuses it
    const bool is_part = f.size() == 21 && f.starts_with("part-");  // part-KKKKK/index.json
    if (is_part) {
      found.insert(f);
    } else {
      others.push_back(f);
    }
  }
  std::vector<std::string> missing;
  for (uint32_t k = 0; k < count; ++k) {
    const std::string want = fmt::format("part-{:05}/index.json", k);
    if (found.erase(want) == 0) missing.push_back(fmt::format("part-{:05}", k));
  }
  for (const std::string& extra : found) others.push_back(extra);
  if (!missing.empty() || !others.empty()) {
    std::string why;
    if (!missing.empty()) {
      why = fmt::format(
          "{} of the {} parts have no index.json (not run, failed, or still "
          "running): {}",
          missing.size(), count,
          fmt::join(missing.begin(), missing.begin() + std::min<size_t>(missing.size(), 10), ", "));
    }
    if (!others.empty()) {
      if (!why.empty()) why += "; ";
      why += fmt::format(
          "other sub-indexes are there too: {}",
          fmt::join(others.begin(), others.begin() + std::min<size_t>(others.size(), 10), ", "));
    }
    return FailedPreconditionError(fmt::format("{}: {}", root.name(), why));
  }
  return Status::Ok();
}

}  // namespace

Command AddMergeIndexCommand(CLI::App& parent) {
  auto root = std::make_shared<std::string>();
  auto parts = std::make_shared<uint32_t>(0);
  CLI::App* app = parent.add_subcommand(
      "merge-index", "Combine the indexes of sub-datasets below ROOT into ROOT/index.json");
  app->add_option("root", *root,
                  "Folder whose sub-folders hold MDS datasets: a path or a URL (s3://, az://, "
                  "gs://, ...)")
      ->required();
  app->add_option("--parts", *parts,
                  "ROOT holds the N parts of `ferry convert --part K/N`: refuse unless exactly "
                  "part-00000 ... part-(N-1) have an index.json")
      ->check(CLI::Range(1u, 99999u));
  return {app, [root, parts]() -> Result<int> {
            FERRY_ASSIGN_OR_RETURN(const DatasetUrl dataset, DatasetUrl::Open(*root));
            if (*parts > 0) FERRY_RETURN_IF_ERROR(CheckParts(dataset, *parts));
            FERRY_ASSIGN_OR_RETURN(const size_t shards, dataset.local()
                                                            ? MergeIndexUnder(*dataset.local())
                                                            : MergeIndexInStore(dataset));
            std::string name = dataset.name();
            while (name.size() > 1 && name.ends_with('/')) name.pop_back();
            std::printf("merged %zu shards into %s/index.json\n", shards, name.c_str());
            return 0;
          }};
}

}  // namespace ferry::cli
