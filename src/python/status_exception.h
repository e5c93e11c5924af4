// Status -> Python exception, at the edge of the library (DESIGN.md: exceptions only at the Python
// and CLI edges). The mapping table itself lives in python/ferry/errors.py, the one place that
// says which code becomes which exception class; this raises what it returns.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "ferry/result.h"
#include "ferry/status.h"

namespace ferry::python {

/// Raises ferry.errors.from_status(code, message) as a Python exception (never returns).
[[noreturn]] void ThrowStatus(const Status& status);

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

template <typename T>
T Unwrap(Result<T> result) {
  if (!result) ThrowStatus(result.status());
  return std::move(*result);
}

}  // namespace ferry::python
