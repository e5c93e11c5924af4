// ferry._ferry.Writer: MdsWriter for Python, and ferry._ferry.SplitWriter: SplitWriter (Mosaic's
// JSON, CSV and TSV). Values arrive prepared by python/ferry/_values.py and split_writer.py, in
// column_names order; the GIL is released while the library encodes and writes.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/mds_writer.h"
#include "ferry/format/split_writer.h"
#include "python/bindings.h"
#include "python/py_value.h"
#include "python/status_exception.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// A sample's values, one per column, or a clear error before anything is converted.
void CheckRowSize(const py::sequence& values, size_t columns) {
  if (values.size() != columns) {
    ThrowStatus(InvalidArgumentError(
        fmt::format("a sample needs {} values (one per column), got {}", columns, values.size())));
  }
}

// The library encodes and writes without the GIL.
template <typename Writer>
void WriteRow(Writer& writer, const std::vector<Value>& row) {
  Status status;
  {
    py::gil_scoped_release release;
    status = writer.WriteValues(row);
  }
  ThrowIfError(status);
}

// Writes the last shard and index.json; the number of shards.
template <typename Writer>
size_t FinishWriter(Writer& writer) {
  Result<DatasetDescription> index = InternalError("not finished");
  {
    py::gil_scoped_release release;
    index = writer.Finish();
  }
  return Unwrap(std::move(index)).shards.size();
}

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
    CheckRowSize(values, names.size());
    std::vector<Value> row;
    row.reserve(names.size());
    for (size_t c = 0; c < names.size(); ++c) {
      row.push_back(Unwrap(ToValue(values[c], encodings_[c], names[c])));
    }
    WriteRow(*writer_, row);
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
  size_t Finish() { return FinishWriter(*writer_); }

  uint64_t samples_written() const { return writer_->samples_written(); }

 private:
  std::unique_ptr<MdsWriter> writer_;
  std::vector<ColumnEncoding> encodings_;  // parallel to column_names()
};

// A SplitWriter value: str, int or float (split_writer.py checked it against the column).
Value SplitValue(const py::handle& value, const std::string& column) {
  if (py::isinstance<py::str>(value)) return Value(value.cast<std::string>());
  if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    try {
      return Value(value.cast<int64_t>());
    } catch (const py::cast_error&) {
      try {
        return Value(value.cast<uint64_t>());
      } catch (const py::cast_error&) {
        ThrowStatus(InvalidArgumentError(fmt::format("column '{}': {} does not fit in 64 bits",
                                                     column, py::str(value).cast<std::string>())));
      }
    }
  }
  if (py::isinstance<py::float_>(value)) return Value(value.cast<double>());
  ThrowStatus(InvalidArgumentError(
      fmt::format("column '{}': a {} is not a str, an int or a float", column,
                  py::str(py::type::of(value).attr("__qualname__")).cast<std::string>())));
}

class PySplitWriter {
 public:
  PySplitWriter(std::string out, std::string format,
                std::vector<std::pair<std::string, std::string>> columns, std::string newline,
                std::optional<std::string> compression, std::vector<std::string> hashes,
                std::optional<uint64_t> size_limit, bool exist_ok) {
    SplitWriterOptions options;
    options.out = std::move(out);
    options.format = std::move(format);
    options.columns = std::move(columns);
    options.newline = std::move(newline);
    options.compression = std::move(compression);
    options.hashes = std::move(hashes);
    options.size_limit = size_limit;
    options.exist_ok = exist_ok;
    writer_ = Unwrap(SplitWriter::Create(std::move(options)));
  }

  const std::vector<std::string>& column_names() const { return writer_->column_names(); }
  const std::vector<std::string>& column_encodings() const { return writer_->column_encodings(); }
  std::string config() const { return writer_->config_json(); }
  uint64_t samples_written() const { return writer_->samples_written(); }

  void Write(const py::sequence& values) {
    const auto& names = writer_->column_names();
    CheckRowSize(values, names.size());
    std::vector<Value> row;
    row.reserve(names.size());
    for (size_t c = 0; c < names.size(); ++c) row.push_back(SplitValue(values[c], names[c]));
    WriteRow(*writer_, row);
  }

  void FlushShard() { ThrowIfError(writer_->FlushShard()); }

  size_t Finish() { return FinishWriter(*writer_); }

 private:
  std::unique_ptr<SplitWriter> writer_;
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
  py::class_<PySplitWriter>(m, "SplitWriter")
      .def(py::init<std::string, std::string, std::vector<std::pair<std::string, std::string>>,
                    std::string, std::optional<std::string>, std::vector<std::string>,
                    std::optional<uint64_t>, bool>(),
           py::arg("out"), py::arg("format"), py::arg("columns"), py::arg("newline"),
           py::arg("compression"), py::arg("hashes"), py::arg("size_limit"), py::arg("exist_ok"))
      .def_property_readonly("column_names", &PySplitWriter::column_names)
      .def_property_readonly("column_encodings", &PySplitWriter::column_encodings)
      .def_property_readonly("samples_written", &PySplitWriter::samples_written)
      .def_property_readonly("config", &PySplitWriter::config)
      .def("flush_shard", &PySplitWriter::FlushShard)
      .def("write", &PySplitWriter::Write, py::arg("values"))
      .def("finish", &PySplitWriter::Finish);
}

}  // namespace ferry::python
