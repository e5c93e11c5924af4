// The parts of ferry._ferry, one per concept; module.cc calls each once.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

void RegisterWriter(pybind11::module_& m);
void RegisterDataset(pybind11::module_& m);
void RegisterLoader(pybind11::module_& m);
void RegisterFiles(pybind11::module_& m);
void RegisterUtil(pybind11::module_& m);

}  // namespace ferry::python
