// ferry merge-index ROOT: combine the index.json of every sub-dataset below ROOT into
// ROOT/index.json, byte-compatible with Mosaic's merge_index (spec §10).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "ferry/format/merge_index.h"

namespace ferry::cli {

Command AddMergeIndexCommand(CLI::App& parent) {
  auto root = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "merge-index", "Combine the indexes of sub-datasets below ROOT into ROOT/index.json");
  app->add_option("root", *root, "Folder whose sub-folders hold MDS datasets")->required();
  return {app, [root]() -> Result<int> {
            FERRY_ASSIGN_OR_RETURN(size_t shards, MergeIndexUnder(*root));
            std::printf("%s\n",
                        fmt::format("merged {} shards into {}/index.json", shards, *root).c_str());
            return 0;
          }};
}

}  // namespace ferry::cli
