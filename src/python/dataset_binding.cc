// ferry._ferry.Dataset and SampleIterator: the streaming engine for Python. Options come as one
// dict built by python/ferry/dataset.py (or, with a "files" entry, python/ferry/files.py's, for
// a folder of files seen as a stream); samples come back as (id, stream, [raw values]) that
// python/ferry/_values.py finishes (PIL images, numpy scalars, Decimal, parsed JSON). Every call
// that may wait on the network or the disk releases the GIL.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ferry/format/encoding.h"
#include "ferry/format/shard_reader.h"
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
#include "stream/stream_mix.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// Mosaic's options that ferry accepts without using them. They are checked all the same, so that
// a typo is an error rather than silently ignored.
void CheckUnusedMosaicOptions(const py::dict& d) {
  // ferry deals its own partition (docs/streaming.md).
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
    std::map<std::string, EgressOptions> egress;
    if (s.contains("egress") && !s["egress"].is_none()) {
      for (const auto& [url, given] : s["egress"].cast<py::dict>()) {
        const auto e = py::reinterpret_borrow<py::dict>(given);
        egress[url.cast<std::string>()] = {
            .label = Get<std::string>(e, "label", ""),
            .usd_per_gb = Get<double>(e, "usd_per_gb", 0),
            .budget = GetOptional<uint64_t>(e, "budget"),
            .epoch_budget = GetOptional<uint64_t>(e, "epoch_budget")};
      }
    }
    o.streams.push_back({.remote = Get<std::string>(s, "remote", ""),
                         .mirrors = Get<std::vector<std::string>>(s, "mirrors", {}),
                         .egress = std::move(egress),
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
  o.order.batching = Unwrap(ParseBatchingMethod(Get<std::string>(d, "batching_method", "random")));
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
  o.download_on_access = Get<bool>(d, "download_on_access", false);
  o.digest_records = Get<bool>(d, "digest_records", true);
  o.store_checksums = Get<bool>(d, "store_checksums", true);
  if (d.contains("peers") && !d["peers"].is_none()) {
    const py::dict peers = d["peers"].cast<py::dict>();
    o.peers.addresses = Get<std::vector<std::string>>(peers, "addresses", {});
    o.peers.self = Get<std::string>(peers, "self", "");
    o.peers.token = Get<std::string>(peers, "token", "");
    o.peers.listen_host = Get<std::string>(peers, "listen_host", "");
  }
  CheckUnusedMosaicOptions(d);
  return o;
}

// A stream's (proportion, repeat, choose) as given, each None when not.
using StreamWeightArgs =
    std::tuple<std::optional<double>, std::optional<double>, std::optional<uint64_t>>;

py::list WeightsToPython(const std::vector<StreamWeight>& weights) {
  py::list out;
  for (const StreamWeight& w : weights)
    out.append(py::make_tuple(w.proportion, w.repeat, w.choose));
  return out;
}

// One shard as python/ferry/shards.py's ShardInfo reads it.
py::dict ShardToPython(size_t stream, const ShardDescription& shard) {
  auto file = [](const FileInfo& f) {
    py::dict hashes;
    for (const auto& [algorithm, digest] : f.hashes) hashes[py::str(algorithm)] = digest;
    return py::make_tuple(f.basename, f.bytes, hashes);
  };
  const ShardConfig& c = *shard.config;
  // Mosaic's JSON/CSV/TSV columns by the names their index gives them ("int").
  std::vector<std::string> encodings = c.split_encodings;
  if (encodings.empty()) {
    for (const ColumnEncoding& e : c.column_encodings) encodings.push_back(e.text());
  }
  py::list companions;
  for (const CompanionFile& f : shard.companions) {
    companions.append(
        py::make_tuple(file(f.raw), f.zip ? py::object(file(*f.zip)) : py::object(py::none())));
  }
  return py::dict(py::arg("stream") = stream, py::arg("format") = shard.format,
                  py::arg("samples") = shard.samples, py::arg("companions") = companions,
                  py::arg("raw_data") = file(shard.raw_data),
                  py::arg("zip_data") =
                      shard.zip_data ? py::object(file(*shard.zip_data)) : py::object(py::none()),
                  py::arg("compression") = c.compression, py::arg("hashes") = c.hashes,
                  py::arg("size_limit") = c.size_limit, py::arg("column_names") = c.column_names,
                  py::arg("column_encodings") = encodings,
                  py::arg("column_sizes") = c.column_sizes);
}

// Runs `call` (a download, say) on another thread while this one, without the GIL, lets Python's
// signal handlers run: Ctrl+C stops the call (its stop token) and raises here.
Status WaitLettingSignalsIn(const std::function<Status(std::stop_token)>& call) {
  py::gil_scoped_release release;
  std::stop_source stop;
  auto done = std::async(std::launch::async, call, stop.get_token());
  try {
    AwaitLettingSignalsIn(
        [&](auto timeout) { return done.wait_for(timeout) == std::future_status::ready; });
  } catch (...) {
    stop.request_stop();
    done.wait();
    throw;
  }
  return done.get();
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

// The columns the dataset declares (its `columns`): those of its first shard.
const ShardConfig* DeclaredColumns(const StreamingDataset& ds) {
  for (const auto& index : ds.indexes()) {
    if (!index->shards.empty()) return index->shards.front().config.get();
  }
  return nullptr;
}

// How a DataLoader worker hands byte-like fields to the main process: as instances of `type` (a
// bytes subclass whose pickling, in multiprocessing's pickler, names the field's place in its
// cache file instead of carrying its bytes; python/ferry/_handoff.py), each with `_at` = (path,
// inode, offset, sample id, column, token). Only fields read from a shard file as stored.
struct Handoff {
  py::object type;
  py::object token;
};

py::object HandoffBytes(const Handoff& handoff, const Sample& sample, size_t column) {
  const std::string_view field = sample.fields[column];
  const MappedShardFile& file = *sample.file;
  py::object out = handoff.type(
      py::memoryview::from_memory(field.data(), static_cast<py::ssize_t>(field.size())));
  out.attr("_at") = py::make_tuple(py::bytes(file.path.native()), file.inode,
                                   static_cast<uint64_t>(field.data() - file.bytes.data()),
                                   sample.id, column, handoff.token);
  return out;
}

bool InFile(const Sample& sample, std::string_view field) {
  if (sample.file == nullptr || field.empty()) return false;
  const std::string_view bytes = sample.file->bytes;
  return field.data() >= bytes.data() && field.data() + field.size() <= bytes.data() + bytes.size();
}

// (id, stream, values): the values as a list in the order of the declared columns, or - for a
// sample whose fields are its own (a WebDataset sample: its key and one field per extension) -
// as a dict of field name to value.
py::tuple ToPython(const DecodedSample& d, const ShardConfig* declared,
                   const Handoff* handoff = nullptr) {
  auto value = [&](size_t c) -> py::object {
    if (d.values[c]) return FromValue(*d.values[c]);
    const std::string_view field = d.sample.fields[c];
    if (handoff != nullptr && InFile(d.sample, field)) return HandoffBytes(*handoff, d.sample, c);
    return py::bytes(field.data(), field.size());
  };
  const ShardConfig& config = *d.sample.config;
  if (&config != declared &&
      (declared == nullptr || config.column_names != declared->column_names)) {
    py::dict fields;
    for (size_t c = 0; c < d.values.size(); ++c) fields[py::str(config.column_names[c])] = value(c);
    return py::make_tuple(d.sample.id, d.sample.stream, std::move(fields));
  }
  py::list values;
  for (size_t c = 0; c < d.values.size(); ++c) values.append(value(c));
  return py::make_tuple(d.sample.id, d.sample.stream, std::move(values));
}

class PyIterator {
 public:
  PyIterator(std::unique_ptr<SampleIterator> it, const ShardConfig* declared,
             std::optional<Handoff> handoff)
      : it_(std::move(it)), declared_(declared), handoff_(std::move(handoff)) {}
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
    return ToPython(*sample, declared_, handoff_ ? &*handoff_ : nullptr);
  }

  uint64_t remaining() const { return it_.get() ? it_.get()->remaining() : 0; }

  // Stops the prefetch threads now rather than when Python collects the object.
  void Close() {
    py::gil_scoped_release release;
    it_.reset();
  }

 private:
  ForkSafe<std::unique_ptr<SampleIterator>> it_;
  const ShardConfig* declared_;  // the dataset's, which the iterator keeps alive
  std::optional<Handoff> handoff_;
};

}  // namespace

void RegisterDataset(py::module_& m) {
  m.def(
      "resolve_stream_weights",
      [](const std::vector<uint64_t>& samples_per_stream,
         const std::vector<StreamWeightArgs>& given, std::optional<uint64_t> epoch_size,
         uint64_t seed) {
        std::vector<StreamSpec> specs;
        for (const auto& [proportion, repeat, choose] : given) {
          specs.push_back({.proportion = proportion, .repeat = repeat, .choose = choose});
        }
        internal_stream::ResolvedWeights resolved =
            Unwrap(internal_stream::ResolveWeights(samples_per_stream, specs, epoch_size, seed));
        return py::make_tuple(WeightsToPython(resolved.streams), resolved.epoch_size);
      },
      py::arg("samples_per_stream"), py::arg("weights"), py::arg("epoch_size"), py::arg("seed"));
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
      .def_property_readonly(
          "stream_weights",
          [](const PyDataset& self) { return WeightsToPython(self.get().stream_weights()); })
      .def_property_readonly("columns",
                             [](const PyDataset& self) {
                               const StreamingDataset& ds = self.get();
                               std::vector<std::pair<std::string, std::string>> out;
                               for (const auto& index : ds.indexes()) {
                                 for (const ShardDescription& shard : index->shards) {
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
            const WorldShape& w = p->world();
            py::list per_worker;  // of node 0, rank 0: every rank's workers read as many
            for (uint32_t k = 0; k < w.workers_per_rank; ++k) {
              per_worker.append(p->WorkerSamples({.node = 0, .rank = 0, .worker = k}));
            }
            return py::dict(py::arg("epoch_samples") = p->epoch_samples(),
                            py::arg("samples_per_rank") = p->samples_per_rank(),
                            py::arg("samples_per_worker") = per_worker,
                            py::arg("padding") = p->padding(),
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
            return ToPython(Unwrap(std::move(got)), DeclaredColumns(ds));
          },
          py::arg("id"))
      .def(
          "iterate",
          [](PyDataset& self, const Triple& world, const Triple& worker, uint64_t epoch,
             uint64_t resume_from, uint64_t skip, std::optional<py::tuple> handoff) {
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
            std::optional<Handoff> by_file;
            if (handoff) by_file = Handoff{(*handoff)[0], (*handoff)[1]};
            return PyIterator(Unwrap(std::move(it)), DeclaredColumns(ds), std::move(by_file));
          },
          py::arg("world"), py::arg("worker"), py::arg("epoch"), py::arg("resume_from") = 0,
          py::arg("skip") = 0, py::arg("handoff") = py::none())
      // The cache by hand (Mosaic's names, in python/ferry/dataset.py).
      .def_property_readonly("shards",
                             [](const PyDataset& self) {
                               py::list out;
                               const auto& indexes = self.get().indexes();
                               for (size_t s = 0; s < indexes.size(); ++s) {
                                 for (const ShardDescription& shard : indexes[s]->shards) {
                                   out.append(ShardToPython(s, shard));
                                 }
                               }
                               return out;
                             })
      .def_property_readonly("cache_usage",
                             [](const PyDataset& self) {
                               const StreamingDataset& ds = self.get();
                               py::gil_scoped_release release;  // stats every shard file
                               return ds.CacheUsage();
                             })
      .def(
          "prepare_shard",
          [](PyDataset& self, uint64_t shard, bool blocking) {
            StreamingDataset& ds = self.get();
            ThrowIfError(WaitLettingSignalsIn(
                [&](std::stop_token stop) { return ds.PrepareShard(shard, blocking, stop); }));
          },
          py::arg("shard"), py::arg("blocking") = true)
      .def(
          "evict_shard",
          [](PyDataset& self, uint64_t shard) {
            StreamingDataset& ds = self.get();
            Status status;
            {
              py::gil_scoped_release release;
              status = ds.EvictShard(shard);
            }
            ThrowIfError(status);
          },
          py::arg("shard"))
      .def("evict_coldest_shard", [](PyDataset& self) {
        StreamingDataset& ds = self.get();
        Result<size_t> evicted = InternalError("not evicted");
        {
          py::gil_scoped_release release;
          evicted = ds.EvictColdestShard();
        }
        return Unwrap(std::move(evicted));
      });

  py::class_<PyIterator>(m, "SampleIterator")
      .def("__iter__", [](PyIterator& self) -> PyIterator& { return self; })
      .def("__next__", &PyIterator::Next)
      .def_property_readonly("remaining", &PyIterator::remaining)
      .def("close", &PyIterator::Close);
}

}  // namespace ferry::python
