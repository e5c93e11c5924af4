#include "base/crc.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace ferry {
namespace {

// One bit at a time, straight from the definition: what the sliced and hardware versions must
// agree with.
template <typename T>
T BitwiseCrc(T poly, std::string_view data) {
  T crc = ~T{0};
  for (unsigned char c : data) {
    crc ^= c;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? poly : T{0});
  }
  return ~crc;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

TEST(Crc, TheCatalogueCheckValues) {
  // "Check" in the catalogue of parametrised CRC algorithms: the CRC of "123456789".
  EXPECT_EQ(Crc32(0, "123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32c(0, "123456789"), 0xE3069283u);
  EXPECT_EQ(Crc64Nvme(0, "123456789"), 0xAE8B14860A799888ull);
  EXPECT_EQ(Crc32(0, ""), 0u);
  EXPECT_EQ(Crc64Nvme(0, ""), 0u);
}

TEST(Crc, AgreesWithTheBitwiseDefinitionAtEveryLengthAndAlignment) {
  const std::string data = RandomBytes(300, 7);
  for (size_t begin = 0; begin < 9; ++begin) {
    for (size_t n = 0; begin + n <= data.size(); n += 13) {
      const std::string_view piece = std::string_view(data).substr(begin, n);
      ASSERT_EQ(Crc32(0, piece), BitwiseCrc<uint32_t>(0xEDB88320u, piece)) << begin << " " << n;
      ASSERT_EQ(Crc32c(0, piece), BitwiseCrc<uint32_t>(0x82F63B78u, piece)) << begin << " " << n;
      ASSERT_EQ(Crc64Nvme(0, piece), BitwiseCrc<uint64_t>(0x9A6C9329AC4BC9B5ull, piece))
          << begin << " " << n;
    }
  }
}

TEST(Crc, ContinuesWhereTheLastCallLeftOff) {
  const std::string data = RandomBytes(100'003, 11);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{99'999}}) {
    const std::string_view a = std::string_view(data).substr(0, cut);
    const std::string_view b = std::string_view(data).substr(cut);
    EXPECT_EQ(Crc32(Crc32(0, a), b), Crc32(0, data)) << cut;
    EXPECT_EQ(Crc32c(Crc32c(0, a), b), Crc32c(0, data)) << cut;
    EXPECT_EQ(Crc64Nvme(Crc64Nvme(0, a), b), Crc64Nvme(0, data)) << cut;
  }
}

}  // namespace
}  // namespace ferry
