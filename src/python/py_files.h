// FileDataset options from the dict python/ferry/files.py builds (files_binding.cc); also read
// by ferry._ferry.Dataset, which opens a FileDataset as a stream for ferry.DataLoader.
#pragma once

#include <pybind11/pybind11.h>

#include "ferry/files/file_dataset.h"

namespace ferry::python {

/// Raises (as ferry.InvalidArgumentError) on a malformed option.
FileDatasetOptions ParseFileDatasetOptions(const pybind11::dict& d);

}  // namespace ferry::python
