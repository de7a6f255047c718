// Private to kernels/, built only with oneDNN (NPU_SIM_HAVE_DNNL): the process's oneDNN CPU engine and what
// each AI-core thread keeps for its oneDNN calls (dnnl_matmul.cpp, dnnl_conv.cpp).
#pragma once

#include <omp.h>

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>
#include <string>
#include <vector>

namespace npu_kernels {
namespace detail {

const dnnl::engine& dnnl_engine();  // one CPU engine for the process (defined in dnnl_matmul.cpp)

// "onednn <major>.<minor>.<patch>" of the loaded library, as the library names report it.
inline std::string dnnl_version_name() {
  const dnnl_version_t* v = dnnl_version();
  return "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

// A core thread's oneDNN stream and scratch buffers (operands in oneDNN's layouts, scratchpads; grown,
// never shrunk). Creating it holds OpenMP to one thread in this thread, so oneDNN runs each call on the
// calling core thread alone: the AI-core pool is the parallelism. Nothing in it is shared between threads.
struct DnnlCoreThread {
  dnnl::stream stream;
  std::vector<unsigned char> buf[6];
  DnnlCoreThread() : stream(dnnl_engine()) { omp_set_num_threads(1); }
  void* take(int i, std::size_t bytes) {
    if (buf[i].size() < bytes) buf[i].resize(bytes);
    return buf[i].data();
  }
  static DnnlCoreThread& mine() {
    thread_local DnnlCoreThread t;
    return t;
  }
};

}  // namespace detail
}  // namespace npu_kernels
