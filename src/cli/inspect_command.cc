// ferry inspect DATASET [--json]: what a dataset holds, from its index alone (no shard is read;
// one listing tells which shard files are there), in a local folder or any store:
// shards, samples, columns with encodings, raw and compressed bytes, compression, hashes and
// size_limit. Datasets merged from parts with different settings list each distinct config.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "base/human_size.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "cli/dataset_url.h"
#include "ferry/format/index.h"

namespace ferry::cli {
namespace {

struct InspectOptions {
  std::string dataset;
  std::string split;
  bool json = false;
  bool shards = false;
};

struct ConfigSummary {
  const ShardConfig* config;
  std::string format;  // of its shards: "mds", "webdataset", "json", ...
  size_t shards = 0;
  uint64_t samples = 0;
};

// A column's encoding as the dataset's index names it: Mosaic's JSON/CSV/TSV say "int" where
// ferry decodes the text as str_int.
const std::string& EncodingName(const ShardConfig& c, size_t i) {
  return c.split_encodings.empty() ? c.column_encodings[i].text() : c.split_encodings[i];
}

nlohmann::ordered_json ConfigJson(const ConfigSummary& s) {
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  for (size_t c = 0; c < s.config->column_names.size(); ++c) {
    const auto& size = s.config->column_sizes[c];
    columns.push_back({{"name", s.config->column_names[c]},
                       {"encoding", EncodingName(*s.config, c)},
                       {"size", size ? nlohmann::ordered_json(*size) : nlohmann::ordered_json()}});
  }
  return {{"format", s.format},
          {"shards", s.shards},
          {"samples", s.samples},
          {"columns", std::move(columns)},
          {"compression", s.config->compression ? nlohmann::ordered_json(*s.config->compression)
                                                : nlohmann::ordered_json()},
          {"hashes", s.config->hashes},
          {"size_limit", s.config->size_limit ? nlohmann::ordered_json(*s.config->size_limit)
                                              : nlohmann::ordered_json()}};
}

Result<int> RunInspect(const InspectOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const DatasetUrl dataset, DatasetUrl::Open(o.dataset, o.split));
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription index, dataset.ReadIndex());
  std::vector<std::string> files;
  for (const auto& s : index.shards) {
    for (std::string& name : ShardFiles(s)) files.push_back(std::move(name));
  }
  FERRY_ASSIGN_OR_RETURN(const std::set<std::string> present, dataset.Present(files));

  std::vector<ConfigSummary> configs;
  uint64_t raw_bytes = 0, zip_bytes = 0;
  size_t empty = 0, missing = 0;
  for (const auto& s : index.shards) {
    auto it = std::find_if(configs.begin(), configs.end(), [&](const ConfigSummary& c) {
      return c.config == s.config.get() || *c.config == *s.config;
    });
    if (it == configs.end()) it = configs.insert(configs.end(), {s.config.get(), s.format, 0, 0});
    ++it->shards;
    it->samples += s.samples;
    raw_bytes += s.raw_bytes();  // a .meta beside the data counts too
    if (s.zip_data) zip_bytes += s.stored_bytes();
    if (s.samples == 0) ++empty;
    const auto shard_files = ShardFiles(s);
    if (std::none_of(shard_files.begin(), shard_files.end(),
                     [&](const std::string& f) { return present.contains(f); })) {
      ++missing;
    }
  }
  std::optional<std::vector<std::string>> classes;
  auto classes_text = dataset.store().Get(dataset.prefix() + "classes.json");
  if (!classes_text && classes_text.error().code() != StatusCode::kNotFound) {
    return classes_text.status();
  }
  if (classes_text) {
    try {
      classes = nlohmann::json::parse(*classes_text).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception&) {
      // Not ours; ignore rather than fail an inspection.
    }
  }

  if (o.json) {
    nlohmann::ordered_json out;
    out["dataset"] = dataset.name();
    out["shards"] = index.shards.size();
    out["empty_shards"] = empty;
    out["missing_shards"] = missing;
    out["samples"] = index.num_samples();
    out["raw_bytes"] = raw_bytes;
    out["zip_bytes"] = zip_bytes;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& c : configs) list.push_back(ConfigJson(c));
    out["configs"] = std::move(list);
    if (classes) out["classes"] = *classes;
    if (o.shards) {
      nlohmann::ordered_json shards = nlohmann::ordered_json::array();
      for (const auto& s : index.shards) {
        shards.push_back({{"raw", s.raw_data.basename},
                          {"zip", s.zip_data ? nlohmann::ordered_json(s.zip_data->basename)
                                             : nlohmann::ordered_json()},
                          {"samples", s.samples},
                          {"raw_bytes", s.raw_data.bytes},
                          {"zip_bytes", s.zip_data ? nlohmann::ordered_json(s.zip_data->bytes)
                                                   : nlohmann::ordered_json()}});
      }
      out["shard_list"] = std::move(shards);
    }
    std::printf("%s\n", DumpPythonJson(out, JsonKeyOrder::kInsertion).c_str());
    return 0;
  }

  std::string r;
  r += fmt::format("dataset      {}\n", dataset.name());
  r += fmt::format("shards       {}{}{}\n", index.shards.size(),
                   empty ? fmt::format(" ({} empty)", empty) : "",
                   missing ? fmt::format(" ({} with no file here)", missing) : "");
  r += fmt::format("samples      {}\n", index.num_samples());
  r += fmt::format("raw bytes    {} ({})\n", raw_bytes, FormatBytes(raw_bytes));
  if (zip_bytes > 0) {
    r += fmt::format("compressed   {} ({}, raw/compressed {:.2f})\n", zip_bytes,
                     FormatBytes(zip_bytes),
                     static_cast<double>(raw_bytes) / static_cast<double>(zip_bytes));
  }
  if (classes) r += fmt::format("classes      {} (classes.json)\n", classes->size());
  for (size_t k = 0; k < configs.size(); ++k) {
    const ShardConfig& c = *configs[k].config;
    if (configs.size() > 1) {
      r += fmt::format("\nconfig {} of {}: {} shards, {} samples\n", k + 1, configs.size(),
                       configs[k].shards, configs[k].samples);
    }
    r += fmt::format("format       {}\n", configs[k].format);
    if (c.column_names.empty() && configs[k].format == "webdataset") {
      r += "columns      each sample's own: __key__, and one per member extension\n";
      continue;
    }
    r += fmt::format("compression  {}\n", c.compression.value_or("none"));
    r += fmt::format("hashes       {}\n",
                     c.hashes.empty() ? "none" : fmt::format("{}", fmt::join(c.hashes, ", ")));
    r += fmt::format("size_limit   {}\n", c.size_limit ? fmt::format("{} ({})", *c.size_limit,
                                                                     FormatBytes(*c.size_limit))
                                                       : std::string("none (one shard)"));
    r += fmt::format("columns      {}\n", c.column_names.size());
    size_t width = 4;
    for (const auto& n : c.column_names) width = std::max(width, n.size());
    for (size_t i = 0; i < c.column_names.size(); ++i) {
      r +=
          fmt::format("  {:<{}}  {:<24} {}\n", c.column_names[i], width, EncodingName(c, i),
                      c.column_sizes[i] ? fmt::format("{} bytes", *c.column_sizes[i]) : "variable");
    }
  }
  if (o.shards) {
    r += "\n  #  samples  raw bytes  zip bytes  file\n";
    for (size_t k = 0; k < index.shards.size(); ++k) {
      const auto& s = index.shards[k];
      r += fmt::format("{:3}  {:7}  {:9}  {:>9}  {}\n", k, s.samples, s.raw_data.bytes,
                       s.zip_data ? std::to_string(s.zip_data->bytes) : "-",
                       s.zip_data ? s.zip_data->basename : s.raw_data.basename);
    }
  }
  std::fputs(r.c_str(), stdout);
  return 0;
}

}  // namespace

Command AddInspectCommand(CLI::App& parent) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* app = parent.add_subcommand(
      "inspect", "Show shards, samples, columns, sizes, compression and hashes of a dataset");
  app->add_option("dataset", o->dataset,
                  "Dataset folder (index.json, or WebDataset tars) or tar shard pattern "
                  "(train-{000000..000127}.tar): a path or a URL (s3://, az://, gs://, ...)")
      ->required();
  app->add_option("--split", o->split, "Sub-folder of the dataset to inspect");
  app->add_flag("--json", o->json, "Print one JSON object instead of text");
  app->add_flag("--shards", o->shards, "Also list every shard");
  return {app, [o] { return RunInspect(*o); }};
}

}  // namespace ferry::cli
