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

// MergeIndexUnder for a prefix in a store that is not local. As there, only files named
// index.json count, in key order (the order of their paths), each prefixed by the name of the
// folder that directly holds it, and an existing ROOT/index.json is never replaced (checked
// before anything is read; a store offers no create-only write, so a writer racing this one
// could still slip in between).
Result<size_t> MergeIndexInStore(const DatasetUrl& root) {
  FERRY_ASSIGN_OR_RETURN(const ListResult listing,
                         root.store().List(root.prefix(), /*recursive=*/true));
  std::vector<IndexPart> parts;
  std::vector<std::string> keys;  // of parts
  for (const ObjectInfo& obj : listing.objects) {
    const std::string relative = obj.key.substr(root.prefix().size());
    if (relative == "index.json") {
      return AlreadyExistsError(fmt::format(
          "{}: already exists; merge_index never overwrites an index", root.UrlOf(relative)));
    }
    if (!relative.ends_with("/index.json")) continue;
    const std::string folder_path = relative.substr(0, relative.size() - 11);
    const size_t slash = folder_path.rfind('/');
    parts.push_back({root.UrlOf(relative),
                     slash == std::string::npos ? folder_path : folder_path.substr(slash + 1), ""});
    keys.push_back(obj.key);
  }
  if (parts.empty()) {
    return NotFoundError(
        fmt::format("{}: no sub-folder holds an index.json{}", root.name(),
                    listing.objects.empty() ? " (nothing is there: does it exist?)" : ""));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    FERRY_ASSIGN_OR_RETURN(parts[i].text, root.store().Get(keys[i]));
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
