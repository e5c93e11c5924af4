// LockAcrossFork: a mutex held across fork(), so that a forked child (a torch DataLoader
// worker) gets a consistent copy of what it guards, and unlocked - with a hook that runs in the
// child first, holding the mutex, to drop what belongs to the parent (its threads, its files).
//
// fork() copies only the calling thread; a mutex another thread held at that moment would stay
// locked in the child forever. Taking it before the fork (pthread_atfork's prepare) rules that
// out. The guarded objects are registered once per process, in order; the mutexes are taken in
// that order before a fork and released in reverse after it. None of them may be held while
// taking another (no lock order to get wrong).
//
// Thread-safety: LockAcrossFork may be called from any thread, typically from the function-local
// static that creates the guarded object.
#pragma once

#include "base/mutex.h"

namespace ferry {

/// Holds `mu` across every fork() from now on; in the child, `in_child` runs with `mu` held,
/// before it is released. `mu` must live as long as the process.
void LockAcrossFork(Mutex& mu, void (*in_child)());

}  // namespace ferry
