#include "cli/scratch_folder.h"

#include <fmt/format.h>
#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <system_error>

#include "base/file_util.h"

namespace ferry::cli {

Result<std::unique_ptr<ScratchFolder>> ScratchFolder::Create(std::string_view purpose) {
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  std::string pattern =
      ((ec ? std::filesystem::path("/tmp") : base) / fmt::format("ferry-{}-XXXXXX", purpose))
          .string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return ErrnoToStatus(errno, "create a temporary folder", pattern);
  }
  return std::unique_ptr<ScratchFolder>(new ScratchFolder(pattern));
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace ferry::cli
