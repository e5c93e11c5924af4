// RunSubprocess with real programs (/bin/sh): both streams read, the exit status kept, and the
// bounds held - a program that runs too long is killed, one that prints too much is stopped, one
// that does not exist is named.
#include "base/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <thread>

namespace ferry {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST(RunSubprocess, ReadsBothStreamsAndTheExitStatus) {
  auto run =
      RunSubprocess({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, milliseconds(10'000));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->out, "out\n");
  EXPECT_EQ(run->err, "err\n");
  EXPECT_EQ(run->exit_code, 3);
  // Large output on both streams at once does not dead-lock on a full pipe.
  auto big =
      RunSubprocess({"/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"},
                    milliseconds(10'000));
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->out.size(), 300'000u);
  EXPECT_EQ(big->err.size(), 200'000u);
  EXPECT_EQ(big->exit_code, 0);
  // No standard input: a program reading it sees the end at once.
  auto in = RunSubprocess({"/bin/sh", "-c", "cat; echo done"}, milliseconds(10'000));
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->out, "done\n");
}

TEST(RunSubprocess, TheBoundsHold) {
  const auto start = std::chrono::steady_clock::now();
  auto slow = RunSubprocess({"/bin/sh", "-c", "exec sleep 30"}, milliseconds(300));
  EXPECT_EQ(slow.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(slow.status().message(), HasSubstr("killed"));
  // Closing both streams does not end the wait early: the deadline still holds.
  auto quiet = RunSubprocess({"/bin/sh", "-c", "exec >&- 2>&-; sleep 30"}, milliseconds(300));
  EXPECT_EQ(quiet.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  // What the program started goes with it: a background job that would leave a file behind
  // after 0.6 s is killed at 0.3 s too.
  const std::string marker = ::testing::TempDir() + "/ferry-subprocess-orphan";
  std::remove(marker.c_str());
  auto orphan = RunSubprocess({"/bin/sh", "-c", "(sleep 0.6; touch '" + marker + "') & sleep 30"},
                              milliseconds(300));
  EXPECT_EQ(orphan.status().code(), StatusCode::kDeadlineExceeded);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the background job outlived the timeout";

  auto loud =
      RunSubprocess({"/bin/sh", "-c", "head -c 100000 /dev/zero"}, milliseconds(10'000), 1000);
  EXPECT_EQ(loud.status().code(), StatusCode::kResourceExhausted);

  auto missing = RunSubprocess({"ferry-no-such-program"}, milliseconds(1000));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("ferry-no-such-program"));
}

}  // namespace
}  // namespace ferry
