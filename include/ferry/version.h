// ferry::Version(): ferry's version, as `ferry --version`, ferry.__version__ and the wheel report
// it: the VERSION of project() in the top CMakeLists.txt, with the git revision of a checkout as a
// PEP 440 local label
// ("0.1.0+g1a2b3c4d5e6f"). The text is generated at every build by cmake/FerryVersion.cmake (into
// the one small source that defines it, so a new commit recompiles nothing else).
//
// Thread-safety: a constant.
#pragma once

#include <string_view>

namespace ferry {
namespace internal {
extern const char kVersionText[];
}  // namespace internal

/// "0.1.0" or "0.1.0+g1a2b3c4d5e6f" (".dirty" after it when the checkout had changes).
inline std::string_view Version() { return internal::kVersionText; }

}  // namespace ferry
