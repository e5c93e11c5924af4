// ferry._ferry.Writer: MdsWriter for Python. Values arrive prepared by python/ferry/_values.py,
// in column_names order; the GIL is released while the library encodes and writes.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/mds_writer.h"
#include "python/bindings.h"
#include "python/py_value.h"
#include "python/status_exception.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

class PyWriter {
 public:
  PyWriter(std::string out, std::vector<std::pair<std::string, std::string>> columns,
           std::optional<std::string> compression, std::vector<std::string> hashes,
           std::optional<uint64_t> size_limit, bool exist_ok) {
    const std::map<std::string, std::string> given(columns.begin(), columns.end());
    MdsWriterOptions options;
    options.out = std::move(out);
    options.columns = std::move(columns);
    options.compression = std::move(compression);
    options.hashes = std::move(hashes);
    options.size_limit = size_limit;
    options.exist_ok = exist_ok;
    writer_ = Unwrap(MdsWriter::Create(std::move(options)));
    // Create validated every encoding: parsing them again in stored order cannot fail.
    for (const auto& name : writer_->column_names()) {
      encodings_.push_back(Unwrap(ColumnEncoding::Parse(given.at(name))));
    }
  }

  const std::vector<std::string>& column_names() const { return writer_->column_names(); }

  std::vector<std::string> column_encodings() const {
    std::vector<std::string> out;
    for (const auto& e : encodings_) out.push_back(e.text());
    return out;
  }

  void Write(const py::sequence& values) {
    const auto& names = writer_->column_names();
    if (values.size() != names.size()) {
      ThrowStatus(InvalidArgumentError(fmt::format(
          "a sample needs {} values (one per column), got {}", names.size(), values.size())));
    }
    std::vector<Value> row;
    row.reserve(names.size());
    for (size_t c = 0; c < names.size(); ++c) {
      row.push_back(Unwrap(ToValue(values[c], encodings_[c], names[c])));
    }
    Status status;
    {
      py::gil_scoped_release release;
      status = writer_->WriteValues(row);
    }
    ThrowIfError(status);
  }

  void FlushShard() {
    Status status;
    {
      py::gil_scoped_release release;
      status = writer_->FlushShard();
    }
    ThrowIfError(status);
  }

  /// The config block every shard embeds, as JSON text.
  std::string config() const { return SerializeShardConfig(writer_->config()); }

  /// Writes the last shard and index.json; returns the number of shards.
  size_t Finish() {
    Result<DatasetDescription> index = InternalError("not finished");
    {
      py::gil_scoped_release release;
      index = writer_->Finish();
    }
    return Unwrap(std::move(index)).shards.size();
  }

  uint64_t samples_written() const { return writer_->samples_written(); }

 private:
  std::unique_ptr<MdsWriter> writer_;
  std::vector<ColumnEncoding> encodings_;  // parallel to column_names()
};

}  // namespace

void RegisterWriter(py::module_& m) {
  py::class_<PyWriter>(m, "Writer")
      .def(py::init<std::string, std::vector<std::pair<std::string, std::string>>,
                    std::optional<std::string>, std::vector<std::string>, std::optional<uint64_t>,
                    bool>(),
           py::arg("out"), py::arg("columns"), py::arg("compression"), py::arg("hashes"),
           py::arg("size_limit"), py::arg("exist_ok"))
      .def_property_readonly("column_names", &PyWriter::column_names)
      .def_property_readonly("column_encodings", &PyWriter::column_encodings)
      .def_property_readonly("samples_written", &PyWriter::samples_written)
      .def_property_readonly("config", &PyWriter::config)
      .def("flush_shard", &PyWriter::FlushShard)
      .def("write", &PyWriter::Write, py::arg("values"))
      .def("finish", &PyWriter::Finish);
}

}  // namespace ferry::python
