// Ternary pointwise kernels: where (a select on a 1-byte condition, by element width), addcmul, addcdiv, lerp,
// prelu's input gradient.
#include <cstring>

#include "pointwise_common.h"

namespace npu_kernels {

namespace {

// An element of `bytes` bytes, moved as a whole (where selects, it never computes).
template <int bytes>
struct alignas(bytes < 16 ? bytes : 16) Bits {
  unsigned char b[bytes];
};
template <int bytes>
using word_t = std::conditional_t<bytes == 1, uint8_t, std::conditional_t<bytes == 2, uint16_t,
               std::conditional_t<bytes == 4, uint32_t, std::conditional_t<bytes == 8, uint64_t, Bits<bytes>>>>>;

// One run of where: out[i] = cond[i] ? x[i] : y[i], x and y read as words of their width; a stride-0 x or y
// (a host scalar, a broadcast) is loaded once, so the contiguous forms are a vector blend.
template <typename W>
void where_run(char* const* p, const int64_t* inner, int64_t n, bool stream) {
  const int64_t w = sizeof(W);
  const unsigned char* c = reinterpret_cast<const unsigned char*>(p[1]);
  if (inner[0] == w && inner[1] == 1 && (inner[2] == w || inner[2] == 0) && (inner[3] == w || inner[3] == 0)) {
    W* out = reinterpret_cast<W*>(p[0]);
    const W* x = reinterpret_cast<const W*>(p[2]);
    const W* y = reinterpret_cast<const W*>(p[3]);
    if (inner[2] && inner[3]) return detail::write_run(out, n, stream, [=](int64_t i) { return c[i] ? x[i] : y[i]; });
    if (inner[3]) {
      const W xv = x[0];
      return detail::write_run(out, n, stream, [=](int64_t i) { return c[i] ? xv : y[i]; });
    }
    if (inner[2]) {
      const W yv = y[0];
      return detail::write_run(out, n, stream, [=](int64_t i) { return c[i] ? x[i] : yv; });
    }
    const W xv = x[0], yv = y[0];
    return detail::write_run(out, n, stream, [=](int64_t i) { return c[i] ? xv : yv; });
  }
  for (int64_t i = 0; i < n; ++i) {
    const char* from = c[i * inner[1]] ? p[2] + i * inner[2] : p[3] + i * inner[3];
    std::memcpy(p[0] + i * inner[0], from, sizeof(W));
  }
}

// where(cond, x, y): operand 1 is the condition, 1 byte per element (bool, or uint8 read as nonzero) whatever
// in_dtype says; x, y and the output have in_dtype.
npu_sim::Status where_select(npu_sim::Stream stream, const ElementwiseIter& it) {
  auto go = [&](auto word) -> npu_sim::Status {
    using W = decltype(word);
    const bool streamed = stream_output(it, sizeof(W));
    const uint64_t rd = 1 + (it.is_scalar[2] ? 0 : sizeof(W)) + (it.is_scalar[3] ? 0 : sizeof(W));
    return parallel_for(stream, "where", it.numel(), int64_t(1) << 15,
                        [it, streamed, rd](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
                          const auto m = static_cast<uint64_t>(e - b);
                          npu_sim::record_traffic(ctx, rd * m, sizeof(W) * m, 0, m);
                          detail::for_each_run<4>(it, b, e, [&](char* const* p, const int64_t* inner, int64_t n) {
                            where_run<W>(p, inner, n, streamed);
                          });
                        });
  };
  if (it.noperands() != 4 || it.out_dtype != it.in_dtype) return npu_sim::Status::kInvalidValue;
  switch (dtype_size(it.in_dtype)) {
    case 1: return go(word_t<1>{});
    case 2: return go(word_t<2>{});
    case 4: return go(word_t<4>{});
    case 8: return go(word_t<8>{});
    case 16: return go(word_t<16>{});
    default: return npu_sim::Status::kInvalidValue;
  }
}

}  // namespace

const char* op_name(TernaryOp op) {
  static const char* const names[] = {"where", "addcmul", "addcdiv", "lerp", "clamp_tensor", "prelu_backward"};
  return names[static_cast<int>(op)];
}

npu_sim::Status ternary(npu_sim::Stream stream, TernaryOp op, const ElementwiseIter& it, const PointwiseParams& p) {
  if (op == TernaryOp::kWhere) return where_select(stream, it);
  if (detail::is_complex(it.in_dtype)) return detail::complex_ternary(stream, op, it, p);
  return detail::dispatch_real(it.in_dtype, [&](auto tag) -> npu_sim::Status {
    using In = decltype(tag);
    using C = compute_t<In>;
    auto go = [&](auto f) { return launch_elementwise<In, In, 3>(stream, op_name(op), it, f); };
    const C value = static_cast<C>(p.a);
    switch (op) {
      case TernaryOp::kAddcmul:  // no bool kernel, as ATen's CPU and CUDA addcmul
        if constexpr (std::is_same_v<C, bool>) return npu_sim::Status::kInvalidValue;
        else return go([=](C s, C x, C y) { return static_cast<C>(s + value * x * y); });
      case TernaryOp::kAddcdiv:
        if constexpr (detail::is_fp_v<C>) return go([=](C s, C x, C y) { return s + value * x / y; });
        else return npu_sim::Status::kInvalidValue;
      case TernaryOp::kLerp:
        if constexpr (detail::is_fp_v<C>) {
          return go([](C start, C end, C w) {
            return std::abs(w) < C(0.5) ? start + w * (end - start) : end - (end - start) * (C(1) - w);
          });
        } else return npu_sim::Status::kInvalidValue;
      case TernaryOp::kPreluGradInput:
        if constexpr (detail::is_fp_v<C>) return go([](C x, C w, C g) { return x > C(0) ? g : w * g; });
        else return npu_sim::Status::kInvalidValue;
      default: return npu_sim::Status::kInvalidValue;
    }
  });
}

}  // namespace npu_kernels
