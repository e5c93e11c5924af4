#include "python/status_exception.h"

namespace py = pybind11;

namespace ferry::python {

void ThrowStatus(const Status& status) {
  py::object exception =
      py::module_::import("ferry.errors")
          .attr("from_status")(std::string(StatusCodeName(status.code())), status.message());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
  throw py::error_already_set();
}

}  // namespace ferry::python
