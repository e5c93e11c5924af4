#include "ferry/metrics/node_metrics.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/metrics/metrics.h"
#include "metrics/metrics_file.h"

namespace ferry::metrics {
namespace {

namespace fs = std::filesystem;

int ProcessFiles(const fs::path& folder) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    n += entry.path().filename().string().starts_with("proc.");
  }
  return n;
}

int64_t Value(const NodeMetrics& node, const std::string& name) {
  auto it = node.values.find(name);
  return it == node.values.end() ? 0 : it->second;
}

// Forks a child that publishes to `folder`, runs `count` (its counting) and flushes, then waits
// to be killed; returns once the child's figures are in its file (-1: the fork failed).
pid_t SpawnPublishingChild(const fs::path& folder, const std::function<void()>& count) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto publication = NodePublication::Start(folder);
    if (!publication.ok()) ::_exit(2);
    count();
    FlushNodeMetrics();
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    ::pause();  // killed
    ::_exit(4);
  }
  char byte = 0;
  if (pid > 0 && ::read(ready[0], &byte, 1) != 1) return -1;
  ::close(ready[0]);
  ::close(ready[1]);
  return pid;
}

void Kill(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
}

TEST(NodeMetrics, AFolderNobodyPublishesToIsEmpty) {
  testing::TempDir tmp;
  auto node = ReadNodeMetrics(tmp / "nothing-here");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_TRUE(node->values.empty());
  EXPECT_TRUE(node->processes.empty());
}

TEST(NodeMetrics, ThisProcessIsSeenLiveAndItsCountersSurviveItsRelease) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  Counter& c = GetCounter("/test/node/live");
  Gauge& g = GetGauge("/test/node/live_gauge");
  c.Add(100);  // before: not this folder's
  auto publication = NodePublication::Start(folder);
  ASSERT_TRUE(publication.ok()) << publication.status().ToString();
  c.Add(5);
  g.Set(3);
  auto live = ReadNodeMetrics(folder);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  ASSERT_EQ(live->processes.size(), 1u);
  EXPECT_EQ(live->processes[0].pid, ::getpid());
  // This process's counts since it began publishing there.
  EXPECT_EQ(Value(*live, "/test/node/live"), 5);
  EXPECT_EQ(Value(*live, "/test/node/live_gauge"), 3);
  EXPECT_EQ(ProcessFiles(folder), 1);

  const int64_t counted = 5;
  *publication = NodePublication();  // the last publication: folded, file removed
  EXPECT_EQ(ProcessFiles(folder), 0);
  auto after = ReadNodeMetrics(folder);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->processes.empty());
  EXPECT_EQ(Value(*after, "/test/node/live"), counted);
  EXPECT_EQ(after->exited.at("/test/node/live"), counted);
  EXPECT_EQ(Value(*after, "/test/node/live_gauge"), 0) << "an exited process's gauges go";

  // Publishing there again counts what came after it began again.
  c.Add(2);
  auto again = NodePublication::Start(folder);
  ASSERT_TRUE(again.ok());
  c.Add(1);
  auto both = ReadNodeMetrics(folder);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(Value(*both, "/test/node/live"), counted + 1);
}

TEST(NodeMetrics, CopiesOfAPublicationShareOneFile) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  auto a = NodePublication::Start(folder);
  auto b = NodePublication::Start(folder);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(ProcessFiles(folder), 1);
  *a = NodePublication();
  EXPECT_EQ(ProcessFiles(folder), 1) << "one publication is left";
  *b = NodePublication();
  EXPECT_EQ(ProcessFiles(folder), 0);
}

// A forked child (a DataLoader worker) counts from zero, and what it counted survives it even
// when it ends without releasing anything (os._exit, SIGKILL).
TEST(NodeMetrics, AChildThatDiesIsFoldedOnceAndCountsOnlyItsOwn) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  Counter& c = GetCounter("/test/node/child");
  Gauge& g = GetGauge("/test/node/child_gauge");
  auto parent = NodePublication::Start(folder);
  ASSERT_TRUE(parent.ok());
  c.Add(1000);  // the parent's, before the fork
  const int64_t parents = 1000;

  const pid_t pid = SpawnPublishingChild(folder, [&] {
    c.Add(7);
    g.Set(9);
  });
  ASSERT_GT(pid, 0);

  auto with_child = ReadNodeMetrics(folder);
  ASSERT_TRUE(with_child.ok());
  EXPECT_EQ(with_child->processes.size(), 2u);
  EXPECT_EQ(Value(*with_child, "/test/node/child"), parents + 7);
  EXPECT_EQ(Value(*with_child, "/test/node/child_gauge"), 9);

  Kill(pid);
  EXPECT_EQ(ProcessFiles(folder), 2) << "the dead child's file is there until someone reads";
  auto after = ReadNodeMetrics(folder);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->processes.size(), 1u);
  EXPECT_EQ(after->processes[0].pid, ::getpid());
  EXPECT_EQ(Value(*after, "/test/node/child"), parents + 7) << "the child's 7 survive it";
  EXPECT_EQ(Value(*after, "/test/node/child_gauge"), 0);
  EXPECT_EQ(after->exited.at("/test/node/child"), 7);
  EXPECT_EQ(ProcessFiles(folder), 1) << "the dead child's file is removed once folded";
  auto again = ReadNodeMetrics(folder);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Value(*again, "/test/node/child"), parents + 7) << "folded once, not on every read";
}

// Nobody may read the folder's metrics (no `ferry top`): a process that starts publishing to it
// folds the files of those killed before, so that preemption after preemption does not pile
// them up in a cache folder whose limit counts them.
TEST(NodeMetrics, StartingToPublishFoldsTheFilesOfKilledProcesses) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  Counter& c = GetCounter("/test/node/killed");
  for (int child = 0; child < 3; ++child) {
    const pid_t pid = SpawnPublishingChild(folder, [&] { c.Add(5); });
    ASSERT_GT(pid, 0);
    Kill(pid);
    EXPECT_LE(ProcessFiles(folder), 1) << "each child folds the ones killed before it";
  }
  auto publication = NodePublication::Start(folder);
  ASSERT_TRUE(publication.ok());
  EXPECT_EQ(ProcessFiles(folder), 1) << "this process's own";
  auto read = ReadNodeMetrics(folder);
  ASSERT_TRUE(read.ok());
  // Each child counted 5 after it started publishing; this process nothing since.
  EXPECT_EQ(Value(*read, "/test/node/killed"), 15) << "nothing counted is lost";
}

// Two live processes: a gauge that is each one's share is summed, one that is a setting each
// has (metrics::AcrossProcesses::kLargest: the cache_limit) is the largest, not the sum.
TEST(NodeMetrics, SharesAreSummedAndSettingsAreTheLargest) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  fs::create_directories(folder);
  std::vector<MetricsFileWriter> writers;
  for (const int64_t n : {1, 2}) {
    auto writer = MetricsFileWriter::Create(folder, "reader");
    ASSERT_TRUE(writer.ok());
    writer->Publish({{.name = "/test/node/share", .gauge = true, .value = 3 * n},
                     {.name = "/test/node/setting",
                      .gauge = true,
                      .value = 100 * n,
                      .across = AcrossProcesses::kLargest}},
                    {});
    writers.push_back(std::move(*writer));
  }
  auto node = ReadNodeMetrics(folder);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  ASSERT_EQ(node->processes.size(), 2u);
  EXPECT_EQ(Value(*node, "/test/node/share"), 9);
  EXPECT_EQ(Value(*node, "/test/node/setting"), 200);
  EXPECT_TRUE(node->gauges.contains("/test/node/setting"));
}

// A crash between writing the totals and removing the folded file: the file is recognised as
// counted and removed, not counted again.
TEST(NodeMetrics, AFileTheTotalsAlreadyHoldIsNotCountedTwice) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  fs::create_directories(folder);
  auto writer = MetricsFileWriter::Create(folder, "gone");
  ASSERT_TRUE(writer.ok());
  writer->Publish({{.name = "/test/node/twice", .gauge = false, .value = 11}}, {});
  const std::string name = writer->path().filename().string();
  ASSERT_TRUE(WriteFileAtomically(
                  folder / "totals.json",
                  R"({"counters": {"/test/node/twice": 11}, "folded": [")" + name + R"("]})")
                  .ok());
  writer->Close();  // unlocked, as after its process died
  auto node = ReadNodeMetrics(folder);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(Value(*node, "/test/node/twice"), 11);
  EXPECT_EQ(ProcessFiles(folder), 0);
  // The name is remembered until a listing no longer shows the file.
  auto next = ReadNodeMetrics(folder);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(Value(*next, "/test/node/twice"), 11);
  auto text = ReadFileToString(folder / "totals.json");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"folded\":[]"), std::string::npos) << *text;
}

TEST(NodeMetrics, DamagedTotalsAreAnErrorNamingTheFile) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  fs::create_directories(folder);
  std::ofstream(folder / "totals.json") << "{not json";
  auto node = ReadNodeMetrics(folder);
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(node.status().message().find((folder / "totals.json").string()), std::string::npos);
}

}  // namespace
}  // namespace ferry::metrics

namespace ferry::metrics {
namespace {

// A child that publishes to its parent's folder itself, and drops the publication it inherited,
// keeps its own: what it counts after is not lost.
TEST(NodeMetrics, AChildDroppingItsInheritedPublicationKeepsItsOwn) {
  testing::TempDir tmp;
  const fs::path folder = tmp / "metrics";
  Counter& c = GetCounter("/test/node/inherited");
  auto parent = NodePublication::Start(folder);
  ASSERT_TRUE(parent.ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto own = NodePublication::Start(folder);
    if (!own.ok()) ::_exit(2);
    *parent = NodePublication();  // the parent's copy: not this process's to release
    c.Add(5);
    FlushNodeMetrics();
    ::_exit(0);  // as a worker ends: no release, no exit hooks
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto node = ReadNodeMetrics(folder);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->exited.at("/test/node/inherited"), 5);
}

}  // namespace
}  // namespace ferry::metrics
