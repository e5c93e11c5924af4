#include "stream/stream_peers.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "storage/peer_store.h"

namespace ferry::internal_stream {
namespace {

PeerOptions Node(std::vector<std::string> addresses, std::string self) {
  return {.addresses = std::move(addresses), .self = std::move(self), .token = "t0ken"};
}

TEST(ResolvePeersTest, KeepsEachNodeOnceAtItsFirstPlace) {
  auto resolved =
      ResolvePeers(Node({"n1:7791", "n0:7791", "n1:7791", "n2:7791", "n0:7791"}, "n1:7791"));
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->addresses, (std::vector<std::string>{"n1:7791", "n0:7791", "n2:7791"}));
}

TEST(ResolvePeersTest, RefusesASelfNotAmongThePeersAndNoToken) {
  auto stranger = ResolvePeers(Node({"n0:7791", "n1:7791"}, "n9:7791"));
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stranger.status().message().find("n9:7791 is not among them"), std::string::npos)
      << stranger.status().ToString();
  PeerOptions tokenless = Node({"n0:7791"}, "n0:7791");
  tokenless.token.clear();
  if (std::getenv("FERRY_PEER_TOKEN") == nullptr) {
    EXPECT_EQ(ResolvePeers(tokenless).status().code(), StatusCode::kInvalidArgument);
  }
}

// Every file has exactly one owner among the nodes, whichever order or repeats their lists
// have, and it is the first in RendezvousOrder (the one the other nodes ask).
TEST(OwnedByThisNodeTest, EachFileHasOneOwnerTheFirstOfTheOrder) {
  const std::vector<std::vector<std::string>> lists = {
      {"n0:7791", "n1:7791", "n2:7791", "n3:7791"},
      {"n3:7791", "n1:7791", "n3:7791", "n0:7791", "n2:7791"},
      {"n2:7791", "n2:7791", "n0:7791", "n1:7791", "n3:7791", "n1:7791"},
      {"n1:7791", "n0:7791", "n3:7791", "n2:7791"}};
  std::vector<std::function<bool(std::string_view)>> owns;
  for (size_t n = 0; n < lists.size(); ++n) {
    // Node n reads its own list; each list names the same four nodes.
    auto resolved = ResolvePeers(Node(lists[n], fmt::format("n{}:7791", n)));
    ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
    owns.push_back(OwnedByThisNode(*resolved));
  }
  const std::vector<std::string>& peers = lists[0];
  for (int k = 0; k < 2000; ++k) {
    const std::string name = fmt::format("shard.{:05}.mds.zstd", k);
    int owners = 0;
    for (size_t n = 0; n < owns.size(); ++n) {
      if (!owns[n](name)) continue;
      ++owners;
      EXPECT_EQ(peers[RendezvousOrder(peers, name).front()], fmt::format("n{}:7791", n)) << name;
    }
    EXPECT_EQ(owners, 1) << name;
  }
}

}  // namespace
}  // namespace ferry::internal_stream
