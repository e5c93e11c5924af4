// ferry merge-index ROOT: combine the index.json of every sub-dataset below ROOT into
// ROOT/index.json, byte-compatible with Mosaic's merge_index (spec §10). ROOT is a local folder
// or a prefix in any store: there the sub-indexes are found with one recursive listing, read,
// merged by the same code (MergeIndexParts) and the result is written back to the store.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

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

}  // namespace

Command AddMergeIndexCommand(CLI::App& parent) {
  auto root = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "merge-index", "Combine the indexes of sub-datasets below ROOT into ROOT/index.json");
  app->add_option("root", *root,
                  "Folder whose sub-folders hold MDS datasets: a path or a URL (s3://, az://, "
                  "gs://, ...)")
      ->required();
  return {app, [root]() -> Result<int> {
            FERRY_ASSIGN_OR_RETURN(const DatasetUrl dataset, DatasetUrl::Open(*root));
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
