// ferry-consumer DATASET: opens a local dataset through an installed libferry and prints what it
// holds and its first sample's columns, as a C++ user of the engine would (docs/install.md).
#include <cstdio>
#include <variant>

#include "ferry/format/local_dataset.h"
#include "ferry/version.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ferry-consumer DATASET\n");
    return 2;
  }
  auto dataset = ferry::LocalDataset::Open(argv[1]);
  if (!dataset.ok()) {
    std::fprintf(stderr, "ferry-consumer: %s\n", dataset.status().ToString().c_str());
    return 1;
  }
  const ferry::LocalDataset& d = **dataset;
  std::printf("ferry %.*s: %s: %zu shards, %llu samples\n",
              static_cast<int>(ferry::Version().size()), ferry::Version().data(), argv[1],
              d.index().shards.size(), static_cast<unsigned long long>(d.num_samples()));
  auto first = d.Get(0);
  if (!first.ok()) {
    std::fprintf(stderr, "ferry-consumer: sample 0: %s\n", first.status().ToString().c_str());
    return 1;
  }
  const auto& names = d.index().shards.front().config->column_names;
  for (size_t c = 0; c < names.size(); ++c) {
    const ferry::Value& v = (*first)[c];
    if (const auto* i = std::get_if<int64_t>(&v)) {
      std::printf("  %s = %lld\n", names[c].c_str(), static_cast<long long>(*i));
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      std::printf("  %s = '%s'\n", names[c].c_str(), s->c_str());
    }
  }
  return 0;
}
