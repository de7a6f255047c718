// Fractional max pooling kernels (see npu_kernels/fractional_pool.h): one implementation for 2-D (depth 1) and 3-D,
// work split over whole (n, c) planes so each block generates its planes' windows and, backward, owns its planes'
// gradient (deterministic, no atomics).
#include "npu_kernels/fractional_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "npu_kernels/float_dispatch.h"
#include "npu_kernels/launch.h"
#include "scalar_t_math.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

using namespace detail::scalar_t_math;  // scalar_t arithmetic, as CPU's kernels

// The int CPU truncates to; false when the value has none (NaN, inf, beyond the int range).
template <typename T>
bool trunc_int(T v, int64_t* out) {
  const double d = static_cast<double>(wide(v));
  if (!(std::fabs(d) < 2147483648.0)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

// CPU's generate_intervals in T; throws when a window would leave [0, in).
template <typename T>
void intervals(T sample, int64_t in, int64_t out, int64_t k, const char* op, const char* dim,
               std::vector<int64_t>& seq) {
  seq.assign(static_cast<size_t>(out), 0);
  if (out > 1) {
    const T alpha = div(from_int<T>(in - k), from_int<T>(out - 1));
    int64_t base = 0;
    bool ok = trunc_int(mul(sample, alpha), &base);
    for (int64_t i = 0; ok && i < out - 1; ++i) {
      int64_t v = 0;
      ok = trunc_int(mul(add(from_int<T>(i), sample), alpha), &v);
      seq[static_cast<size_t>(i)] = v - base;
    }
    if (!ok) {
      throw npu_sim::KernelError(std::string(op) + ": random sample " + std::to_string(wide(sample)) +
                                 " gives no window start along " + dim);
    }
  }
  seq[static_cast<size_t>(out - 1)] = in - k;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t s = seq[static_cast<size_t>(i)];
    if (s < 0 || s + k > in) {
      throw npu_sim::KernelError(std::string(op) + ": random sample " + std::to_string(wide(sample)) +
                                 " places window " + std::to_string(i) + " of " + dim + " at " + std::to_string(s) +
                                 ", outside the input size " + std::to_string(in) + " for kernel " +
                                 std::to_string(k));
    }
  }
}

bool valid_sizes(const FractionalPoolArgs& a) {
  const int64_t s[] = {a.planes, a.in_t, a.in_h, a.in_w, a.out_t, a.out_h, a.out_w};
  for (int64_t v : s) {
    if (v < 0) return false;
  }
  if (!a.three_d && (a.in_t != 1 || a.out_t != 1 || a.kernel_t != 1)) return false;
  const int64_t in[] = {a.in_t, a.in_h, a.in_w}, out[] = {a.out_t, a.out_h, a.out_w},
                k[] = {a.kernel_t, a.kernel_h, a.kernel_w};
  for (int d = 0; d < 3; ++d) {
    if (k[d] < 1) return false;
    if (out[d] > 0 && out[d] + k[d] - 1 > in[d]) return false;
  }
  return true;
}

}  // namespace

Status fractional_max_pool_forward(npu_sim::Stream stream, const FractionalPoolArgs& a, const void* input,
                                   const void* random_samples, void* output, int64_t* indices) {
  if (!valid_sizes(a)) return Status::kInvalidValue;
  const int64_t out_plane = a.out_t * a.out_h * a.out_w;
  if (a.planes * out_plane == 0) {
    return a.dtype == DType::kFloat32 || a.dtype == DType::kFloat64 || a.dtype == DType::kFloat16 ||
                   a.dtype == DType::kBFloat16
               ? Status::kSuccess
               : Status::kInvalidValue;
  }
  if (!input || !random_samples || !output || !indices) return Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t window = a.kernel_t * a.kernel_h * a.kernel_w;
    const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, out_plane * window));
    const char* name = a.three_d ? "fractional_max_pool3d" : "fractional_max_pool2d";
    return parallel_for(stream, name, a.planes, grain,
                        [=](int64_t p0, int64_t p1, const npu_sim::BlockContext& ctx) {
      const T* in = static_cast<const T*>(input);
      const T* samples = static_cast<const T*>(random_samples);
      T* out = static_cast<T*>(output);
      const int64_t in_plane = a.in_t * a.in_h * a.in_w, nsamples = a.three_d ? 3 : 2;
      const char* op = a.three_d ? "fractional_max_pool3d()" : "fractional_max_pool2d()";
      std::vector<int64_t> st, sh, sw;
      for (int64_t p = p0; p < p1; ++p) {
        const T* s = samples + p * nsamples;
        if (a.three_d) {
          intervals(s[0], a.in_t, a.out_t, a.kernel_t, op, "time", st);
          intervals(s[1], a.in_h, a.out_h, a.kernel_h, op, "height", sh);
          intervals(s[2], a.in_w, a.out_w, a.kernel_w, op, "width", sw);
        } else {
          st.assign(1, 0);
          intervals(s[0], a.in_w, a.out_w, a.kernel_w, op, "width", sw);
          intervals(s[1], a.in_h, a.out_h, a.kernel_h, op, "height", sh);
        }
        const T* ip = in + p * in_plane;
        T* op_ = out + p * out_plane;
        int64_t* ix = indices + p * out_plane;
        for (int64_t t = 0; t < a.out_t; ++t) {
          for (int64_t h = 0; h < a.out_h; ++h) {
            for (int64_t w = 0; w < a.out_w; ++w) {
              const int64_t t0 = st[static_cast<size_t>(t)], h0 = sh[static_cast<size_t>(h)],
                            w0 = sw[static_cast<size_t>(w)];
              acc_t<T> best = -std::numeric_limits<acc_t<T>>::infinity();
              int64_t arg = (t0 * a.in_h + h0) * a.in_w + w0;
              for (int64_t t2 = t0; t2 < t0 + a.kernel_t; ++t2) {
                for (int64_t h2 = h0; h2 < h0 + a.kernel_h; ++h2) {
                  for (int64_t w2 = w0; w2 < w0 + a.kernel_w; ++w2) {
                    const int64_t idx = (t2 * a.in_h + h2) * a.in_w + w2;
                    const acc_t<T> v = wide(ip[idx]);
                    if (v > best || std::isnan(v)) {
                      best = v;
                      arg = idx;
                    }
                  }
                }
              }
              const int64_t o = (t * a.out_h + h) * a.out_w + w;
              op_[o] = ip[arg];
              ix[o] = arg;
            }
          }
        }
      }
      // Launch records: every output's window read (and the samples), output and indices written; one compare
      // per window element.
      const int64_t es = static_cast<int64_t>(sizeof(T)), n = (p1 - p0) * out_plane;
      detail::record_vec(ctx, n * window * es + (p1 - p0) * nsamples * es, n * (es + 8), n * window);
    });
  });
}

Status fractional_max_pool_backward(npu_sim::Stream stream, const FractionalPoolArgs& a, const void* grad_output,
                                    const int64_t* indices, void* grad_input) {
  const int64_t s[] = {a.planes, a.in_t, a.in_h, a.in_w, a.out_t, a.out_h, a.out_w};
  for (int64_t v : s) {
    if (v < 0) return Status::kInvalidValue;
  }
  if (!a.three_d && (a.in_t != 1 || a.out_t != 1)) return Status::kInvalidValue;
  const int64_t in_plane = a.in_t * a.in_h * a.in_w, out_plane = a.out_t * a.out_h * a.out_w;
  if (a.planes * in_plane == 0) {
    return dispatch_fp(a.dtype, [](auto) { return Status::kSuccess; });
  }
  if (!grad_input || (out_plane > 0 && (!grad_output || !indices))) return Status::kInvalidValue;
  return dispatch_fp(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, in_plane + out_plane));
    const char* name = a.three_d ? "fractional_max_pool3d_backward" : "fractional_max_pool2d_backward";
    return parallel_for(stream, name, a.planes, grain,
                        [=](int64_t p0, int64_t p1, const npu_sim::BlockContext& ctx) {
      const T* g = static_cast<const T*>(grad_output);
      T* gi = static_cast<T*>(grad_input);
      std::fill(gi + p0 * in_plane, gi + p1 * in_plane, T(0.0f));
      for (int64_t p = p0; p < p1; ++p) {
        T* dst = gi + p * in_plane;
        const T* src = g + p * out_plane;
        const int64_t* ix = indices + p * out_plane;
        for (int64_t o = 0; o < out_plane; ++o) {
          const int64_t idx = ix[o];
          if (idx < 0 || idx >= in_plane) {
            throw npu_sim::KernelError(std::string(a.three_d ? "fractional_max_pool3d_backward()"
                                                             : "fractional_max_pool2d_backward()") +
                                       ": index " + std::to_string(idx) + " of plane " + std::to_string(p) +
                                       " is out of bounds for an input plane of " + std::to_string(in_plane) +
                                       " elements");
          }
          dst[idx] = add(dst[idx], src[o]);
        }
      }
      // Launch records: grad_output and indices read, the gradient planes zeroed and written once (the scattered
      // read-modify-writes stay in the block's buffer), one add per output.
      const int64_t es = static_cast<int64_t>(sizeof(T)), np = p1 - p0;
      detail::record_vec(ctx, np * out_plane * (es + 8), np * in_plane * es, np * out_plane);
    });
  });
}

}  // namespace npu_kernels
