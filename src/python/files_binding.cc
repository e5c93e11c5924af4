// ferry._ferry.FileDataset and FileIterator: folders of small files for Python. Options come as
// one dict built by python/ferry/files.py; a sample comes back as (index, path, label, bytes).
// Every call that may wait on the network or the disk releases the GIL.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ferry/files/file_dataset.h"
#include "files/file_encoding.h"
#include "python/bindings.h"
#include "python/fork_safe.h"
#include "python/py_args.h"
#include "python/py_files.h"
#include "python/signal_aware_wait.h"
#include "python/status_exception.h"

namespace py = pybind11;

namespace ferry::python {

FileDatasetOptions ParseFileDatasetOptions(const py::dict& d) {
  FileDatasetOptions o;
  o.root = d["root"].cast<std::string>();
  o.local = GetOptional<std::string>(d, "local").value_or("");
  o.cache_limit = GetOptional<uint64_t>(d, "cache_limit");
  o.shuffle = GetOptional<bool>(d, "shuffle").value_or(false);
  o.shuffle_seed = GetOptional<uint64_t>(d, "shuffle_seed").value_or(o.shuffle_seed);
  o.drop_last = GetOptional<bool>(d, "drop_last").value_or(false);
  const std::string labels = GetOptional<std::string>(d, "labels").value_or("folder");
  if (labels != "folder" && labels != "none") {
    ThrowStatus(
        InvalidArgumentError(fmt::format("labels must be 'folder' or None, not {}", labels)));
  }
  o.labels = labels == "folder" ? FileLabels::kFolder : FileLabels::kNone;
  o.extensions =
      GetOptional<std::vector<std::string>>(d, "extensions").value_or(std::vector<std::string>());
  o.encoding = Unwrap(internal_files::ParseFileEncoding(
      GetOptional<std::string>(d, "encoding").value_or("auto"), "encoding"));
  o.skip_other = GetOptional<bool>(d, "skip_other").value_or(false);
  o.refresh = GetOptional<bool>(d, "refresh").value_or(false);
  if (auto age = GetOptional<int64_t>(d, "listing_max_age")) {
    o.listing_max_age = std::chrono::seconds(*age);
  }
  const std::string missing = GetOptional<std::string>(d, "on_missing").value_or("error");
  if (missing != "error" && missing != "skip") {
    ThrowStatus(
        InvalidArgumentError(fmt::format("on_missing must be 'error' or 'skip', not {}", missing)));
  }
  o.on_missing = missing == "skip" ? OnMissing::kSkip : OnMissing::kError;
  o.pack = GetOptional<bool>(d, "pack").value_or(false);
  o.concurrency = GetOptional<uint32_t>(d, "concurrency");
  o.max_concurrency = GetOptional<uint32_t>(d, "max_concurrency").value_or(o.max_concurrency);
  o.max_bytes_in_flight =
      GetOptional<uint64_t>(d, "max_bytes_in_flight").value_or(o.max_bytes_in_flight);
  return o;
}

namespace {

py::tuple ToPython(FileSample& s) {
  return py::make_tuple(s.index, s.path, s.label, py::bytes(s.data.data(), s.data.size()));
}

class PyFileIterator {
 public:
  explicit PyFileIterator(std::unique_ptr<FileIterator> it) : it_(std::move(it)) {}
  PyFileIterator(PyFileIterator&&) = default;

  py::tuple Next() {
    if (!it_.get()) throw py::stop_iteration();
    Result<std::optional<FileSample>> next = InternalError("no sample");
    {
      py::gil_scoped_release release;
      AwaitLettingSignalsIn([&](auto timeout) { return it_.get()->AwaitNext(timeout); });
      next = it_.get()->Next();
    }
    auto sample = Unwrap(std::move(next));
    if (!sample) throw py::stop_iteration();
    return ToPython(*sample);
  }

  uint64_t remaining() const { return it_.get() ? it_.get()->remaining() : 0; }

  void Close() {
    py::gil_scoped_release release;
    it_.reset();
  }

 private:
  ForkSafe<std::unique_ptr<FileIterator>> it_;
};

struct PyFileDataset {
  ForkSafe<std::shared_ptr<FileDataset>> dataset;
  FileDataset& get() { return *dataset.get(); }
};

}  // namespace

void RegisterFiles(py::module_& m) {
  py::class_<PyFileDataset>(m, "FileDataset")
      .def(py::init([](const py::dict& options) {
             FileDatasetOptions parsed = ParseFileDatasetOptions(options);
             Result<std::shared_ptr<FileDataset>> ds = InternalError("not opened");
             {
               py::gil_scoped_release release;
               ds = FileDataset::Open(std::move(parsed));
             }
             return PyFileDataset{ForkSafe<std::shared_ptr<FileDataset>>(Unwrap(std::move(ds)))};
           }),
           py::arg("options"))
      .def("__len__", [](PyFileDataset& self) { return self.get().files().size(); })
      .def_property_readonly("classes", [](PyFileDataset& self) { return self.get().classes(); })
      .def_property_readonly("listed", [](PyFileDataset& self) { return self.get().listed(); })
      .def_property_readonly("data_encoding",
                             [](PyFileDataset& self) { return self.get().data_encoding(); })
      .def_property_readonly("skipped_other",
                             [](PyFileDataset& self) { return self.get().skipped_other(); })
      .def_property_readonly("files",
                             [](PyFileDataset& self) {
                               py::list out;
                               for (const FileEntry& f : self.get().files()) {
                                 out.append(py::make_tuple(f.path, f.size, f.label));
                               }
                               return out;
                             })
      .def(
          "get",
          [](PyFileDataset& self, uint64_t index) {
            FileDataset& ds = self.get();
            Result<FileSample> got = InternalError("no sample");
            {
              py::gil_scoped_release release;
              got = ds.Get(index);
            }
            FileSample sample = Unwrap(std::move(got));
            return ToPython(sample);
          },
          py::arg("index"))
      .def(
          "order",
          [](PyFileDataset& self, const Triple& world, const Triple& worker, uint64_t epoch) {
            return Unwrap(self.get().Order(World(world), Worker(worker), epoch));
          },
          py::arg("world"), py::arg("worker"), py::arg("epoch"))
      .def(
          "iterate",
          [](PyFileDataset& self, const Triple& world, const Triple& worker, uint64_t epoch,
             uint64_t skip) {
            FileDataset& ds = self.get();
            Result<std::unique_ptr<FileIterator>> it = InternalError("no iterator");
            {
              py::gil_scoped_release release;
              it = ds.Iterate(
                  {.world = World(world), .worker = Worker(worker), .epoch = epoch, .skip = skip});
            }
            return PyFileIterator(Unwrap(std::move(it)));
          },
          py::arg("world"), py::arg("worker"), py::arg("epoch"), py::arg("skip") = 0);

  py::class_<PyFileIterator>(m, "FileIterator")
      .def("__iter__", [](PyFileIterator& self) -> PyFileIterator& { return self; })
      .def("__next__", &PyFileIterator::Next)
      .def_property_readonly("remaining", &PyFileIterator::remaining)
      .def("close", &PyFileIterator::Close);
}

}  // namespace ferry::python
