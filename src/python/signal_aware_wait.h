// AwaitLettingSignalsIn: the wait of a Python call for something native (a shard's or a file's
// download), in slices, with Python's signal handlers run between them - so that Ctrl+C
// interrupts the wait instead of taking effect only once the download is done.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>

namespace ferry::python {

/// Calls `await_for(100 ms)` until it returns true; between calls runs the pending signal
/// handlers, and throws (KeyboardInterrupt, say) when one raises. \pre the GIL is released.
template <typename AwaitFor>
void AwaitLettingSignalsIn(AwaitFor&& await_for) {
  while (!await_for(std::chrono::milliseconds(100))) {
    pybind11::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
  }
}

}  // namespace ferry::python
