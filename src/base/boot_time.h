// BootTime: when this machine last started. It tells what a power cut may have taken from what
// it cannot have: data written before the last boot reached the disk or was lost with the power,
// while data written since is in the page cache or on disk, whatever the disk held before.
//
// Thread-safety: both functions may be called from any thread.
#pragma once

#include <chrono>
#include <optional>

namespace ferry {

/// The wall-clock time of the last boot (the realtime clock less the time since boot, suspend
/// included; a container sees its host's). Computed once per process.
std::chrono::system_clock::time_point BootTime();

/// Replaces what BootTime returns (tests); nullopt restores it.
void SetBootTimeForTesting(std::optional<std::chrono::system_clock::time_point> boot);

}  // namespace ferry
