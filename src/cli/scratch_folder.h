// ScratchFolder: a fresh folder under the temporary directory ($TMPDIR, else /tmp) for what a
// command stages on local disk (a remote dataset's shards while verify or cat reads them),
// removed with everything in it when the object goes.
//
// Thread-safety: the object is immutable; what goes into the folder is the owner's business.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "ferry/result.h"

namespace ferry::cli {

class ScratchFolder {
 public:
  /// A folder named ferry-`purpose`-XXXXXX.
  static Result<std::unique_ptr<ScratchFolder>> Create(std::string_view purpose);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  explicit ScratchFolder(std::filesystem::path path) : path_(std::move(path)) {}
  const std::filesystem::path path_;
};

}  // namespace ferry::cli
