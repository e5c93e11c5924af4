// BatchLoader over a local dataset: batches come in torch DataLoader's order, every sample once,
// images transformed as the pipeline says; bad columns and corrupt images are clear errors.
#include "loader/batch_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "image/jpeg_codec.h"

namespace ferry::internal_loader {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSamples = 120;

std::string Jpeg(uint32_t w, uint32_t h, uint32_t seed) {
  PilImage image{.width = w, .height = h, .mode = "RGB", .pixels = {}};
  for (uint32_t i = 0; i < w * h * 3; ++i) image.pixels += static_cast<char>((i * 31 + seed) % 251);
  return EncodeJpeg(image, 90).value();
}

class BatchLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = MdsWriter::Create({.out = tmp_ / "ds",
                                     .columns = {{"id", "int"},
                                                 {"img", "jpeg"},
                                                 {"f", "float32"},
                                                 {"s", "str"},
                                                 {"v", "ndarray:uint8:2"}},
                                     .size_limit = 20'000})
                      .value();
    for (uint64_t i = 0; i < kSamples; ++i) {
      // Sorted column order: f, id, img, s, v.
      const Value values[] = {
          Value(i * 0.5), Value(static_cast<int64_t>(i)),
          Value(Bytes{i == corrupt_ ? "\xff\xd8 broken" : Jpeg(20 + i % 7, 16, i)}),
          Value("s" + std::to_string(i)),
          Value(NdArray{.dtype = DType::kUInt8, .shape = {2}, .data = "ab"})};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    ASSERT_TRUE(writer->Finish().has_value());
  }

  std::shared_ptr<StreamingDataset> Open(uint32_t batch_size) {
    StreamingOptions o;
    o.streams = {{.local = (tmp_ / "ds").string()}};
    o.order.shuffle = true;
    o.order.batch_size = batch_size;
    return StreamingDataset::Open(o).value();
  }

  static BatchLoaderOptions Options(uint32_t threads, uint32_t batch) {
    using Kind = ImageTransform::Kind;
    BatchLoaderOptions o;
    o.batch_size = batch;
    o.num_threads = threads;
    o.seed = 5;
    o.columns = {{.name = "id", .image = std::nullopt},
                 {.name = "f", .image = std::nullopt},
                 {.name = "s", .image = std::nullopt},
                 {.name = "img",
                  .image = ImagePipelineOptions{
                      .transforms = {{.kind = Kind::kRandomResizedCrop, .width = 8, .height = 6},
                                     {.kind = Kind::kRandomHorizontalFlip}}}}};
    return o;
  }

  static std::vector<ThreadStart> Starts(uint32_t threads) {
    std::vector<ThreadStart> starts;
    for (uint32_t t = 0; t < threads; ++t) starts.push_back({.plan_worker = t});
    return starts;
  }

  static std::vector<std::shared_ptr<Batch>> All(BatchLoader& loader) {
    std::vector<std::shared_ptr<Batch>> out;
    for (;;) {
      auto next = loader.Next(std::chrono::seconds(30));
      EXPECT_TRUE(next.has_value()) << next.status().ToString();
      if (!next) break;
      EXPECT_TRUE(next->has_value()) << "timed out";
      if (!next->has_value() || **next == nullptr) break;
      out.push_back(**next);
    }
    return out;
  }

  testing::TempDir tmp_;
  uint64_t corrupt_ = kSamples;  // none
};

TEST_F(BatchLoaderTest, BatchesComeInTorchOrderWithEverySampleOnce) {
  auto ds = Open(4);
  const WorldShape world{.nodes = 1, .ranks_per_node = 1, .workers_per_rank = 3};
  auto loader = BatchLoader::Start(ds, Options(3, 4), world, {}, 1, Starts(3));
  ASSERT_TRUE(loader.has_value()) << loader.status().ToString();
  EXPECT_EQ((*loader)->num_batches(), kSamples / 4);
  const auto batches = All(**loader);
  ASSERT_EQ(batches.size(), kSamples / 4);
  // Batch k is the (k / 3)-th batch of plan worker k % 3: torch's round robin.
  std::vector<std::vector<uint64_t>> per_worker(3);
  for (uint32_t w = 0; w < 3; ++w) {
    auto it = ds->Iterate({.world = world, .worker = {.worker = w}, .epoch = 1}).value();
    while (auto s = it->Next().value()) per_worker[w].push_back(s->id);
  }
  std::set<uint64_t> seen;
  for (size_t k = 0; k < batches.size(); ++k) {
    const Batch& b = *batches[k];
    ASSERT_EQ(b.size, 4u);
    const std::vector<uint64_t> want(per_worker[k % 3].begin() + (k / 3) * 4,
                                     per_worker[k % 3].begin() + (k / 3) * 4 + 4);
    EXPECT_EQ(b.ids, want) << "batch " << k;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint64_t id = b.ids[i];
      seen.insert(id);
      int64_t v;
      std::memcpy(&v, b.columns[0].data.get() + i * 8, 8);
      EXPECT_EQ(v, static_cast<int64_t>(id));
      double f;
      std::memcpy(&f, b.columns[1].data.get() + i * 8, 8);
      EXPECT_EQ(f, id * 0.5);
      EXPECT_EQ(b.columns[2].objects[i], "s" + std::to_string(id));
    }
    EXPECT_EQ(b.columns[3].shape, (std::vector<uint64_t>{4, 6, 8, 3}));
    EXPECT_EQ(b.columns[3].dtype, BatchDType::kUInt8);
  }
  EXPECT_EQ(seen.size(), kSamples);
}

TEST_F(BatchLoaderTest, ImagesAreWhatThePipelineMakesOfEachSample) {
  auto ds = Open(2);
  const auto options = Options(2, 2);
  auto loader = BatchLoader::Start(ds, options, {.workers_per_rank = 2}, {}, 7, Starts(2)).value();
  auto batch = loader->Next(std::chrono::seconds(30)).value().value();
  const auto pipeline = ImagePipeline::Create(*options.columns[3].image).value();
  std::vector<uint8_t> want(pipeline.out_bytes());
  for (uint32_t i = 0; i < batch->size; ++i) {
    const uint64_t id = batch->ids[i];
    SampleRng rng(options.seed, 7, id);
    ASSERT_TRUE(pipeline.Apply(Jpeg(20 + id % 7, 16, id), rng, want.data()).ok());
    EXPECT_EQ(std::memcmp(batch->columns[3].data.get() + i * want.size(), want.data(), want.size()),
              0)
        << "sample " << id;
  }
}

TEST_F(BatchLoaderTest, ResumedThreadsAndDropLast) {
  auto ds = Open(4);
  auto options = Options(2, 4);
  options.drop_last = true;
  // Thread 0 resumes 2 samples in: its last batch would be partial and is dropped.
  std::vector<ThreadStart> starts = {{.plan_worker = 1, .skip = 2}, {.plan_worker = 0}};
  auto loader = BatchLoader::Start(ds, options, {.workers_per_rank = 2}, {}, 0, starts).value();
  const auto batches = All(*loader);
  EXPECT_EQ(batches.size(), loader->num_batches());
  EXPECT_EQ(batches.size(), (kSamples / 2 - 2) / 4 + kSamples / 2 / 4);
  for (const auto& b : batches) EXPECT_EQ(b->size, 4u);
}

TEST_F(BatchLoaderTest, DestroyingMidEpochStopsTheThreads) {
  auto ds = Open(2);
  auto loader =
      BatchLoader::Start(ds, Options(2, 2), {.workers_per_rank = 2}, {}, 0, Starts(2)).value();
  ASSERT_TRUE(loader->Next(std::chrono::seconds(30)).value().value() != nullptr);
  loader.reset();  // joins: the threads are blocked on full queues and must wake
}

TEST_F(BatchLoaderTest, BadColumnsAreInvalidArgument) {
  auto ds = Open(2);
  auto start = [&](BatchLoaderOptions o) {
    return BatchLoader::Start(ds, std::move(o), {.workers_per_rank = 1}, {}, 0, Starts(1)).status();
  };
  auto options = Options(1, 2);
  options.columns = {{.name = "nope", .image = std::nullopt}};
  EXPECT_THAT(start(options).message(), HasSubstr("no column nope"));
  options.columns = {{.name = "v", .image = std::nullopt}};
  EXPECT_THAT(start(options).message(), HasSubstr("column v is ndarray:uint8:2"));
  options.columns = {{.name = "id", .image = Options(1, 2).columns[3].image}};
  EXPECT_THAT(start(options).message(), HasSubstr("apply to jpeg and png"));
  EXPECT_THAT(start(Options(1, 3)).message(), HasSubstr("batches of 2"));
}

TEST_F(BatchLoaderTest, ACorruptImageIsDataLossNamingSampleAndColumn) {
  corrupt_ = 33;
  std::filesystem::remove_all(tmp_ / "ds");
  SetUp();
  auto ds = Open(2);
  auto loader =
      BatchLoader::Start(ds, Options(1, 2), {.workers_per_rank = 1}, {}, 0, Starts(1)).value();
  Status failure;
  for (;;) {
    auto next = loader->Next(std::chrono::seconds(30));
    if (!next) {
      failure = next.status();
      break;
    }
    ASSERT_TRUE(next->has_value());
    if (**next == nullptr) break;
  }
  EXPECT_EQ(failure.code(), StatusCode::kDataLoss) << failure.ToString();
  EXPECT_THAT(failure.ToString(), HasSubstr("sample 33"));
  EXPECT_THAT(failure.ToString(), HasSubstr("column img"));
}

}  // namespace
}  // namespace ferry::internal_loader

namespace ferry::internal_loader {
namespace {

TEST(BufferPool, ReusesReleasedBuffersOfTheSameSize) {
  auto pool = std::make_shared<BufferPool>(2);
  uint8_t* first = nullptr;
  {
    auto a = pool->Get(4096);
    first = a.get();
    a[4095] = 1;
  }
  auto again = pool->Get(4096);
  EXPECT_EQ(again.get(), first);  // came back and went out again
  auto other = pool->Get(100);
  EXPECT_NE(other.get(), first);
  // A buffer that outlives its pool is simply freed (ASan would see a leak or a bad free).
  pool.reset();
  again.reset();
  other.reset();
}

}  // namespace
}  // namespace ferry::internal_loader
