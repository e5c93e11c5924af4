// ferry._ferry.Dataset and SampleIterator: the streaming engine for Python. Options come as one
// dict built by python/ferry/dataset.py (or, with a "files" entry, python/ferry/files.py's, for
// a folder of files seen as a stream); samples come back as (id, stream, [raw values]) that
// python/ferry/_values.py finishes (PIL images, numpy scalars, Decimal, parsed JSON). Every call
// that may wait on the network or the disk releases the GIL.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ferry/format/encoding.h"
#include "ferry/stream/streaming_dataset.h"
#include "files/file_stream_view.h"
#include "python/bindings.h"
#include "python/fork_safe.h"
#include "python/py_args.h"
#include "python/py_dataset.h"
#include "python/py_files.h"
#include "python/py_value.h"
#include "python/signal_aware_wait.h"
#include "python/status_exception.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// Mosaic's options that ferry accepts without using them. They are checked all the same, so that
// a typo, or a value that changes what a batch holds, is an error rather than silently ignored.
void CheckUnusedMosaicOptions(const py::dict& d, size_t streams) {
  const std::string batching = Get<std::string>(d, "batching_method", "random");
  if (batching == "per_stream" || batching == "stratified" || batching == "device_per_stream") {
    // Each of them decides which streams a batch draws from: with one stream every method
    // gives the batches "random" does.
    if (streams > 1) {
      ThrowStatus(UnimplementedError(fmt::format(
          "batching_method {} (which streams each batch draws from) is not implemented by ferry "
          "yet; with {} streams only random is (every batch drawn from the mix of all streams)",
          batching, streams)));
    }
  } else if (batching != "random") {
    ThrowStatus(InvalidArgumentError(fmt::format(
        "batching_method {} is not one of random, per_stream, stratified, device_per_stream",
        batching)));
  }
  // Either way ferry deals its own partition (docs/streaming.md).
  const std::string partition = Get<std::string>(d, "partition_algo", "relaxed");
  if (partition != "relaxed" && partition != "orig") {
    ThrowStatus(InvalidArgumentError(
        fmt::format("partition_algo {} is not one of relaxed, orig", partition)));
  }
  if (const int64_t granularity = Get<int64_t>(d, "sampling_granularity", 1); granularity < 1) {
    ThrowStatus(InvalidArgumentError(
        fmt::format("sampling_granularity must be at least 1, got {}", granularity)));
  }
}

StreamingOptions ParseOptions(const py::dict& d) {
  StreamingOptions o;
  for (py::handle item : d["streams"]) {
    const auto s = py::reinterpret_borrow<py::dict>(item);
    o.streams.push_back({.remote = Get<std::string>(s, "remote", ""),
                         .local = Get<std::string>(s, "local", ""),
                         .split = Get<std::string>(s, "split", ""),
                         .proportion = GetOptional<double>(s, "proportion"),
                         .repeat = GetOptional<double>(s, "repeat"),
                         .choose = GetOptional<uint64_t>(s, "choose")});
  }
  o.order.shuffle = Get<bool>(d, "shuffle", false);
  o.order.algo = Unwrap(ParseShuffleAlgo(Get<std::string>(d, "shuffle_algo", "py1e")));
  o.order.seed = Get<uint64_t>(d, "shuffle_seed", o.order.seed);
  o.order.shuffle_block_size = Get<uint64_t>(d, "shuffle_block_size", o.order.shuffle_block_size);
  o.order.num_canonical_nodes = Get<uint32_t>(d, "num_canonical_nodes", 0);
  o.order.batch_size = Get<uint32_t>(d, "batch_size", 1);
  o.order.drop_last = Get<bool>(d, "drop_last", false);
  o.epoch_size = GetOptional<uint64_t>(d, "epoch_size");
  const std::string sampling = Get<std::string>(d, "sampling_method", "balanced");
  if (sampling == "balanced") {
    o.sampling_method = SamplingMethod::kBalanced;
  } else if (sampling == "fixed") {
    o.sampling_method = SamplingMethod::kFixed;
  } else {
    ThrowStatus(InvalidArgumentError(
        fmt::format("sampling_method {} is not one of balanced, fixed", sampling)));
  }
  o.predownload = GetOptional<uint64_t>(d, "predownload");
  o.download_concurrency = GetOptional<uint32_t>(d, "download_concurrency");
  o.max_bytes_in_flight = Get<uint64_t>(d, "max_bytes_in_flight", o.max_bytes_in_flight);
  o.download_parts = GetOptional<uint32_t>(d, "download_parts");
  o.node_download_concurrency = GetOptional<uint32_t>(d, "node_download_concurrency");
  o.cache_limit = GetOptional<uint64_t>(d, "cache_limit");
  o.strict_cache_limit = Get<bool>(d, "strict_cache_limit", false);
  o.offline = Get<bool>(d, "offline", false);
  o.keep_zip = Get<bool>(d, "keep_zip", false);
  o.validate_hash = GetOptional<std::string>(d, "validate_hash");
  o.allow_unsafe_types = Get<bool>(d, "allow_unsafe_types", false);
  CheckUnusedMosaicOptions(d, o.streams.size());
  return o;
}

bool IsBytesKind(EncodingKind kind) {
  return kind == EncodingKind::kBytes || kind == EncodingKind::kJpeg ||
         kind == EncodingKind::kPng || kind == EncodingKind::kPkl;
}

// Decodes what needs no Python (without the GIL); byte-like columns stay views for one copy
// straight into Python bytes.
struct DecodedSample {
  Sample sample;
  std::vector<std::optional<Value>> values;  // nullopt: a byte-like column, taken from the view
};

Result<DecodedSample> Decode(Sample sample) {
  DecodedSample out{.sample = std::move(sample), .values = {}};
  const ShardConfig& config = *out.sample.config;
  out.values.resize(config.column_encodings.size());
  for (size_t c = 0; c < config.column_encodings.size(); ++c) {
    const ColumnEncoding& encoding = config.column_encodings[c];
    if (IsBytesKind(encoding.kind())) continue;
    auto value = DecodeValue(encoding, out.sample.fields[c]);
    if (!value) {
      return value.status().WithContext(
          fmt::format("sample {}, column {}", out.sample.id, config.column_names[c]));
    }
    out.values[c] = std::move(*value);
  }
  return out;
}

py::tuple ToPython(const DecodedSample& d) {
  py::list values;
  for (size_t c = 0; c < d.values.size(); ++c) {
    if (d.values[c]) {
      values.append(FromValue(*d.values[c]));
    } else {
      const std::string_view field = d.sample.fields[c];
      values.append(py::bytes(field.data(), field.size()));
    }
  }
  return py::make_tuple(d.sample.id, d.sample.stream, std::move(values));
}

class PyIterator {
 public:
  explicit PyIterator(std::unique_ptr<SampleIterator> it) : it_(std::move(it)) {}
  PyIterator(PyIterator&&) = default;

  py::tuple Next() {
    if (!it_.get()) throw py::stop_iteration();
    Result<std::optional<DecodedSample>> next = InternalError("no sample");
    {
      py::gil_scoped_release release;
      // A download can take minutes on a slow link.
      AwaitLettingSignalsIn([&](auto timeout) { return it_.get()->AwaitNext(timeout); });
      next = [&]() -> Result<std::optional<DecodedSample>> {
        FERRY_ASSIGN_OR_RETURN(std::optional<Sample> sample, it_.get()->Next());
        if (!sample) return std::optional<DecodedSample>();
        FERRY_ASSIGN_OR_RETURN(DecodedSample decoded, Decode(std::move(*sample)));
        return std::optional<DecodedSample>(std::move(decoded));
      }();
    }
    auto sample = Unwrap(std::move(next));
    if (!sample) throw py::stop_iteration();
    return ToPython(*sample);
  }

  uint64_t remaining() const { return it_.get() ? it_.get()->remaining() : 0; }

  // Stops the prefetch threads now rather than when Python collects the object.
  void Close() {
    py::gil_scoped_release release;
    it_.reset();
  }

 private:
  ForkSafe<std::unique_ptr<SampleIterator>> it_;
};

}  // namespace

void RegisterDataset(py::module_& m) {
  py::class_<PyDataset>(m, "Dataset")
      .def(py::init([](const py::dict& options) {
             Result<std::shared_ptr<StreamingDataset>> ds = InternalError("not opened");
             if (options.contains("files")) {
               // A FileDataset seen as a stream, for ferry.DataLoader.
               FileDatasetOptions parsed =
                   ParseFileDatasetOptions(options["files"].cast<py::dict>());
               const uint32_t batch_size = Get<uint32_t>(options, "batch_size", 1);
               py::gil_scoped_release release;
               ds = [&]() -> Result<std::shared_ptr<StreamingDataset>> {
                 FERRY_ASSIGN_OR_RETURN(std::shared_ptr<FileDataset> files,
                                        FileDataset::Open(std::move(parsed)));
                 return ViewAsStream(std::move(files), batch_size);
               }();
             } else {
               StreamingOptions parsed = ParseOptions(options);
               py::gil_scoped_release release;
               ds = StreamingDataset::Open(std::move(parsed));
             }
             return PyDataset{ForkSafe<std::shared_ptr<StreamingDataset>>(Unwrap(std::move(ds)))};
           }),
           py::arg("options"))
      .def_property_readonly("num_samples",
                             [](const PyDataset& self) { return self.get().num_samples(); })
      .def_property_readonly("epoch_samples",
                             [](const PyDataset& self) { return self.get().epoch_samples(); })
      .def_property_readonly("columns",
                             [](const PyDataset& self) {
                               const StreamingDataset& ds = self.get();
                               std::vector<std::pair<std::string, std::string>> out;
                               for (const Index& index : ds.indexes()) {
                                 for (const ShardEntry& shard : index.shards) {
                                   const ShardConfig& c = *shard.config;
                                   for (size_t i = 0; i < c.column_names.size(); ++i) {
                                     out.emplace_back(c.column_names[i],
                                                      c.column_encodings[i].text());
                                   }
                                   return out;
                                 }
                               }
                               return out;
                             })
      .def(
          "plan",
          [](PyDataset& self, const Triple& world, uint64_t epoch, uint64_t resume_from) {
            StreamingDataset& ds = self.get();
            Result<std::shared_ptr<const EpochPlan>> plan = InternalError("no plan");
            {
              py::gil_scoped_release release;
              plan = ds.Plan(World(world), epoch, resume_from);
            }
            auto p = Unwrap(std::move(plan));
            return py::dict(py::arg("epoch_samples") = p->epoch_samples(),
                            py::arg("samples_per_worker") = p->samples_per_worker(),
                            py::arg("num_canonical_nodes") = p->num_canonical_nodes());
          },
          py::arg("world"), py::arg("epoch"), py::arg("resume_from") = 0)
      .def(
          "get",
          [](PyDataset& self, uint64_t id) {
            StreamingDataset& ds = self.get();
            auto get = [&ds, id](std::stop_token stop) -> Result<DecodedSample> {
              FERRY_ASSIGN_OR_RETURN(Sample sample, ds.Get(id, stop));
              return Decode(std::move(sample));
            };
            Result<DecodedSample> got = InternalError("no sample");
            {
              py::gil_scoped_release release;
              // A sample of a local shard is read here and now: a stop already requested starts
              // no download.
              std::stop_source local_only;
              local_only.request_stop();
              got = get(local_only.get_token());
              if (!got.ok() && got.status().code() == StatusCode::kCancelled) {
                // The download runs on another thread, while this one lets Ctrl+C in.
                std::stop_source stop;
                auto fetched = std::async(std::launch::async, get, stop.get_token());
                try {
                  AwaitLettingSignalsIn([&](auto timeout) {
                    return fetched.wait_for(timeout) == std::future_status::ready;
                  });
                } catch (...) {
                  stop.request_stop();
                  fetched.wait();
                  throw;
                }
                got = fetched.get();
              }
            }
            return ToPython(Unwrap(std::move(got)));
          },
          py::arg("id"))
      .def(
          "iterate",
          [](PyDataset& self, const Triple& world, const Triple& worker, uint64_t epoch,
             uint64_t resume_from, uint64_t skip) {
            StreamingDataset& ds = self.get();
            Result<std::unique_ptr<SampleIterator>> it = InternalError("no iterator");
            {
              py::gil_scoped_release release;
              it = ds.Iterate({.world = World(world),
                               .worker = Worker(worker),
                               .epoch = epoch,
                               .resume_from = resume_from,
                               .skip = skip});
            }
            return PyIterator(Unwrap(std::move(it)));
          },
          py::arg("world"), py::arg("worker"), py::arg("epoch"), py::arg("resume_from") = 0,
          py::arg("skip") = 0);

  py::class_<PyIterator>(m, "SampleIterator")
      .def("__iter__", [](PyIterator& self) -> PyIterator& { return self; })
      .def("__next__", &PyIterator::Next)
      .def_property_readonly("remaining", &PyIterator::remaining)
      .def("close", &PyIterator::Close);
}

}  // namespace ferry::python
