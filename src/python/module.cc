// ferry._ferry: the native half of the `ferry` Python package (python/ferry/). Nothing here
// starts a thread at import: threads belong to datasets and iterators, created after any fork.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <optional>
#include <string>

#include "base/human_size.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/encoding.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/metrics/prometheus.h"
#include "ferry/storage/registry.h"
#include "ferry/version.h"
#include "loader/batch_loader.h"
#include "python/bindings.h"
#include "python/fork_safe.h"
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
      "node_metrics",
      [](const std::string& local) {
        const metrics::NodeMetrics n = Unwrap([&] {
          py::gil_scoped_release release;
          return ReadCacheFolderMetrics(local);
        }());
        py::list processes;
        for (const metrics::ProcessMetrics& p : n.processes) {
          py::dict d;
          d["pid"] = p.pid;
          d["label"] = p.label;
          d["started_unix_ms"] = p.started_unix_ms;
          d["updated_unix_ms"] = p.updated_unix_ms;
          d["values"] = p.values;
          processes.append(std::move(d));
        }
        py::dict out;
        out["values"] = n.values;
        out["processes"] = std::move(processes);
        out["exited"] = n.exited;
        return out;
      },
      py::arg("local"),
      "The counters and gauges of every process reading the cache folder `local`: {'values': "
      "summed, 'processes': [{'pid', 'label', 'started_unix_ms', 'updated_unix_ms', 'values'}], "
      "'exited': what exited processes counted}.");
  struct PyMetricsServer {
    python::ForkSafe<std::unique_ptr<metrics::MetricsServer>> server;
  };
  py::class_<PyMetricsServer>(m, "MetricsServer")
      .def_property_readonly("port",
                             [](const PyMetricsServer& s) -> int {
                               return s.server.get() ? s.server.get()->port() : 0;
                             })
      .def(
          "close",
          [](PyMetricsServer& s) {
            py::gil_scoped_release release;
            s.server.reset();
          },
          "Stops answering and frees the port.");
  m.def(
      "serve_metrics",
      [](int port, std::optional<std::string> local, const std::string& host) {
        if (port < 0 || port > 65535) {
          ThrowIfError(InvalidArgumentError(fmt::format("port must be 0 to 65535, not {}", port)));
        }
        std::vector<std::string> folders;
        if (local) folders.push_back(*local);
        std::function<std::string()> text = [folders = std::move(folders)] {
          return CacheFoldersPrometheusText(folders);
        };
        auto server = [&] {
          py::gil_scoped_release release;
          return metrics::MetricsServer::Start(std::move(text), static_cast<uint16_t>(port), host);
        }();
        return PyMetricsServer{
            python::ForkSafe<std::unique_ptr<metrics::MetricsServer>>(Unwrap(std::move(server)))};
      },
      py::arg("port"), py::arg("local") = py::none(), py::arg("host") = "127.0.0.1",
      "A Prometheus endpoint at http://host:port/metrics (see ferry.serve_metrics).");
  m.def(
      "flush_metrics",
      [] {
        py::gil_scoped_release release;
        metrics::FlushNodeMetrics();
      },
      "Writes this process's counters into the cache folders it publishes to, now.");
  m.def(
      "set_process_label", [](std::string label) { metrics::SetProcessLabel(std::move(label)); },
      py::arg("label"), "Who this process is, as `ferry top` shows it (e.g. 'worker 1/2').");
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
