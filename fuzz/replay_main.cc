// Runs a fuzz target without libFuzzer, in the sanitized dev build that `make test` already
// compiles: every seed once as it is, then a fixed number of variants of each, made by a
// generator with a fixed seed, so that a run is the same on every machine and a failure
// reproduces from its seed's bytes and the variant number alone. It is regression testing with a
// little mutation, not coverage-guided fuzzing: `make fuzz` (clang, libFuzzer) is that.
//
//   ferry_<target>_replay [--variants=N] [--seconds=S] [--artifacts=DIR] [--only=K] PATH...
//
// PATH is a seed file or a folder of them. --seconds bounds the variants of each target (every
// seed still runs once). On a sanitizer report the input that caused it is written to
// DIR/<seed>-<variant> (or <seed>-seed) before the process dies; --only=K runs only variant K of
// each seed.
#include <sanitizer/common_interface_defs.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Kept a little above the seeds (run-fuzzers.sh takes files under 200 KiB) and equal to the
// -max_len libFuzzer runs with.
constexpr size_t kMaxLen = 262144;

struct Current {
  std::string seed_name;
  int variant = -1;  // -1: the seed as it is
  const std::string* input = nullptr;
  fs::path artifacts;
};
Current current;

// The input that made a sanitizer abort, saved where the next run can take it as a seed.
void SaveCurrentInput() {
  if (current.input == nullptr) return;
  const std::string which =
      current.variant < 0 ? "as it is" : "variant " + std::to_string(current.variant);
  std::fprintf(stderr, "replay: failed on seed %s, %s\n", current.seed_name.c_str(), which.c_str());
  if (current.artifacts.empty()) return;
  std::error_code ec;
  fs::create_directories(current.artifacts, ec);
  const fs::path out =
      current.artifacts /
      (current.seed_name + "-" +
       (current.variant < 0 ? std::string("seed") : std::to_string(current.variant)));
  std::ofstream file(out, std::ios::binary);
  file.write(current.input->data(), static_cast<std::streamsize>(current.input->size()));
  std::fprintf(stderr, "replay: input written to %s\n", out.c_str());
}

// splitmix64: tiny, fast and the same everywhere, which is all a reproducible variant needs.
class Generator {
 public:
  explicit Generator(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Values at the edges of the integer ranges that length and offset fields are checked against.
constexpr std::array<uint32_t, 8> kEdges = {0,    1,          0x7f,       0x80,
                                            0xff, 0x7fffffff, 0x80000000, 0xffffffff};

// One to four edits of the kinds that reach length checks: bit flips, edge values in 1 or 4
// bytes, cuts, removed, inserted and repeated runs.
std::string Variant(const std::string& seed, Generator& gen) {
  std::string s = seed;
  const int edits = 1 + static_cast<int>(gen.Below(4));
  for (int e = 0; e < edits; ++e) {
    const size_t at = gen.Below(s.size() + 1);
    switch (gen.Below(8)) {
      case 0:
        if (!s.empty()) s[gen.Below(s.size())] ^= static_cast<char>(1u << gen.Below(8));
        break;
      case 1:
        if (!s.empty()) s[gen.Below(s.size())] = static_cast<char>(gen.Next());
        break;
      case 2:
        if (!s.empty()) s[gen.Below(s.size())] = static_cast<char>(kEdges[gen.Below(5)]);
        break;
      case 3:
        if (s.size() >= 4) {
          const uint32_t v = kEdges[gen.Below(kEdges.size())];
          const size_t p = gen.Below(s.size() - 3);
          for (int i = 0; i < 4; ++i) s[p + i] = static_cast<char>(v >> (8 * i));
        }
        break;
      case 4:
        s.resize(gen.Below(s.size() + 1));
        break;
      case 5:
        s.erase(std::min(at, s.size()), 1 + gen.Below(16));
        break;
      case 6: {
        std::string bytes(1 + gen.Below(16), '\0');
        for (char& c : bytes) c = static_cast<char>(gen.Next());
        s.insert(std::min(at, s.size()), bytes);
        break;
      }
      default:
        if (!s.empty()) {
          const size_t from = gen.Below(s.size());
          const std::string run = s.substr(from, 1 + gen.Below(64));
          s.insert(std::min(at, s.size()), run);
        }
        break;
    }
  }
  if (s.size() > kMaxLen) s.resize(kMaxLen);
  return s;
}

void Run(const std::string& input) {
  current.input = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  current.input = nullptr;
}

std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(file), {});
}

std::optional<long> Flag(std::string_view arg, std::string_view name) {
  if (!arg.starts_with(name)) return std::nullopt;
  return std::strtol(std::string(arg.substr(name.size())).c_str(), nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
  long variants = 0;
  long seconds = 0;
  std::optional<long> only;
  std::vector<fs::path> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (auto v = Flag(arg, "--variants=")) {
      variants = *v;
    } else if (auto s = Flag(arg, "--seconds=")) {
      seconds = *s;
    } else if (auto k = Flag(arg, "--only=")) {
      only = *k;
    } else if (arg.starts_with("--artifacts=")) {
      current.artifacts = std::string(arg.substr(12));
    } else if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator(arg)) {
        if (entry.is_regular_file()) seeds.push_back(entry.path());
      }
    } else if (fs::is_regular_file(arg)) {
      seeds.emplace_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s is neither a flag nor a seed file or folder\n", argv[i]);
      return 2;
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "replay: no seeds (pass seed files or folders)\n");
    return 2;
  }
  std::sort(seeds.begin(), seeds.end());
  __sanitizer_set_death_callback(SaveCurrentInput);

  std::vector<std::string> inputs;
  for (const auto& path : seeds) {
    auto bytes = ReadFile(path);
    if (!bytes) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 2;
    }
    inputs.push_back(bytes->size() > kMaxLen ? bytes->substr(0, kMaxLen) : std::move(*bytes));
  }

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(seconds);
  size_t runs = 0;
  if (!only) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      current.seed_name = seeds[i].filename().string();
      current.variant = -1;
      Run(inputs[i]);
      ++runs;
    }
  }
  // Variant k of every seed before variant k+1 of any, so that a time bound cuts all seeds
  // short evenly instead of leaving the last ones untried.
  std::vector<Generator> gens;
  // Seeded by content, not by name, so that a variant is the same wherever the seed file lives.
  for (const auto& input : inputs) gens.emplace_back(Fnv1a(input));
  bool out_of_time = false;
  for (long k = 0; k < variants && !out_of_time; ++k) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string input = Variant(inputs[i], gens[i]);
      if (only && k != *only) continue;
      current.seed_name = seeds[i].filename().string();
      current.variant = static_cast<int>(k);
      Run(input);
      ++runs;
      if (seconds > 0 && std::chrono::steady_clock::now() >= deadline) {
        out_of_time = true;
        break;
      }
    }
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("replay: %zu seeds, %zu inputs in %.1f s%s\n", inputs.size(), runs, took,
              out_of_time ? " (time bound reached)" : "");
  return 0;
}
