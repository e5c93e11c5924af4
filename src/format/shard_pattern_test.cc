#include "format/shard_pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::internal_format {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Names = std::vector<std::string>;

Names Expand(std::string_view pattern) {
  auto names = ExpandBraces(pattern);
  EXPECT_TRUE(names.ok()) << pattern << ": " << names.status().ToString();
  return names.ok() ? *names : Names{};
}

// braceexpand 0.1.7's own cases (its test suite and docstring): what WebDataset expands.
TEST(ExpandBraces, ExpandsAsBraceexpandDoes) {
  const std::vector<std::pair<std::string, Names>> cases = {
      {"{1,2}", {"1", "2"}},
      {"{1}", {"{1}"}},
      {"{1,2{}}", {"1", "2{}"}},
      {"}{", {"}{"}},
      {"a{b,c}d{e,f}", {"abde", "abdf", "acde", "acdf"}},
      {"a{b,c{d,e,}}", {"ab", "acd", "ace", "ac"}},
      {"a{b,{c,{d,e}}}", {"ab", "ac", "ad", "ae"}},
      {"{{a,b},{c,d}}", {"a", "b", "c", "d"}},
      {"{7..10}", {"7", "8", "9", "10"}},
      {"{10..7}", {"10", "9", "8", "7"}},
      {"{1..5..2}", {"1", "3", "5"}},
      {"{5..1..2}", {"5", "3", "1"}},
      {"{1..3..0}", {"1", "2", "3"}},
      {"{07..10}", {"07", "08", "09", "10"}},
      {"{7..010}", {"007", "008", "009", "010"}},
      {"{2..-1}", {"2", "1", "0", "-1"}},
      {"{-01..1}", {"-01", "000", "001"}},
      {"{a..e}", {"a", "b", "c", "d", "e"}},
      {"{a..e..2}", {"a", "c", "e"}},
      {"{e..a}", {"e", "d", "c", "b", "a"}},
      {"{e..a..2}", {"e", "c", "a"}},
      {"{C..A}", {"C", "B", "A"}},
      {"{1..a}", {"{1..a}"}},
      {"{a..1}", {"{a..1}"}},
      {"{1..1}", {"1"}},
      {"{a..a}", {"a"}},
      {"{,}", {"", ""}},
      {"{Z..a}", {"Z", "a"}},
      {"{a..Z}", {"a", "Z"}},
      {"python{2.{5..7},3.{2,3}}",
       {"python2.5", "python2.6", "python2.7", "python3.2", "python3.3"}},
      {"index.html{,.backup}", {"index.html", "index.html.backup"}},
      {R"({1\{2,3})", {"1{2", "3"}},
      {R"({1\,2})", {"{1,2}"}},
      {R"({\,1,2})", {",1", "2"}},
      {R"(\\{1,2})", {R"(\1)", R"(\2)"}},
      {"train-{000000..000003}.tar",
       {"train-000000.tar", "train-000001.tar", "train-000002.tar", "train-000003.tar"}},
  };
  for (const auto& [pattern, want] : cases) EXPECT_EQ(Expand(pattern), want) << pattern;
}

TEST(ExpandBraces, UnbalancedBracesAndHugeRangesAreErrors) {
  for (std::string_view pattern : {"{1{2,3}", "{{1,2}", "{1,2}}", "{1,{2", "{1,2}{"}) {
    auto names = ExpandBraces(pattern);
    ASSERT_FALSE(names.ok()) << pattern;
    EXPECT_EQ(names.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(names.status().message(), HasSubstr("unbalanced braces")) << pattern;
  }
  for (std::string_view pattern :
       {"x{0..99999999}", "{0..999}{0..9999}", "{1..99999999999999999999}"}) {
    auto names = ExpandBraces(pattern);
    ASSERT_FALSE(names.ok()) << pattern;
    EXPECT_THAT(names.status().message(), HasSubstr("at most")) << pattern;
  }
}

TEST(ShardPattern, TellsAPatternFromAFolder) {
  EXPECT_TRUE(IsShardPattern("s3://b/laion/train-{000000..000127}.tar"));
  EXPECT_TRUE(IsShardPattern("s3://b/laion/a.tar::s3://b/laion/b.tar"));
  EXPECT_FALSE(IsShardPattern("s3://b/laion/"));
  EXPECT_FALSE(IsShardPattern("s3://b/{laion}/"));
  EXPECT_FALSE(IsShardPattern(R"(/data/x\{1,2}.tar)"));
  EXPECT_FALSE(IsShardPattern("http://[::1]:8080/data/"));
}

TEST(ShardPattern, SplitsIntoTheFolderAndItsShardNames) {
  auto one = ParseShardPattern("s3://b/laion/train-{000..002}.tar");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->folder, "s3://b/laion/");
  EXPECT_THAT(one->shards, ElementsAre("train-000.tar", "train-001.tar", "train-002.tar"));

  auto list = ParseShardPattern("s3://b/x/b.tar::s3://b/x/a-{1,2}.tar.gz::http://[::1]:9/x/c.tar");
  ASSERT_FALSE(list.ok()) << "a third folder";
  EXPECT_THAT(list.status().message(), HasSubstr("more than one folder"));
  list = ParseShardPattern("http://[::1]:9/x/b.tar::http://[::1]:9/x/a-{1,2}.tar.gz");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->folder, "http://[::1]:9/x/");
  EXPECT_THAT(list->shards, ElementsAre("b.tar", "a-1.tar.gz", "a-2.tar.gz"));

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"s3://b/{x,y}/a.tar", "braces in the folder part"},
      {"s3://b/x/{a/b,c}.tar", "is not a shard name"},
      {"s3://b/x/{a,}.tar::s3://b/x/{,}", "is not a shard name"},
      {"s3://b/x/{a,a}.tar", "twice"},
      {"{a,b}.tar", "no folder"},
      {"s3://b/x/{a,b.tar", ""},
  };
  for (const auto& [url, says] : bad) {
    auto selection = ParseShardPattern(url);
    ASSERT_FALSE(selection.ok()) << url;
    EXPECT_EQ(selection.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(selection.status().message(), HasSubstr(says)) << url;
  }
}

}  // namespace
}  // namespace ferry::internal_format
