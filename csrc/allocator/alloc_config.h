// Parsing of PYTORCH_NPU_ALLOC_CONF / PYTORCH_NO_NPU_MEMORY_CACHING into the allocator's settings.
#pragma once

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace npu_alloc {

struct AllocConfig {
  // Blocks larger than this are never split (and oversize requests are not served from bigger
  // cached blocks). Default: unlimited, as on CUDA.
  std::size_t max_split_size = std::numeric_limits<std::size_t>::max();
  // 0 disables; otherwise, when reserved memory exceeds threshold * allowed memory, cached blocks that
  // have been unused longest are released before a device malloc.
  double garbage_collection_threshold = 0.0;
  // 0 disables; otherwise requests round up to one of this many divisions of their power-of-two interval.
  std::size_t roundup_power2_divisions = 0;
  // Oversize requests round up to max_non_split_rounding bytes at most when reusing a larger block.
  std::size_t max_non_split_rounding = 20u << 20;
  bool expandable_segments = false;  // accepted and validated; segments are not expandable in the sim
  bool caching_enabled = true;       // false with PYTORCH_NO_NPU_MEMORY_CACHING=1
};

// Thrown for a malformed configuration string; what() names the option and what was expected, e.g.
// "PYTORCH_NPU_ALLOC_CONF: unknown option 'foo' (expected one of max_split_size_mb, ...)".
struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Parses "key:value,key:value". Keys: max_split_size_mb (> 20), garbage_collection_threshold (0 < t < 1),
// roundup_power2_divisions (power of two), max_non_split_rounding_mb, expandable_segments (True/False).
// Like torch_npu, expandable_segments:True combined with max_split_size_mb or
// garbage_collection_threshold is refused.
AllocConfig parse_alloc_conf(const std::string& conf);
// Reads PYTORCH_NPU_ALLOC_CONF and PYTORCH_NO_NPU_MEMORY_CACHING from the environment.
AllocConfig alloc_config_from_env();

}  // namespace npu_alloc
