// BootTime: when this machine last started. It tells what a power cut may have taken from what
// it cannot have: data written before the last boot reached the disk or was lost with the power,
// while data written since is in the page cache or on disk, whatever the disk held before.
//
// Thread-safety: both functions may be called from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace ferry {

/// The wall-clock time of the last boot (the realtime clock less the time since boot, suspend
/// included; a container sees its host's). Computed once per process.
std::chrono::system_clock::time_point BootTime();

/// What names this boot, unlike any other boot of the machine: the kernel's boot_id (a
/// container sees its host's), else the boot time in seconds. Follows SetBootTimeForTesting.
std::string BootId();

/// Replaces what BootTime (and BootId) return (tests); nullopt restores them.
void SetBootTimeForTesting(std::optional<std::chrono::system_clock::time_point> boot);

}  // namespace ferry
