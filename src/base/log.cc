#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <memory>

namespace ferry {

spdlog::logger& Log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>(
        "ferry", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [ferry] [%l] %v");
    spdlog::level::level_enum level = spdlog::level::warn;
    if (const char* env = std::getenv("FERRY_LOG"); env != nullptr && *env != '\0') {
      level = spdlog::level::from_str(env);  // unknown names mean "off"
    }
    l->set_level(level);
    return l;
  }();
  return *logger;
}

}  // namespace ferry
