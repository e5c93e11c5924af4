// Clang's thread-safety annotations: which mutex guards a member, which a function needs held or
// must not hold. Clang checks them at compile time (-Wthread-safety, the `fuzz` preset builds
// with -Werror=thread-safety); other compilers see nothing. They only mean something on a
// capability such as ferry::Mutex (base/mutex.h): libstdc++'s std::mutex carries none.
//
// Thread-safety: macros.
#pragma once

#if defined(__clang__)
#define FERRY_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FERRY_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) FERRY_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY FERRY_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) FERRY_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) FERRY_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) FERRY_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) FERRY_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) FERRY_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) FERRY_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FERRY_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) FERRY_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) FERRY_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) FERRY_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) FERRY_THREAD_ANNOTATION(lock_returned(x))
// For the rare function whose locking the analysis cannot follow; say why beside it.
#define NO_THREAD_SAFETY_ANALYSIS FERRY_THREAD_ANNOTATION(no_thread_safety_analysis)
