// ferry._ferry: the native half of the `ferry` Python package (python/ferry/). Nothing here
// starts a thread at import: threads belong to datasets and iterators, created after any fork.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "base/human_size.h"
#include "ferry/format/encoding.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "ferry/version.h"
#include "loader/batch_loader.h"
#include "python/bindings.h"
#include "python/status_exception.h"

namespace py = pybind11;

PYBIND11_MODULE(_ferry, m) {
  using namespace ferry;
  using namespace ferry::python;
  m.doc() = "Native core of ferry (see the ferry package for the documented API).";
  m.attr("__version__") = std::string(Version());

  m.def(
      "parse_size", [](const std::string& text) { return Unwrap(ParseHumanSize(text)); },
      py::arg("text"), "'64mb' -> 67108864 (bytes); ValueError for anything else.");
  m.def(
      "resolve_size_limit", [](const std::string& text) { return Unwrap(ResolveSizeLimit(text)); },
      py::arg("text"), "A writer size_limit as the reference resolves it: None for 0 (no limit).");
  m.def(
      "encoding_kind",
      [](const std::string& encoding) {
        return std::string(EncodingKindName(Unwrap(ColumnEncoding::Parse(encoding)).kind()));
      },
      py::arg("encoding"), "'ndarray:int16:3,4' -> 'ndarray'; ValueError for unknown ones.");
  m.def(
      "field_encoding",
      [](const std::string& field) { return internal_loader::FieldEncoding(field).text(); },
      py::arg("field"),
      "How the loader reads a WebDataset field by its extension: 'jpg' -> 'jpeg', 'cls' -> "
      "'str_int', 'json' -> 'bytes'.");
  m.def(
      "metrics", [] { return metrics::Values(); },
      "Every counter and gauge of this process: {'/ferry/cache/hits': 12, ...}.");
  m.def(
      "put_file",
      [](const std::string& url, const std::string& path) {
        Status status;
        {
          py::gil_scoped_release release;
          status = [&]() -> Status {
            FERRY_ASSIGN_OR_RETURN(StoreAndKey target, OpenUrl(url));
            return target.store->PutFile(target.key, path);
          }();
        }
        ThrowIfError(status);
      },
      py::arg("url"), py::arg("path"), "Uploads a local file to any store URL.");

  RegisterWriter(m);
  RegisterDataset(m);
  RegisterLoader(m);
  RegisterFiles(m);
  RegisterUtil(m);
}
