// ferry._ferry.Loader: BatchLoader for Python. Batches come back as dicts of numpy arrays that
// view the native buffers (a capsule keeps the batch alive as long as any array does) and lists
// for bytes/str columns. Waits release the GIL and look for Ctrl+C every 100 ms.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "loader/batch_loader.h"
#include "python/bindings.h"
#include "python/fork_safe.h"
#include "python/py_args.h"
#include "python/py_dataset.h"
#include "python/signal_aware_wait.h"
#include "python/status_exception.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

using internal_loader::Batch;
using internal_loader::BatchDType;
using internal_loader::BatchLoader;
using internal_loader::BatchLoaderOptions;
using internal_loader::ColumnSpec;
using internal_loader::ImagePipelineOptions;
using internal_loader::ImageTransform;
using internal_loader::ThreadStart;

ImageTransform ParseTransform(const py::dict& d) {
  const auto kind = d["kind"].cast<std::string>();
  ImageTransform t;
  if (kind == "resize") {
    t.kind = ImageTransform::Kind::kResize;
  } else if (kind == "center_crop") {
    t.kind = ImageTransform::Kind::kCenterCrop;
  } else if (kind == "random_resized_crop") {
    t.kind = ImageTransform::Kind::kRandomResizedCrop;
    t.scale = d["scale"].cast<std::array<double, 2>>();
    t.ratio = d["ratio"].cast<std::array<double, 2>>();
  } else if (kind == "random_horizontal_flip") {
    t.kind = ImageTransform::Kind::kRandomHorizontalFlip;
    t.p = d["p"].cast<double>();
  } else {
    ThrowStatus(InvalidArgumentError(fmt::format("unknown image transform {}", kind)));
  }
  if (d.contains("width")) t.width = d["width"].cast<uint32_t>();
  if (d.contains("height")) t.height = d["height"].cast<uint32_t>();
  return t;
}

ImagePipelineOptions ParsePipeline(const py::dict& d) {
  ImagePipelineOptions o;
  for (py::handle t : d["transforms"]) o.transforms.push_back(ParseTransform(t.cast<py::dict>()));
  o.to_float = d["to_float"].cast<bool>();
  o.channels_first = d["channels_first"].cast<bool>();
  if (!d["mean"].is_none()) o.mean = d["mean"].cast<std::array<float, 3>>();
  if (!d["std"].is_none()) o.std = d["std"].cast<std::array<float, 3>>();
  o.dct_scaling = d["dct_scaling"].cast<bool>();
  return o;
}

py::dtype DType(BatchDType t) {
  switch (t) {
    case BatchDType::kUInt8:
      return py::dtype::of<uint8_t>();
    case BatchDType::kFloat32:
      return py::dtype::of<float>();
    case BatchDType::kInt64:
      return py::dtype::of<int64_t>();
    default:
      return py::dtype::of<double>();
  }
}

py::dict ToPython(std::shared_ptr<Batch> batch) {
  // One capsule owns a reference to the batch; every array holds the capsule.
  auto* owner = new std::shared_ptr<Batch>(batch);
  py::capsule capsule(owner, [](void* p) { delete static_cast<std::shared_ptr<Batch>*>(p); });
  py::dict out;
  for (const auto& c : batch->columns) {
    if (c.dtype == BatchDType::kObject) {
      py::list items;
      for (const auto& o : c.objects) {
        if (c.text) {
          items.append(py::str(o));
        } else {
          items.append(py::bytes(o));
        }
      }
      out[py::str(c.name)] = std::move(items);
      continue;
    }
    std::vector<py::ssize_t> shape(c.shape.begin(), c.shape.end());
    out[py::str(c.name)] = py::array(DType(c.dtype), shape, c.data.get(), capsule);
  }
  py::array_t<int64_t> ids(static_cast<py::ssize_t>(batch->ids.size()));
  std::copy(batch->ids.begin(), batch->ids.end(), ids.mutable_data());
  out["__ids__"] = std::move(ids);
  return out;
}

class PyLoader {
 public:
  explicit PyLoader(std::unique_ptr<BatchLoader> loader) : loader_(std::move(loader)) {}
  PyLoader(PyLoader&&) = default;

  py::dict Next() {
    if (!loader_.get()) throw py::stop_iteration();
    Result<std::optional<std::shared_ptr<Batch>>> next = InternalError("no batch");
    {
      py::gil_scoped_release release;
      AwaitLettingSignalsIn([&](auto timeout) {
        next = loader_.get()->Next(timeout);
        return !next.has_value() || next->has_value();  // an error, or a batch (or the end)
      });
    }
    auto got = Unwrap(std::move(next));
    if (*got == nullptr) throw py::stop_iteration();
    return ToPython(std::move(*got));
  }

  uint64_t num_batches() const { return loader_.get() ? loader_.get()->num_batches() : 0; }

  void Close() {
    py::gil_scoped_release release;
    loader_.reset();
  }

 private:
  ForkSafe<std::unique_ptr<BatchLoader>> loader_;
};

}  // namespace

void RegisterLoader(py::module_& m) {
  py::class_<PyLoader>(m, "Loader")
      .def(py::init([](const PyDataset& dataset, const py::list& columns, uint32_t batch_size,
                       uint32_t num_threads, uint32_t prefetch_factor, bool drop_last,
                       uint64_t seed, const Triple& world,
                       const std::tuple<uint32_t, uint32_t>& rank, uint64_t epoch,
                       const std::vector<std::tuple<uint32_t, uint64_t, uint64_t>>& starts) {
             BatchLoaderOptions o;
             for (py::handle item : columns) {
               const auto pair = item.cast<py::tuple>();
               ColumnSpec spec{.name = pair[0].cast<std::string>(), .image = std::nullopt};
               if (!pair[1].is_none()) spec.image = ParsePipeline(pair[1].cast<py::dict>());
               o.columns.push_back(std::move(spec));
             }
             o.batch_size = batch_size;
             o.num_threads = num_threads;
             o.prefetch_factor = prefetch_factor;
             o.drop_last = drop_last;
             o.seed = seed;
             std::vector<ThreadStart> s;
             for (const auto& [w, from, skip] : starts) {
               s.push_back({.plan_worker = w, .resume_from = from, .skip = skip});
             }
             Result<std::unique_ptr<BatchLoader>> loader = InternalError("not started");
             {
               py::gil_scoped_release release;
               loader = BatchLoader::Start(
                   dataset.shared(), std::move(o), World(world),
                   {.node = std::get<0>(rank), .rank = std::get<1>(rank), .worker = 0}, epoch,
                   std::move(s));
             }
             return PyLoader(Unwrap(std::move(loader)));
           }),
           py::arg("dataset"), py::arg("columns"), py::arg("batch_size"), py::arg("num_threads"),
           py::arg("prefetch_factor"), py::arg("drop_last"), py::arg("seed"), py::arg("world"),
           py::arg("rank"), py::arg("epoch"), py::arg("starts"))
      .def("__iter__", [](PyLoader& self) -> PyLoader& { return self; })
      .def("__next__", &PyLoader::Next)
      .def_property_readonly("num_batches", &PyLoader::num_batches)
      .def("close", &PyLoader::Close);
}

}  // namespace ferry::python
