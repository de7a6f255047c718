// Environment parsing for the collective library (see hccl_config.h); malformed values are errors, not
// silently ignored.
#include "hccl_config.h"

#include <cstdlib>
#include <string>

namespace hccl_sim {

namespace {

long long env_int(const char* name, long long fallback, long long lo, long long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    throw CommError(std::string(name) + "='" + v + "': expected an integer in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
  }
  return x;
}

}  // namespace

const char* transport_kind_name(TransportKind k) {
  switch (k) {
    case TransportKind::kAuto: return "auto";
    case TransportKind::kShm: return "shm";
    case TransportKind::kTcp: return "tcp";
  }
  return "?";
}

HcclConfig HcclConfig::from_env() {
  HcclConfig c;
  if (const char* a = std::getenv("HCCL_ALGO")) c.algo = parse_algo(a);
  c.exec_timeout = std::chrono::seconds(env_int("HCCL_EXEC_TIMEOUT", 0, 0, 1LL << 31));
  c.connect_timeout = std::chrono::seconds(env_int("HCCL_CONNECT_TIMEOUT", 120, 1, 1LL << 31));
  const long long mb = env_int("HCCL_BUFFSIZE", 4, 1, 4096);
  std::size_t ring = 1u << 20;
  while (ring < static_cast<std::size_t>(mb) << 20) ring <<= 1;  // round up to a power of two
  c.ring_bytes = ring;
  c.peer_read = env_int("NPU_SIM_HCCL_PEER_READ", 1, 0, 1) == 1;
  if (const char* t = std::getenv("NPU_SIM_HCCL_TRANSPORT")) {
    const std::string v = t;
    if (v == "shm") c.transport = TransportKind::kShm;
    else if (v == "tcp") c.transport = TransportKind::kTcp;
    else if (v.empty() || v == "auto") c.transport = TransportKind::kAuto;
    else throw CommError("NPU_SIM_HCCL_TRANSPORT='" + v + "': expected shm, tcp or auto");
  }
  return c;
}

}  // namespace hccl_sim
