// End-to-end tests of the `ferry` command: it is run as a separate process on folders made by
// the test, and its exit codes, output and datasets are checked.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/local_dataset.h"
#include "format/hash.h"
#include "image/jpeg_codec.h"
#include "image/png_codec.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs `ferry <args>` (args are shell words; the test only passes its own temp paths).
CliRun Ferry(const std::string& args, const testing::TempDir& tmp) {
  const auto out = tmp / ".stdout", err = tmp / ".stderr";
  const std::string command =
      std::string(FERRY_CLI_PATH) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(command.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFileToString(out).value_or("");
  r.err = ReadFileToString(err).value_or("");
  return r;
}

std::string Jpeg(uint32_t seed, uint32_t width = 24, uint32_t height = 16) {
  PilImage image{width, height, "RGB", std::string(width * height * 3, '\0')};
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<char>((i * 7 + seed * 31) % 251);
  }
  return EncodeJpeg(image, 90).value();
}

void Put(const std::filesystem::path& path, const std::string& data) {
  std::filesystem::create_directories(path.parent_path());
  ASSERT_TRUE(WriteFileAtomically(path, data).ok());
}

// An ImageFolder: 2 classes, a nested folder, a hidden file and a stray top-level file.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = tmp_ / "images";
    Put(src_ / "dog" / "b.jpg", Jpeg(1));
    Put(src_ / "dog" / "a.jpg", Jpeg(2));
    Put(src_ / "cat" / "z.jpeg", Jpeg(3));
    Put(src_ / "cat" / "nested" / "y.JPG", Jpeg(4));
    Put(src_ / "cat" / ".hidden.jpg", "not an image");
    Put(src_ / "README.txt", "stray");
  }
  std::string Src() const { return src_.string(); }
  std::string Out(const std::string& name = "out") const { return (tmp_ / name).string(); }

  testing::TempDir tmp_;
  std::filesystem::path src_;
};

TEST_F(CliTest, ConvertsAnImageFolderThatReadsBackExactly) {
  CliRun r = Ferry("convert " + Src() + " " + Out() + " -q", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("converted 4 files"));
  EXPECT_THAT(r.out, HasSubstr("2 classes"));
  EXPECT_THAT(r.out, HasSubstr("skipped 1 files"));
  EXPECT_EQ(ReadFileToString(tmp_ / "out" / "classes.json").value(), R"(["cat", "dog"])");

  auto ds = LocalDataset::Open(Out());
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  const ShardConfig& config = *(*ds)->index().shards[0].config;
  EXPECT_EQ(config.column_names, (std::vector<std::string>{"data", "label", "path"}));
  EXPECT_EQ(config.column_encodings[0].text(), "jpeg");
  // Class order, then path order; image bytes stored exactly as the files.
  const std::vector<std::pair<int64_t, std::string>> want = {
      {0, "cat/nested/y.JPG"}, {0, "cat/z.jpeg"}, {1, "dog/a.jpg"}, {1, "dog/b.jpg"}};
  ASSERT_EQ((*ds)->num_samples(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    auto v = (*ds)->Get(i).value();
    EXPECT_EQ(std::get<Bytes>(v[0]).data, ReadFileToString(src_ / want[i].second).value());
    EXPECT_EQ(std::get<int64_t>(v[1]), want[i].first);
    EXPECT_EQ(std::get<std::string>(v[2]), want[i].second);
  }
}

// --part K/N on N "machines", then merge-index --parts N: the dataset one convert writes, sample
// for sample, with its classes.json; a missing part stops the merge, naming it.
TEST_F(CliTest, ConvertPartsMergeIntoTheDatasetOneConvertWrites) {
  for (int i = 0; i < 7; ++i) Put(src_ / "bird" / fmt::format("{}.jpg", i), Jpeg(10 + i));
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out("whole") + " -q", tmp_).code, 0);
  for (int k = 0; k < 3; ++k) {
    CliRun r = Ferry(fmt::format("convert {} {} -q --part {}/3", Src(), Out("parts"), k), tmp_);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(fmt::format("part {} of 3", k)));
  }
  // Not merged yet with a part missing: moved away, the merge names it and writes nothing.
  std::filesystem::rename(tmp_ / "parts" / "part-00001", tmp_ / "part-00001");
  CliRun refused = Ferry("merge-index " + Out("parts") + " --parts 3", tmp_);
  EXPECT_NE(refused.code, 0);
  EXPECT_THAT(refused.err, HasSubstr("part-00001"));
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "parts" / "index.json"));
  std::filesystem::rename(tmp_ / "part-00001", tmp_ / "parts" / "part-00001");
  CliRun merged = Ferry("merge-index " + Out("parts") + " --parts 3", tmp_);
  ASSERT_EQ(merged.code, 0) << merged.err;

  EXPECT_EQ(ReadFileToString(tmp_ / "parts" / "classes.json").value_or(""),
            ReadFileToString(tmp_ / "whole" / "classes.json").value_or("?"));
  auto whole = LocalDataset::Open(Out("whole"));
  auto parts = LocalDataset::Open(Out("parts"));
  ASSERT_TRUE(whole.ok() && parts.ok()) << parts.status().ToString();
  ASSERT_EQ((*parts)->num_samples(), 11u);
  ASSERT_EQ((*parts)->num_samples(), (*whole)->num_samples());
  for (uint64_t i = 0; i < (*whole)->num_samples(); ++i) {
    auto a = (*whole)->Get(i).value();
    auto b = (*parts)->Get(i).value();
    EXPECT_EQ(std::get<Bytes>(a[0]).data, std::get<Bytes>(b[0]).data) << i;
    EXPECT_EQ(std::get<int64_t>(a[1]), std::get<int64_t>(b[1])) << i;
    EXPECT_EQ(std::get<std::string>(a[2]), std::get<std::string>(b[2])) << i;
  }
  CliRun bad = Ferry(fmt::format("convert {} {} -q --part 3/3", Src(), Out("bad")), tmp_);
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("0 <= K < N"));
}

// A disk that fills while converting (a 1 MiB tmpfs, mounted in a mount namespace of the
// command's own, for 3 MiB of files): a clear error naming the output folder, the free space and
// what the dataset needs; every file left under the output is a whole shard (its temporary gone,
// no index.json), for MDS and for WebDataset tars alike.
TEST_F(CliTest, AFullDiskWhileConvertingIsAClearErrorAndLeavesNoPartialFile) {
  const auto files = tmp_ / "files";
  for (int i = 0; i < 48; ++i) {
    std::string data(64 << 10, '\0');
    uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
    for (char& c : data) {  // not compressible: a tmpfs has no compression, but be plain
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    Put(files / fmt::format("f{:02}.bin", i), data);
  }
  const auto script = tmp_ / "full.sh";
  std::ofstream(script) << "mount -t tmpfs -o size=1m tmpfs \"$1\" || exit 90\n"
                           "\"$2\" convert \"$3\" \"$1/ds\" -q --size-limit 256kb --to \"$4\"\n"
                           "code=$?\necho \"--- left\"\n"
                           "find \"$1\" -type f -printf '%P %s\\n'\nexit $code\n";
  for (const std::string to : {"mds", "webdataset"}) {
    SCOPED_TRACE(to);
    const auto mount = tmp_ / ("mnt-" + to);
    std::filesystem::create_directories(mount);
    const auto out = tmp_ / ("full-" + to);
    const int status = std::system(
        fmt::format("unshare --user --map-root-user --mount sh {} {} {} {} {} > {} 2>&1",
                    script.string(), mount.string(), FERRY_CLI_PATH, files.string(), to,
                    out.string())
            .c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string text = ReadFileToString(out).value_or("");
    ASSERT_NE(code, 90) << "no tmpfs to be had: " << text;
    EXPECT_NE(code, 0) << text;
    EXPECT_THAT(text, HasSubstr((mount / "ds").string())) << text;
    EXPECT_THAT(text, HasSubstr("No space left on device")) << text;
    EXPECT_THAT(text, HasSubstr("free of")) << text;
    const std::string left = text.substr(text.find("--- left\n") + 9);
    std::istringstream lines(left);
    std::string name;
    uint64_t size = 0;
    int whole = 0;
    while (lines >> name >> size) {
      EXPECT_EQ(name.find(".tmp"), std::string::npos) << "a temporary left: " << name;
      EXPECT_NE(name, "ds/index.json") << "the dataset is not finished";
      if (name.ends_with(".mds") || name.ends_with(".tar")) {
        // A whole shard: about 256 KiB of 64 KiB files.
        EXPECT_GT(size, 128u << 10) << name;
        ++whole;
      }
    }
    EXPECT_GT(whole, 0) << "some shards fitted: " << left;
  }
}

TEST_F(CliTest, InspectVerifyAndCatDescribeTheDataset) {
  ASSERT_EQ(
      Ferry("convert " + Src() + " " + Out() + " -q --size-limit 2kb --hashes sha1,xxh64", tmp_)
          .code,
      0);
  CliRun inspect = Ferry("inspect " + Out() + " --json", tmp_);
  ASSERT_EQ(inspect.code, 0) << inspect.err;
  auto j = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(j["samples"], 4);
  EXPECT_GE(j["shards"].get<int>(), 2);
  EXPECT_EQ(j["configs"][0]["hashes"], nlohmann::json({"sha1", "xxh64"}));
  EXPECT_EQ(j["configs"][0]["size_limit"], 2048);
  EXPECT_EQ(j["configs"][0]["columns"][1]["encoding"], "int");
  EXPECT_EQ(j["classes"], nlohmann::json({"cat", "dog"}));

  CliRun text = Ferry("inspect " + Out(), tmp_);
  EXPECT_THAT(text.out, HasSubstr("samples      4"));
  EXPECT_THAT(text.out, HasSubstr("jpeg"));

  CliRun verify = Ferry("verify " + Out() + " -q", tmp_);
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
  EXPECT_THAT(verify.out, HasSubstr("ok: "));

  CliRun cat = Ferry("cat " + Out() + " --start 1 --count 2", tmp_);
  ASSERT_EQ(cat.code, 0) << cat.err;
  std::istringstream lines(cat.out);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["path"], "cat/z.jpeg");
  EXPECT_EQ(rows[1]["label"], 1);
  const std::string file = ReadFileToString(src_ / "dog" / "a.jpg").value();
  EXPECT_EQ(rows[1]["data"]["sha256"], HashHex("sha256", file).value());
  EXPECT_EQ(rows[1]["data"]["num_bytes"], file.size());
  EXPECT_EQ(rows[1]["data"]["width"], 24);
  EXPECT_EQ(rows[1]["data"]["mode"], "RGB");

  EXPECT_EQ(Ferry("cat " + Out() + " --start 9", tmp_).code, 2);
}

TEST_F(CliTest, VerifyNamesCorruptAndTruncatedShards) {
  ASSERT_EQ(
      Ferry("convert " + Src() + " " + Out() + " -q --size-limit 1kb --hashes sha1", tmp_).code, 0);
  auto index = ParseIndex(ReadFileToString(tmp_ / "out" / "index.json").value(), "index").value();
  ASSERT_GE(index.shards.size(), 3u);
  // Flip one byte inside shard 1's records; truncate shard 2.
  const auto shard1 = tmp_ / "out" / index.shards[1].raw_data.basename;
  std::string data = ReadFileToString(shard1).value();
  data[data.size() - 10] ^= 0x55;
  ASSERT_TRUE(WriteFileAtomically(shard1, data).ok());
  const auto shard2 = tmp_ / "out" / index.shards[2].raw_data.basename;
  std::filesystem::resize_file(shard2, std::filesystem::file_size(shard2) - 7);

  CliRun r = Ferry("verify " + Out() + " -q", tmp_);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out,
              HasSubstr("shard 1 " + index.shards[1].raw_data.basename + ": hash mismatch: sha1"));
  EXPECT_THAT(r.out, HasSubstr("shard 2 " + index.shards[2].raw_data.basename));
  EXPECT_THAT(r.out, HasSubstr("FAILED: 2 of"));
  EXPECT_THAT(r.out, HasSubstr(": 1, 2"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("shard 0 ")));
}

// Mosaic's JSON/CSV/TSV datasets and WebDataset tars are inspected, verified and printed as MDS
// ones are: each through its format.
TEST_F(CliTest, InspectVerifyAndCatReadEveryFormat) {
  const std::filesystem::path split =
      std::filesystem::path(FERRY_FIXTURES_DIR).parent_path() / "split";
  const std::string csv = (split / "csv_gz_md5").string();
  CliRun r = Ferry("inspect " + csv, tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("format       csv"));
  EXPECT_THAT(r.out, HasSubstr("  id     int "));
  r = Ferry("verify -q " + csv, tmp_);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("6 shards, 243 samples"));
  r = Ferry("cat " + csv + " --start 3 --count 1", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\": \"3\", \"score\": 87571.99763821671, \"text\": \"\"}\n");
  r = Ferry("cat " + (split / "json_plain").string() + " --count 1", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"text\": \"beta \\u00e9psilon beta tab\\there\"}"));

  // A .meta gone and a data file damaged: both named.
  std::filesystem::copy(split / "tsv_plain", tmp_ / "tsv");
  for (const auto& entry : std::filesystem::directory_iterator(tmp_ / "tsv")) {
    std::filesystem::permissions(entry.path(), std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
  }
  std::filesystem::remove(tmp_ / "tsv" / "shard.00000.tsv.meta");
  std::string data = ReadFileToString(tmp_ / "tsv" / "shard.00001.tsv").value();
  data[100] ^= 0x01;
  ASSERT_TRUE(WriteFileAtomically(tmp_ / "tsv" / "shard.00001.tsv", data).ok());
  r = Ferry("verify -q " + Out("tsv"), tmp_);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("shard 0 shard.00000.tsv.meta: "));
  EXPECT_THAT(r.out, HasSubstr("shard 1 shard.00001.tsv: hash mismatch: xxh3_64"));

  // WebDataset tars, listed or not.
  const std::filesystem::path tars =
      std::filesystem::path(FERRY_FIXTURES_DIR).parent_path() / "webdataset" / "tarwriter";
  std::filesystem::create_directories(tmp_ / "wds");
  for (const auto& entry : std::filesystem::directory_iterator(tars)) {
    if (entry.path().extension() == ".tar") {
      std::filesystem::copy_file(entry.path(), tmp_ / "wds" / entry.path().filename());
    }
  }
  r = Ferry("verify " + Out("wds"), tmp_);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("3 shards, 101 samples"));
  EXPECT_THAT(r.err, HasSubstr("ferry index " + Out("wds")));  // a note says what would save it
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "wds" / "index.json"));
  ASSERT_EQ(Ferry("index " + Out("wds"), tmp_).code, 0);
  r = Ferry("verify -q " + Out("wds"), tmp_);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("3 shards, 101 samples"));
  r = Ferry("cat " + Out("wds") + " --count 1", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("{\"__key__\": \"sample00000000\", \"cls\": \"30\""));
  r = Ferry("inspect " + Out("wds"), tmp_);
  EXPECT_THAT(r.out, HasSubstr("format       webdataset"));
}

TEST_F(CliTest, CompressedDatasetCatsTheSameAsUncompressed) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out("plain") + " -q", tmp_).code, 0);
  CliRun z = Ferry(
      "convert " + Src() + " " + Out("zstd") + " -q --compression zstd:5 --size-limit 1kb", tmp_);
  ASSERT_EQ(z.code, 0) << z.err;
  EXPECT_THAT(z.out, HasSubstr("compressed"));
  EXPECT_EQ(Ferry("verify " + Out("zstd") + " -q", tmp_).code, 0);
  const std::string a = Ferry("cat " + Out("plain"), tmp_).out;
  const std::string b = Ferry("cat " + Out("zstd"), tmp_).out;
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_F(CliTest, RefusesToOverwriteUnlessAsked) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out() + " -q", tmp_).code, 0);
  CliRun again = Ferry("convert " + Src() + " " + Out() + " -q", tmp_);
  EXPECT_EQ(again.code, 4);
  EXPECT_THAT(again.err, HasSubstr("--overwrite"));
  EXPECT_EQ(
      Ferry("convert " + Src() + " " + Out() + " -q --overwrite --columns data,path", tmp_).code,
      0);
  auto ds = LocalDataset::Open(Out());
  EXPECT_EQ((*ds)->index().shards[0].config->column_names,
            (std::vector<std::string>{"data", "path"}));
}

TEST_F(CliTest, RejectsBadInputWithAClearMessage) {
  Put(src_ / "dog" / "fake.jpg", "definitely not a jpeg");
  CliRun fake = Ferry("convert " + Src() + " " + Out() + " -q", tmp_);
  EXPECT_EQ(fake.code, 2);
  EXPECT_THAT(fake.err, HasSubstr("fake.jpg"));
  EXPECT_THAT(fake.err, HasSubstr("not one"));
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "out" / "index.json"));

  CliRun inside = Ferry("convert " + Src() + " " + (src_ / "out").string() + " -q", tmp_);
  EXPECT_EQ(inside.code, 2);
  EXPECT_THAT(inside.err, HasSubstr("inside the source folder"));

  CliRun missing = Ferry("inspect " + (tmp_ / "nothing").string(), tmp_);
  EXPECT_EQ(missing.code, 3);
  EXPECT_THAT(missing.err, HasSubstr("nothing does not exist"));

  CliRun not_dataset = Ferry("inspect " + Src(), tmp_);
  EXPECT_EQ(not_dataset.code, 2);
  EXPECT_THAT(not_dataset.err, HasSubstr("is not a dataset"));

  CliRun bad_option = Ferry("convert " + Src() + " " + Out() + " --compression lzma", tmp_);
  EXPECT_EQ(bad_option.code, 2);
  EXPECT_THAT(bad_option.err, HasSubstr("unknown compression 'lzma'"));

  EXPECT_EQ(Ferry("frobnicate", tmp_).code, 2);
  CliRun help = Ferry("--help", tmp_);
  EXPECT_EQ(help.code, 0);
  for (const char* command : {"convert", "inspect", "verify", "cat", "merge-index"}) {
    EXPECT_THAT(help.out, HasSubstr(command));
  }
}

TEST_F(CliTest, ConvertWritesFileDatasetsColumnNamesAndReadsImageAsDeprecatedData) {
  CliRun r = Ferry("convert " + Src() + " " + Out() + " -q --columns image,label", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: --columns image is deprecated"));
  auto ds = LocalDataset::Open(Out());
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  EXPECT_EQ((*ds)->index().shards[0].config->column_names,
            (std::vector<std::string>{"data", "label"}));
  CliRun bad = Ferry("convert " + Src() + " " + Out("b") + " -q --columns pixels", tmp_);
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("unknown column 'pixels' (data, label, path)"));
}

TEST_F(CliTest, AStrayFileIsAnErrorNamingItNotASilentChangeOfType) {
  Put(src_ / "cat" / "notes.txt", "not an image");
  CliRun refused = Ferry("convert " + Src() + " " + Out() + " -q", tmp_);
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("1 of 5 files is not named like the jpeg files"));
  EXPECT_THAT(refused.err, HasSubstr("cat/notes.txt"));
  EXPECT_THAT(refused.err, HasSubstr("--skip-other"));
  EXPECT_THAT(refused.err, HasSubstr("--encoding bytes"));
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "out" / "index.json"));

  CliRun skipped = Ferry("convert " + Src() + " " + Out("skipped") + " -q --skip-other", tmp_);
  ASSERT_EQ(skipped.code, 0) << skipped.err;
  EXPECT_THAT(skipped.out, HasSubstr("converted 4 files"));
  EXPECT_THAT(skipped.out, HasSubstr("data: jpeg (4 of 5 files are named .jpg/.jpeg)"));
  EXPECT_THAT(skipped.out,
              HasSubstr("skipped 1 files not named like jpeg files (--skip-other): cat/notes.txt"));
  EXPECT_EQ(
      (*LocalDataset::Open(Out("skipped")))->index().shards[0].config->column_encodings[0].text(),
      "jpeg");

  CliRun bytes = Ferry("convert " + Src() + " " + Out("bytes") + " -q --encoding bytes", tmp_);
  ASSERT_EQ(bytes.code, 0) << bytes.err;
  EXPECT_THAT(bytes.out, HasSubstr("converted 5 files"));
  EXPECT_THAT(bytes.out, HasSubstr("data: bytes (bytes was asked for)"));

  CliRun only = Ferry("convert " + Src() + " " + Out("only") + " -q --extensions jpg,JPEG", tmp_);
  ASSERT_EQ(only.code, 0) << only.err;
  EXPECT_THAT(only.out, HasSubstr("converted 4 files"));
  EXPECT_THAT(only.out, HasSubstr("skipped 1 files without the extensions jpg,JPEG"));
  EXPECT_THAT(only.out, HasSubstr("data: jpeg (all 4 files are named .jpg/.jpeg)"));

  EXPECT_EQ(Ferry("convert " + Src() + " " + Out("x") + " -q --encoding jpg", tmp_).code, 2);
  EXPECT_EQ(Ferry("convert " + Src() + " " + Out("x") + " -q --threads 0", tmp_).code, 2);
}

TEST_F(CliTest, PngFilesMakeAPngColumnAndAMisnamedOneIsRefused) {
  const std::filesystem::path pngs = tmp_ / "pngs";
  PilImage image{4, 3, "RGB", std::string(4 * 3 * 3, '\x40')};
  Put(pngs / "a.png", EncodePng(image).value());
  Put(pngs / "b.PNG", EncodePng(image).value());
  CliRun r = Ferry("convert " + pngs.string() + " " + Out() + " -q", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ((*LocalDataset::Open(Out()))->index().shards[0].config->column_encodings[0].text(),
            "png");
  Put(pngs / "c.png", Jpeg(1));
  CliRun misnamed = Ferry("convert " + pngs.string() + " " + Out("m") + " -q", tmp_);
  EXPECT_EQ(misnamed.code, 2);
  EXPECT_THAT(misnamed.err, HasSubstr("c.png: named like a PNG file but is not one"));
}

TEST_F(CliTest, AMalformedOrUnknownOutUrlIsAnErrorNotALocalFolder) {
  // Relative to this process's folder, where `ferry` runs too.
  for (const char* out : {"az:/container/shards", "s3:/bucket/x", "nosuch://bucket/x"}) {
    const std::string first = std::string(out).substr(0, std::string(out).find('/'));
    ASSERT_FALSE(std::filesystem::exists(first)) << "left over: " << first;
    CliRun r = Ferry("convert " + Src() + " " + out + " -q", tmp_);
    EXPECT_EQ(r.code, 2) << out << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr("known:")) << out;
    EXPECT_FALSE(std::filesystem::exists(first)) << out << " was written as a local folder";
    std::filesystem::remove_all(first);
  }
}

TEST_F(CliTest, MergeIndexCombinesParts) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out("root/a") + " -q --size-limit 1kb", tmp_).code, 0);
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out("root/b") + " -q --compression gz", tmp_).code, 0);
  CliRun merge = Ferry("merge-index " + Out("root"), tmp_);
  ASSERT_EQ(merge.code, 0) << merge.err;
  auto ds = LocalDataset::Open(Out("root"));
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_samples(), 8u);
  EXPECT_EQ((*ds)->index().shards.back().zip_data->basename.substr(0, 2), "b/");
  EXPECT_EQ(Ferry("verify " + Out("root") + " -q", tmp_).code, 0);
  EXPECT_EQ(Ferry("merge-index " + Out("root"), tmp_).code, 4);  // never overwrites
}

// Every command's store-or-path argument goes through the URL registry: "s3:/x" (one slash),
// "s3:x" and an unknown "foo://x" used to be local folders named "s3:" and "foo:".
TEST_F(CliTest, MalformedOrUnknownUrlsAreErrorsInEveryCommand) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out() + " -q", tmp_).code, 0);
  for (const char* url : {"s3:/bucket/x", "az:x", "foo://bucket/x"}) {
    const std::string first = std::string(url).substr(0, std::string(url).find('/'));
    ASSERT_FALSE(std::filesystem::exists(first)) << "left over: " << first;
    for (const std::string& args :
         {"cp -r -q " + Src() + " " + url, "cp -q " + (src_ / "dog" / "a.jpg").string() + " " + url,
          "sync -q " + Src() + " " + url, "cp -r -q " + std::string(url) + " " + Out("copy"),
          "ls " + std::string(url), "stat " + std::string(url), "inspect " + std::string(url),
          "verify " + std::string(url), "cat " + std::string(url),
          "merge-index " + std::string(url), "doctor " + std::string(url)}) {
      CliRun r = Ferry(args, tmp_);
      EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
      EXPECT_THAT(r.err, HasSubstr(url)) << args;
      EXPECT_THAT(r.err, HasSubstr("known: abfs, abfss, az, dbfs, file, gcs, gs, http, https, s3"))
          << args;
      EXPECT_FALSE(std::filesystem::exists(first)) << args << " wrote a local folder " << first;
      std::filesystem::remove_all(first);
    }
  }
  // A local name with a ':' is written with "./" (or as an absolute path). Commands run in this
  // process's folder.
  const std::string cwd_copy = "./a:b-" + tmp_.path().filename().string();
  CliRun relative = Ferry("cp -r -q " + Out() + " " + cwd_copy, tmp_);
  EXPECT_EQ(relative.code, 0) << relative.err;
  EXPECT_EQ(Ferry("verify -q " + cwd_copy, tmp_).code, 0);
  std::filesystem::remove_all(cwd_copy);
  CliRun absolute = Ferry("cp -r -q " + Out() + " " + Out("x:y"), tmp_);
  EXPECT_EQ(absolute.code, 0) << absolute.err;
  EXPECT_EQ(Ferry("inspect " + Out("x:y"), tmp_).code, 0);
}

// Counts out of range are refused with the range, before anything runs (exit 2): 100000
// connections aborted the process (exit 134), 100000 requests ran for minutes, -j 0 and a
// negative --count were taken.
// sync --mirror-fill: a staged copy missing shards, with one cut short and a stray file, gets
// the shards it lacks and the right-size copy of the short one, keeps the stray file, and leaves
// what it holds in the right size alone; a copy of another dataset is refused.
TEST_F(CliTest, SyncMirrorFillCopiesWhatTheIndexNamesThatTheMirrorLacks) {
  for (int i = 0; i < 12; ++i) Put(src_ / "bird" / fmt::format("{}.jpg", i), Jpeg(20 + i));
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out("src") + " -q --size-limit 2000", tmp_).code, 0);
  std::vector<std::string> shards;
  for (const auto& entry : std::filesystem::directory_iterator(tmp_ / "src")) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("shard.")) shards.push_back(name);
  }
  std::sort(shards.begin(), shards.end());
  ASSERT_GE(shards.size(), 4u);
  const auto staged = tmp_ / "staged";
  const std::string cut = ReadFileToString(tmp_ / "src" / shards[1]).value();
  Put(staged / shards[1], cut.substr(0, cut.size() / 2));
  Put(staged / shards[2], ReadFileToString(tmp_ / "src" / shards[2]).value());
  Put(staged / "notes.txt", "kept");

  CliRun r = Ferry("sync --mirror-fill -q --json " + Out("src") + " " + staged.string(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["objects"], shards.size()) << r.out;  // index.json, and all but shards[2]
  EXPECT_EQ(report["unchanged"], 1) << r.out;
  for (const std::string& name : shards) {
    EXPECT_EQ(ReadFileToString(staged / name).value(),
              ReadFileToString(tmp_ / "src" / name).value())
        << name;
  }
  EXPECT_EQ(ReadFileToString(staged / "index.json").value(),
            ReadFileToString(tmp_ / "src" / "index.json").value());
  EXPECT_EQ(ReadFileToString(staged / "notes.txt").value(), "kept");
  EXPECT_FALSE(std::filesystem::exists(staged / "classes.json")) << "not named by the index";

  r = Ferry("sync --mirror-fill -q " + Out("src") + " " + staged.string(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("copied 0 objects"));

  // A copy of another dataset is not filled in.
  Put(tmp_ / "other" / "index.json", R"({"shards": [], "version": 2})");
  r = Ferry("sync --mirror-fill -q " + Out("src") + " " + Out("other"), tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("DST holds another dataset"));
  EXPECT_THAT(r.err, HasSubstr("other/index.json"));
  r = Ferry("sync --mirror-fill " + Out("images") + " " + Out("other"), tmp_);
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("--mirror-fill needs the dataset's index.json in SRC"));
  r = Ferry("sync --mirror-fill --delete " + Out("src") + " " + Out("other"), tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("excludes"));
}

TEST_F(CliTest, CountsOutOfRangeAreRefusedWithTheRange) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out() + " -q", tmp_).code, 0);
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"doctor " + Out() + " --connections 100000",
       "--connections: Value 100000 not in range 1 to 1024"},
      {"doctor " + Out() + " --connections 0", "not in range 1 to 1024"},
      {"doctor " + Out() + " --requests 100000", "--requests: Value 100000 not in range 1 to 1000"},
      {"doctor " + Out() + " --requests -1", "not in range 1 to 1000"},
      {"cp -r -q -j 0 " + Out() + " " + Out("copy"), "--jobs: Value 0 not in range 1 to 1024"},
      {"sync -q -j 0 " + Out() + " " + Out("copy"), "--jobs: Value 0 not in range 1 to 1024"},
      {"sync -q -j 100000 " + Out() + " " + Out("copy"), "not in range 1 to 1024"},
      {"cat " + Out() + " --count -3", "--count: must be 0 or more, not -3"},
      {"cat " + Out() + " --start -1", "--start: must be 0 or more, not -1"},
  };
  for (const auto& c : cases) {
    CliRun r = Ferry(c.args, tmp_);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(Out("copy")));
  // The bounds themselves are fine.
  CliRun none = Ferry("cat " + Out() + " --count 0", tmp_);
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_TRUE(none.out.empty());
  EXPECT_EQ(Ferry("doctor " + Out() + " --connections 1 --requests 1 --bytes 1kb", tmp_).code, 0);
}

TEST_F(CliTest, AFolderThatIsNotThereIsNotFound) {
  for (const char* command : {"merge-index", "inspect", "verify", "cat"}) {
    CliRun r = Ferry(std::string(command) + " " + Out("no-such-dir"), tmp_);
    EXPECT_EQ(r.code, 3) << command << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("no-such-dir does not exist")) << command;
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("not a folder"))) << command;
  }
}

// doctor sizes the smallest cache from the shuffle's working set, not from one shard: the
// default py1e over a block larger than the dataset keeps all of it in use, py1s one shard.
TEST_F(CliTest, DoctorSizesTheCacheFromTheShufflesWorkingSet) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out() + " -q --size-limit 1kb", tmp_).code, 0);
  auto index = ReadLocalIndex(Out());
  ASSERT_TRUE(index.has_value());
  ASSERT_GE(index->shards.size(), 4u);
  uint64_t total = 0, largest = 0;
  for (const ShardDescription& shard : index->shards) {
    total += shard.raw_data.bytes;
    largest = std::max(largest, shard.raw_data.bytes);
  }
  const std::string doctor = "doctor " + Out() +
                             " --dataset --json --requests 1 --connections 1 --bytes 1kb --local " +
                             tmp_.path().string();
  CliRun py1e = Ferry(doctor, tmp_);
  ASSERT_EQ(py1e.code, 0) << py1e.err;
  auto j = nlohmann::json::parse(py1e.out);
  EXPECT_EQ(j["working_set_bytes"].get<uint64_t>(), total);
  EXPECT_EQ(j["min_cache_limit_bytes"], j["cache_limit_bytes"]);
  CliRun py1s = Ferry(doctor + " --shuffle-algo py1s", tmp_);
  ASSERT_EQ(py1s.code, 0) << py1s.err;
  j = nlohmann::json::parse(py1s.out);
  // py1s defaults to 64 canonical nodes per node (Mosaic's), each with a shard open: here more
  // than the dataset has, so all of it.
  EXPECT_EQ(j["working_set_bytes"].get<uint64_t>(), std::min(total, 64 * largest));
  bool named = false;
  for (const auto& line : j["reasoning"]) {
    named |= line.get<std::string>().find("py1s, 1 worker x batch 1 keeps") != std::string::npos;
  }
  EXPECT_TRUE(named) << j["reasoning"].dump();
  // The workers of a node share its canonical nodes: more workers keep no more shards live.
  CliRun two = Ferry(doctor + " --shuffle-algo py1s --workers 2", tmp_);
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(two.out)["working_set_bytes"], j["working_set_bytes"]);
}

// doctor --auth on a local folder: no credentials needed, and list, read and write are tried for
// real (the probe is removed); a folder that cannot be written says so and exits 1. Plain
// doctor --json carries the same report under "credentials".
TEST_F(CliTest, DoctorAuthTriesListReadAndWrite) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out() + " -q", tmp_).code, 0);
  CliRun auth = Ferry("doctor " + Out() + " --auth --json", tmp_);
  ASSERT_EQ(auth.code, 0) << auth.out << auth.err;
  auto j = nlohmann::json::parse(auth.out);
  EXPECT_EQ(j["answered_by"], "none needed");
  EXPECT_EQ(j["chain"][0]["found"], "local files need no credentials");
  ASSERT_EQ(j["checks"].size(), 3u);
  for (const auto& check : j["checks"]) EXPECT_TRUE(check["ok"].get<bool>()) << check.dump();
  EXPECT_THAT(j["checks"][2]["detail"].get<std::string>(), HasSubstr("wrote and removed"));
  for (const auto& entry : std::filesystem::directory_iterator(Out())) {
    EXPECT_EQ(entry.path().filename().string().find(".ferry-doctor"), std::string::npos);
  }

  std::filesystem::permissions(
      Out(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  CliRun refused = Ferry("doctor " + Out() + " --auth", tmp_);
  std::filesystem::permissions(Out(), std::filesystem::perms::owner_all);
  if (::geteuid() != 0) {  // root writes anyway
    EXPECT_EQ(refused.code, 1) << refused.out;
    EXPECT_THAT(refused.out, HasSubstr("write        failed"));
  }
  EXPECT_THAT(refused.out, HasSubstr("read         ok: "));

  CliRun plain =
      Ferry("doctor " + Out() + " --json --requests 1 --connections 1 --bytes 1kb", tmp_);
  ASSERT_EQ(plain.code, 0) << plain.err;
  auto credentials = nlohmann::json::parse(plain.out)["credentials"];
  EXPECT_EQ(credentials["answered_by"], "none needed");
  EXPECT_TRUE(credentials["checks"].empty()) << "plain doctor writes nothing";
}

// ferry stream under a cache_limit too small for the shuffle says so, with the limit that would
// hold it; --strict-cache-limit makes that an error (exit 2). A prefix without index.json says
// what reads a folder of files.
TEST_F(CliTest, StreamSaysWhenTheCacheLimitIsTooSmallForTheShuffle) {
  ASSERT_EQ(Ferry("convert " + Src() + " " + Out() + " -q --size-limit 1kb", tmp_).code, 0);
  auto index = ReadLocalIndex(Out());
  ASSERT_TRUE(index.has_value());
  uint64_t total = 0, largest = 0;
  for (const ShardDescription& shard : index->shards) {
    total += shard.raw_data.bytes;
    largest = std::max(largest, shard.raw_data.bytes);
  }
  // The least a cache_limit may be (as Mosaic's): index.json and four of the largest shard.
  const uint64_t limit = std::filesystem::file_size(Out() + "/index.json") + 4 * largest;
  ASSERT_LT(limit, total + std::filesystem::file_size(Out() + "/index.json"));
  const std::string stream =
      "stream " + Out() + " --shuffle --cache-limit " + std::to_string(limit) + " --local ";
  CliRun narrowed = Ferry(stream + Out("cache1"), tmp_);
  EXPECT_EQ(narrowed.code, 0) << narrowed.err;
  EXPECT_THAT(narrowed.err, HasSubstr("is too small for the order asked for"));
  CliRun strict = Ferry(stream + Out("cache2") + " --strict-cache-limit", tmp_);
  EXPECT_EQ(strict.code, 2) << strict.err;
  EXPECT_THAT(strict.err, HasSubstr("a cache_limit of"));
  CliRun raw = Ferry("stream " + Src() + " --local " + Out("cache3"), tmp_);
  EXPECT_EQ(raw.code, 3) << raw.err;
  EXPECT_THAT(raw.err, HasSubstr("FileDataset"));
  EXPECT_THAT(raw.err, HasSubstr("ferry convert"));
}

}  // namespace
}  // namespace ferry
