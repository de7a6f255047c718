// Owns parsing of PYTORCH_NPU_ALLOC_CONF / PYTORCH_NO_NPU_MEMORY_CACHING into an AllocConfig.
#include "allocator/alloc_config.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

namespace npu_alloc {
namespace {

constexpr const char* kEnvConf = "PYTORCH_NPU_ALLOC_CONF";
constexpr const char* kValidKeys =
    "max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions, "
    "max_non_split_rounding_mb, expandable_segments";
constexpr std::size_t kMiB = 1024 * 1024;

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

[[noreturn]] void fail(const std::string& what) {
  throw ConfigError(std::string(kEnvConf) + ": " + what);
}

// Strict non-negative decimal integer (no sign, no fraction, no trailing garbage).
std::size_t parse_uint(const std::string& key, const std::string& value, const char* unit) {
  const std::string expected = std::string(key) + " expects a non-negative integer" + unit +
                               ", got '" + value + "'";
  if (value.empty()) fail(expected);
  for (char c : value) {
    if (!std::isdigit(static_cast<unsigned char>(c))) fail(expected);
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (errno == ERANGE || end != value.c_str() + value.size()) fail(key + " value '" + value + "' is out of range");
  return static_cast<std::size_t>(v);
}

double parse_double(const std::string& key, const std::string& value) {
  const std::string expected = key + " expects a number in (0, 1), got '" + value + "'";
  if (value.empty()) fail(expected);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (errno == ERANGE || end != value.c_str() + value.size()) fail(expected);
  return v;
}

std::size_t mib_to_bytes(const std::string& key, std::size_t mib) {
  if (mib > std::numeric_limits<std::size_t>::max() / kMiB) fail(key + " value " + std::to_string(mib) + " MiB is too large");
  return mib * kMiB;
}

}  // namespace

AllocConfig parse_alloc_conf(const std::string& conf) {
  AllocConfig cfg;
  bool saw_max_split = false;
  bool saw_gc = false;

  std::size_t start = 0;
  while (start <= conf.size()) {
    std::size_t comma = conf.find(',', start);
    if (comma == std::string::npos) comma = conf.size();
    const std::string token = trim(conf.substr(start, comma - start));
    start = comma + 1;
    if (token.empty()) continue;  // tolerate "a:1,,b:2" and a trailing comma

    const std::size_t colon = token.find(':');
    if (colon == std::string::npos) {
      fail("option '" + token + "' has no value (expected key:value with key one of " + kValidKeys + ")");
    }
    const std::string key = trim(token.substr(0, colon));
    const std::string value = trim(token.substr(colon + 1));

    if (key == "max_split_size_mb") {
      const std::size_t mb = parse_uint(key, value, " (MiB)");
      if (mb <= 20) fail("max_split_size_mb must be > 20 (MiB), got '" + value + "'");
      cfg.max_split_size = mib_to_bytes(key, mb);
      saw_max_split = true;
    } else if (key == "garbage_collection_threshold") {
      const double t = parse_double(key, value);
      if (!(t > 0.0 && t < 1.0)) fail("garbage_collection_threshold must be in (0, 1), got '" + value + "'");
      cfg.garbage_collection_threshold = t;
      saw_gc = true;
    } else if (key == "roundup_power2_divisions") {
      const std::size_t d = parse_uint(key, value, "");
      if (d == 0 || (d & (d - 1)) != 0) {
        fail("roundup_power2_divisions must be a power of two, got '" + value + "'");
      }
      cfg.roundup_power2_divisions = d;
    } else if (key == "max_non_split_rounding_mb") {
      cfg.max_non_split_rounding = mib_to_bytes(key, parse_uint(key, value, " (MiB)"));
    } else if (key == "expandable_segments") {
      if (value == "True") {
        cfg.expandable_segments = true;
      } else if (value == "False") {
        cfg.expandable_segments = false;
      } else {
        fail("expandable_segments expects True or False, got '" + value + "'");
      }
    } else {
      fail("unknown option '" + key + "' (expected one of " + kValidKeys + ")");
    }
  }

  if (cfg.expandable_segments && saw_max_split) {
    fail("expandable_segments:True cannot be combined with max_split_size_mb");
  }
  if (cfg.expandable_segments && saw_gc) {
    fail("expandable_segments:True cannot be combined with garbage_collection_threshold");
  }
  return cfg;
}

AllocConfig alloc_config_from_env() {
  const char* conf = std::getenv(kEnvConf);
  AllocConfig cfg = parse_alloc_conf(conf ? std::string(conf) : std::string());
  if (const char* nc = std::getenv("PYTORCH_NO_NPU_MEMORY_CACHING")) {
    std::string v = trim(nc);
    for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "1" || v == "true" || v == "yes" || v == "on") cfg.caching_enabled = false;
  }
  return cfg;
}

}  // namespace npu_alloc
