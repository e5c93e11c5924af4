#include "storage/env_lookup.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "storage/testing/fake_env_testutil.h"

namespace ferry {
namespace {

TEST(ProcessEnv, ReadsTheEnvironmentAndTakesEmptyForUnset) {
  constexpr const char* kName = "FERRY_ENV_LOOKUP_TEST";
  ::unsetenv(kName);
  EXPECT_EQ(ProcessEnv(kName), std::nullopt);
  ::setenv(kName, "", 1);
  EXPECT_EQ(ProcessEnv(kName), std::nullopt);
  ::setenv(kName, "a value=with spaces", 1);
  EXPECT_EQ(ProcessEnv(kName), "a value=with spaces");
  ::unsetenv(kName);
}

TEST(EnvFingerprint, NamesEveryVariableAndChangesWithAnyValue) {
  constexpr const char* kNames[] = {"A", "B"};
  testing::FakeEnv env{{"A", "1"}};
  EXPECT_EQ(EnvFingerprint(kNames, env), "\nA=1\nB=");
  const std::string before = EnvFingerprint(kNames, env);
  env.Set("B", "2");
  EXPECT_EQ(EnvFingerprint(kNames, env), "\nA=1\nB=2");
  env.Set("C", "ignored");
  EXPECT_EQ(EnvFingerprint(kNames, env), "\nA=1\nB=2");
  EXPECT_NE(EnvFingerprint(kNames, env), before);
}

TEST(FakeEnv, AnswersFromItsValuesOnlyAsProcessEnvWould) {
  ::setenv("FERRY_ENV_LOOKUP_TEST", "from the process", 1);
  testing::FakeEnv fake{{"SET", "x"}, {"EMPTY", ""}};
  const EnvLookup env = fake;
  EXPECT_EQ(env("SET"), "x");
  EXPECT_EQ(env("EMPTY"), std::nullopt);
  EXPECT_EQ(env("FERRY_ENV_LOOKUP_TEST"), std::nullopt);
  EXPECT_EQ(env("set"), std::nullopt);  // names are case-sensitive, as in the environment
  ::unsetenv("FERRY_ENV_LOOKUP_TEST");
  // A lookup made earlier keeps the values of its moment.
  fake.Set("SET", "y");
  fake.Unset("EMPTY");
  EXPECT_EQ(env("SET"), "x");
  EXPECT_EQ(EnvLookup(fake)("SET"), "y");
}

}  // namespace
}  // namespace ferry
