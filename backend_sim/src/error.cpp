// Status names, the thread-local last-error detail and the fail() helpers behind the check macros.
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "internal.h"

namespace npu_sim {
namespace {
// Each thread sees only its own last error, like cudaGetLastError's detail; no sharing, no lock.
thread_local std::string t_last_error;
}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kSuccess: return "kSuccess";
    case Status::kInvalidValue: return "kInvalidValue";
    case Status::kInvalidDevice: return "kInvalidDevice";
    case Status::kOutOfMemory: return "kOutOfMemory";
    case Status::kNotReady: return "kNotReady";
    case Status::kKernelError: return "kKernelError";
    case Status::kInvalidHandle: return "kInvalidHandle";
    case Status::kInternal: return "kInternal";
    case Status::kNotSupported: return "kNotSupported";
    case Status::kCommError: return "kCommError";
  }
  return "kUnknownStatus";
}

std::string last_error_message() { return t_last_error; }

Status invalid_value(std::string detail) { return detail::fail_msg(Status::kInvalidValue, std::move(detail)); }

namespace detail {

Status fail(Status s, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  t_last_error = buf;
  return s;
}

Status fail_msg(Status s, std::string msg) {
  t_last_error = std::move(msg);
  return s;
}

Status async_status(Status s) {
  const bool known = std::strcmp(status_name(s), "kUnknownStatus") != 0;
  return (!known || s == Status::kSuccess || s == Status::kNotReady) ? Status::kKernelError : s;
}

}  // namespace detail
}  // namespace npu_sim
