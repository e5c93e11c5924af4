#include "python/py_value.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <climits>
#include <cstring>
#include <string>
#include <type_traits>

namespace py = pybind11;

namespace ferry::python {
namespace {

bool IsListKind(EncodingKind kind) {
  return kind == EncodingKind::kListPil || kind == EncodingKind::kListJpeg ||
         kind == EncodingKind::kListPng || kind == EncodingKind::kJpegArray;
}

std::string TypeName(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__qualname__")).cast<std::string>();
}

Status WrongKind(py::handle object, const ColumnEncoding& encoding, std::string_view column) {
  return InvalidArgumentError(fmt::format("column '{}': a {} cannot be stored as {}", column,
                                          TypeName(object), encoding.text()));
}

Result<Value> IntValue(py::handle object) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
  if (overflow == 0) {
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return Value(static_cast<int64_t>(v));
  }
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(object.ptr());
    if (!(u == ULLONG_MAX && PyErr_Occurred())) return Value(static_cast<uint64_t>(u));
    PyErr_Clear();
  }
  // Beyond 64 bits: exact text, which only str_int takes (others reject it by kind).
  return Value(NumberText{py::str(object).cast<std::string>()});
}

Result<Value> ArrayValue(const py::array& array, std::string_view column) {
  const std::string dtype_name = py::str(array.dtype().attr("name")).cast<std::string>();
  const auto dtype = DTypeFromName(dtype_name);
  if (!dtype) {
    return InvalidArgumentError(
        fmt::format("column '{}': arrays of dtype {} cannot be stored (ndarray takes uint8..64, "
                    "int8..64, float16/32/64)",
                    column, dtype_name));
  }
  if (!(array.flags() & py::array::c_style)) {
    return InvalidArgumentError(fmt::format("column '{}': the array is not C-contiguous", column));
  }
  NdArray out;
  out.dtype = *dtype;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) out.shape.push_back(array.shape(i));
  out.data.assign(static_cast<const char*>(array.data()), static_cast<size_t>(array.nbytes()));
  return Value(std::move(out));
}

}  // namespace

Result<Value> ToValue(py::handle object, const ColumnEncoding& encoding, std::string_view column) {
  const EncodingKind kind = encoding.kind();
  if (PyBytes_Check(object.ptr())) return Value(Bytes{object.cast<std::string>()});
  if (PyByteArray_Check(object.ptr()) || PyMemoryView_Check(object.ptr())) {
    return Value(Bytes{py::bytes(py::reinterpret_borrow<py::object>(object)).cast<std::string>()});
  }
  if (object.is_none()) return Value();
  if (PyBool_Check(object.ptr())) return Value(object.ptr() == Py_True);
  if (PyLong_Check(object.ptr())) return IntValue(object);
  if (PyFloat_Check(object.ptr())) return Value(PyFloat_AsDouble(object.ptr()));
  if (PyUnicode_Check(object.ptr())) {
    std::string text = object.cast<std::string>();
    if (kind == EncodingKind::kJson) return Value(Json{std::move(text)});
    if (kind == EncodingKind::kStrInt || kind == EncodingKind::kStrDecimal) {
      return Value(NumberText{std::move(text)});
    }
    return Value(std::move(text));
  }
  if (py::isinstance<py::array>(object)) {
    if (kind != EncodingKind::kNdArray) return WrongKind(object, encoding, column);
    return ArrayValue(py::reinterpret_borrow<py::array>(object), column);
  }
  if (PyTuple_Check(object.ptr()) && py::len(object) == 4 &&
      (kind == EncodingKind::kPil || kind == EncodingKind::kListPil)) {
    const auto t = py::reinterpret_borrow<py::tuple>(object);
    PilImage image;
    image.mode = t[0].cast<std::string>();
    image.width = t[1].cast<uint32_t>();
    image.height = t[2].cast<uint32_t>();
    image.pixels = t[3].cast<std::string>();
    return Value(std::move(image));
  }
  if (PyList_Check(object.ptr()) && IsListKind(kind)) {
    static const ColumnEncoding kPilElement = ColumnEncoding::Parse("pil").value();
    static const ColumnEncoding kBytesElement = ColumnEncoding::Parse("bytes").value();
    const ColumnEncoding& element = kind == EncodingKind::kListPil ? kPilElement : kBytesElement;
    ValueList list;
    for (py::handle item : object) {
      FERRY_ASSIGN_OR_RETURN(Value v, ToValue(item, element, column));
      list.push_back(std::move(v));
    }
    return Value(std::move(list));
  }
  return WrongKind(object, encoding, column);
}

py::object FromValue(const Value& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return py::none();
        } else if constexpr (std::is_same_v<T, bool>) {
          return py::bool_(v);
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
          return py::int_(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return py::float_(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return py::str(v);
        } else if constexpr (std::is_same_v<T, Bytes>) {
          return py::bytes(v.data);
        } else if constexpr (std::is_same_v<T, Json> || std::is_same_v<T, NumberText>) {
          return py::str(v.text);
        } else if constexpr (std::is_same_v<T, NdArray>) {
          std::vector<py::ssize_t> shape(v.shape.begin(), v.shape.end());
          py::array array(py::dtype(std::string(DTypeName(v.dtype))), shape);
          if (!v.data.empty()) std::memcpy(array.mutable_data(), v.data.data(), v.data.size());
          return array;
        } else if constexpr (std::is_same_v<T, PilImage>) {
          return py::make_tuple(v.mode, v.width, v.height, py::bytes(v.pixels));
        } else {
          static_assert(std::is_same_v<T, ValueList>);
          py::list list;
          for (const Value& item : v) list.append(FromValue(item));
          return list;
        }
      },
      value.variant());
}

}  // namespace ferry::python
