// 128-bit integers for overflow-free size and range arithmetic (a GCC/Clang extension; the
// __extension__ keeps -Wpedantic quiet).
#pragma once

namespace ferry {
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;
}  // namespace ferry
