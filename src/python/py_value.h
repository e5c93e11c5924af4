// Python objects <-> ferry::Value, for one column.
//
// The Python layer (python/ferry/_values.py) does what needs Python libraries - json.dumps,
// pickle, PIL encoding, Decimal, numpy normalisation - and hands this layer plain objects:
//   bytes-like -> Bytes (stored verbatim in any column, as the reference writer does)
//   None, bool, int, float -> monostate, bool, int64/uint64 (NumberText beyond 64 bits), double
//   str -> Json text for `json`, NumberText for `str_int`/`str_decimal`, else text
//   (mode, width, height, pixels) -> PilImage
//   list -> ValueList (elements as `pil` for list[pil], else bytes)
//   numpy.ndarray (C-contiguous, little-endian) -> NdArray
// FromValue is the inverse for decoded values (Json and NumberText come back as str, PilImage
// as the same 4-tuple, NdArray as a numpy array that owns a copy of the data).
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "ferry/format/encoding.h"
#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry::python {

/// kInvalidArgument naming `column` for an object this column cannot take.
Result<Value> ToValue(pybind11::handle object, const ColumnEncoding& encoding,
                      std::string_view column);

pybind11::object FromValue(const Value& value);

}  // namespace ferry::python
