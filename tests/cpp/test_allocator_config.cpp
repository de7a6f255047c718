// Tests of PYTORCH_NPU_ALLOC_CONF parsing, request rounding and size formatting (no device work).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "allocator/alloc_config.h"
#include "allocator/caching_allocator.h"

using namespace npu_alloc;

namespace {
constexpr std::size_t kMiB = 1024 * 1024;

std::string config_error(const std::string& conf) {
  try {
    parse_alloc_conf(conf);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }
}  // namespace

TEST(AllocConfig, EmptyIsDefaults) {
  for (const char* s : {"", "   ", ","}) {
    AllocConfig c = parse_alloc_conf(s);
    EXPECT_EQ(c.max_split_size, std::numeric_limits<std::size_t>::max());
    EXPECT_EQ(c.garbage_collection_threshold, 0.0);
    EXPECT_EQ(c.roundup_power2_divisions, 0u);
    EXPECT_EQ(c.max_non_split_rounding, 20 * kMiB);
    EXPECT_FALSE(c.expandable_segments);
    EXPECT_TRUE(c.caching_enabled);
  }
}

TEST(AllocConfig, ValidOptionsWithWhitespace) {
  AllocConfig c = parse_alloc_conf(
      " max_split_size_mb : 128 ,garbage_collection_threshold:0.6, roundup_power2_divisions:4 ,"
      "max_non_split_rounding_mb:64,expandable_segments:False ");
  EXPECT_EQ(c.max_split_size, 128 * kMiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.6);
  EXPECT_EQ(c.roundup_power2_divisions, 4u);
  EXPECT_EQ(c.max_non_split_rounding, 64 * kMiB);
  EXPECT_FALSE(c.expandable_segments);
  EXPECT_TRUE(parse_alloc_conf("expandable_segments:True").expandable_segments);
  EXPECT_EQ(parse_alloc_conf("max_split_size_mb:21").max_split_size, 21 * kMiB);
}

TEST(AllocConfig, UnknownKeyListsValidKeys) {
  std::string e = config_error("max_split_size_mb:100,foo:1");
  EXPECT_TRUE(contains(e, "PYTORCH_NPU_ALLOC_CONF")) << e;
  EXPECT_TRUE(contains(e, "'foo'")) << e;
  for (const char* k : {"max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions",
                        "max_non_split_rounding_mb", "expandable_segments"}) {
    EXPECT_TRUE(contains(e, k)) << e;
  }
  EXPECT_TRUE(contains(config_error("max_split_size_mb"), "no value")) << config_error("max_split_size_mb");
}

TEST(AllocConfig, NonNumericValues) {
  for (const char* s : {"max_split_size_mb:abc", "max_split_size_mb:", "max_split_size_mb:-30",
                        "max_split_size_mb:30.5", "roundup_power2_divisions:x", "max_non_split_rounding_mb:1e3"}) {
    std::string e = config_error(s);
    EXPECT_TRUE(contains(e, "PYTORCH_NPU_ALLOC_CONF")) << s << " -> " << e;
    EXPECT_TRUE(contains(e, "integer")) << s << " -> " << e;
  }
  std::string e = config_error("garbage_collection_threshold:half");
  EXPECT_TRUE(contains(e, "garbage_collection_threshold")) << e;
  EXPECT_TRUE(contains(e, "'half'")) << e;
}

TEST(AllocConfig, MaxSplitSizeMustExceed20) {
  for (const char* s : {"max_split_size_mb:20", "max_split_size_mb:0", "max_split_size_mb:5"}) {
    std::string e = config_error(s);
    EXPECT_TRUE(contains(e, "max_split_size_mb must be > 20 (MiB)")) << e;
    EXPECT_TRUE(contains(e, "PYTORCH_NPU_ALLOC_CONF")) << e;
  }
}

TEST(AllocConfig, ThresholdRange) {
  for (const char* s : {"garbage_collection_threshold:0", "garbage_collection_threshold:1",
                        "garbage_collection_threshold:1.5", "garbage_collection_threshold:-0.2"}) {
    std::string e = config_error(s);
    EXPECT_TRUE(contains(e, "garbage_collection_threshold")) << e;
    EXPECT_TRUE(contains(e, "(0, 1)")) << e;
  }
}

TEST(AllocConfig, RoundupDivisionsPowerOfTwo) {
  for (const char* s : {"roundup_power2_divisions:3", "roundup_power2_divisions:0", "roundup_power2_divisions:12"}) {
    std::string e = config_error(s);
    EXPECT_TRUE(contains(e, "roundup_power2_divisions must be a power of two")) << e;
  }
  EXPECT_EQ(parse_alloc_conf("roundup_power2_divisions:1").roundup_power2_divisions, 1u);
  EXPECT_EQ(parse_alloc_conf("roundup_power2_divisions:16").roundup_power2_divisions, 16u);
}

TEST(AllocConfig, ExpandableSegmentsConflicts) {
  std::string e = config_error("expandable_segments:True,max_split_size_mb:100");
  EXPECT_TRUE(contains(e, "expandable_segments")) << e;
  EXPECT_TRUE(contains(e, "max_split_size_mb")) << e;
  e = config_error("garbage_collection_threshold:0.5, expandable_segments:True");
  EXPECT_TRUE(contains(e, "garbage_collection_threshold")) << e;
  EXPECT_TRUE(contains(e, "expandable_segments")) << e;
  e = config_error("expandable_segments:yes");
  EXPECT_TRUE(contains(e, "True or False")) << e;
  // False combines with anything.
  EXPECT_NO_THROW(parse_alloc_conf("expandable_segments:False,max_split_size_mb:100"));
}

TEST(AllocConfig, FromEnv) {
  ::setenv("PYTORCH_NPU_ALLOC_CONF", "max_split_size_mb:64", 1);
  ::unsetenv("PYTORCH_NO_NPU_MEMORY_CACHING");
  AllocConfig c = alloc_config_from_env();
  EXPECT_EQ(c.max_split_size, 64 * kMiB);
  EXPECT_TRUE(c.caching_enabled);
  ::setenv("PYTORCH_NO_NPU_MEMORY_CACHING", "1", 1);
  EXPECT_FALSE(alloc_config_from_env().caching_enabled);
  ::setenv("PYTORCH_NO_NPU_MEMORY_CACHING", "0", 1);
  EXPECT_TRUE(alloc_config_from_env().caching_enabled);
  ::setenv("PYTORCH_NPU_ALLOC_CONF", "bogus:1", 1);
  EXPECT_THROW(alloc_config_from_env(), ConfigError);
  ::unsetenv("PYTORCH_NPU_ALLOC_CONF");
  ::unsetenv("PYTORCH_NO_NPU_MEMORY_CACHING");
}

TEST(AllocRounding, RoundSize) {
  EXPECT_EQ(round_size(0), 512u);
  EXPECT_EQ(round_size(1), 512u);
  EXPECT_EQ(round_size(512), 512u);
  EXPECT_EQ(round_size(513), 1024u);
  EXPECT_EQ(round_size(1000), 1024u);
  EXPECT_EQ(round_size(kMiB + 1), kMiB + 512);
}

TEST(AllocRounding, FormatSize) {
  EXPECT_EQ(format_size(100), "100.00 B");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
  EXPECT_EQ(format_size(2 * kMiB), "2.00 MiB");
  EXPECT_EQ(format_size(512 * kMiB), "512.00 MiB");
  EXPECT_EQ(format_size(16ull << 30), "16.00 GiB");
}
