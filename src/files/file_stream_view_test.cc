// A FileDataset through the native batch loader (what ferry.DataLoader runs): every JPEG of a
// folder decoded, center-cropped and batched with its label, in the FileDataset's order.
#include "files/file_stream_view.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "image/image_testutil.h"
#include "image/jpeg_codec.h"
#include "loader/batch_loader.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using internal_loader::BatchLoader;
using internal_loader::BatchLoaderOptions;
using internal_loader::ImagePipelineOptions;
using internal_loader::ImageTransform;

TEST(FileStreamView, TheBatchLoaderDecodesEveryFileOnceWithItsLabel) {
  testing::TempDir tmp;
  const std::string jpeg = EncodeJpeg(internal_image_test::PatternImage("RGB", 40, 30), 90).value();
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 7; ++i) {
      const fs::path path = tmp / fmt::format("root/class{}/{}.jpg", c, i);
      fs::create_directories(path.parent_path());
      ASSERT_TRUE(WriteFileAtomically(path, jpeg).ok());
    }
  }
  auto files = FileDataset::Open({.root = (tmp / "root").string(), .shuffle = true}).value();
  auto view = ViewAsStream(files, 4).value();
  ASSERT_EQ(view->indexes().front()->shards.front().config->column_encodings[0].text(), "jpeg");
  EXPECT_EQ(view->Plan({}, 0, 0).error().code(), StatusCode::kUnimplemented);

  ImagePipelineOptions crop;
  crop.transforms.push_back({.kind = ImageTransform::Kind::kCenterCrop, .width = 16, .height = 16});
  const WorldShape world{.workers_per_rank = 2};
  auto loader = BatchLoader::Start(view,
                                   {.columns = {{.name = "data", .image = crop}, {.name = "label"}},
                                    .batch_size = 4,
                                    .num_threads = 2},
                                   world, {}, /*epoch=*/0, {{0, 0, 0}, {1, 0, 0}})
                    .value();
  std::set<uint64_t> seen;
  uint64_t batches = 0;
  while (true) {
    auto next = loader->Next(std::chrono::seconds(10)).value();
    ASSERT_TRUE(next.has_value()) << "timed out";
    if (*next == nullptr) break;
    const auto& batch = **next;
    ++batches;
    ASSERT_EQ(batch.columns.size(), 2u);
    EXPECT_EQ(batch.columns[0].shape, (std::vector<uint64_t>{uint64_t{batch.size}, 16, 16, 3}));
    const auto* labels = reinterpret_cast<const int64_t*>(batch.columns[1].data.get());
    for (uint32_t i = 0; i < batch.size; ++i) {
      const uint64_t id = batch.ids[i];
      seen.insert(id);
      EXPECT_EQ(labels[i], files->files()[id].label) << files->files()[id].path;
    }
  }
  EXPECT_EQ(seen.size(), 14u);
  EXPECT_EQ(batches, loader->num_batches());
}

}  // namespace
}  // namespace ferry
