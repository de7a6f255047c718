// Affine quantization kernels and the int8 GEMM of quantized linear layers (see npu_kernels/quantize.h). The
// GEMM's rows are split between blocks; each block multiplies its rows on oneDNN (s8 x s8 -> s32 on VNNI /
// AMX-INT8) or the portable loop into an int32 buffer, then applies the dequantizing epilogue.
#include "npu_kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm_tiling.h"
#include "npu_kernels/launch.h"
#include "traffic.h"

namespace npu_kernels {
namespace {

using Status = npu_sim::Status;

template <typename C>
C quantize_one(float x, float inv_scale, int64_t zero_point) {
  constexpr float lo = static_cast<float>(std::numeric_limits<C>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<C>::max());
  // PyTorch: zero_point + nearbyint(x * inv_scale), in float, then saturated. For int32 codes the float sum
  // can round up to 2^31 itself: compare before converting.
  const float v = static_cast<float>(zero_point) + std::nearbyint(x * inv_scale);
  if (!(v > lo)) return std::numeric_limits<C>::min();  // NaN too
  if (v >= hi) return std::numeric_limits<C>::max();
  return static_cast<C>(v);
}

// Calls f(C{}) with the codes' C type.
template <typename F>
Status dispatch_code(DType t, F&& f) {
  switch (t) {
    case DType::kInt8: return f(int8_t{});
    case DType::kUInt8: return f(uint8_t{});
    case DType::kInt32: return f(int32_t{});
    default: return Status::kInvalidValue;
  }
}

// The (scale, zero point) of element e.
struct Affine {
  const QuantParams& q;
  int64_t channel(int64_t e) const { return (e / q.inner) % q.channels; }
  double scale(int64_t e) const { return q.scales ? q.scales[channel(e)] : q.scale; }
  int64_t zero_point(int64_t e) const { return q.scales ? q.zero_points[channel(e)] : q.zero_point; }
};

constexpr int64_t kGrain = 1 << 14;

// ---- int8 GEMM ----

template <typename Out>
Out finish(float v) {
  if constexpr (std::is_same_v<Out, int8_t>) {
    const float r = std::nearbyint(v);
    if (!(r > -128.0f)) return std::isnan(r) ? int8_t{0} : int8_t{-128};
    return r >= 127.0f ? int8_t{127} : static_cast<int8_t>(r);
  } else {
    return static_cast<Out>(v);
  }
}

template <typename Out>
void epilogue(const QuantMatmulArgs& a, int64_t b, int64_t i0, int64_t rows, const int32_t* acc, Out* out) {
  const int64_t n = a.n;
  if constexpr (std::is_same_v<Out, int32_t>) {  // the accumulators themselves
    std::copy(acc, acc + rows * n, out + (b * a.m + i0) * n);
    return;
  }
  const bool int_bias = a.bias && a.bias_dtype == DType::kInt32;
  const char* bias = static_cast<const char*>(a.bias) + b * a.bias_batch_stride * dtype_size(a.bias_dtype);
  auto float_bias = [&](int64_t j) -> float {
    switch (a.bias_dtype) {
      case DType::kFloat32: return reinterpret_cast<const float*>(bias)[j];
      case DType::kFloat16: return reinterpret_cast<const Half*>(bias)[j];
      case DType::kBFloat16: return reinterpret_cast<const BFloat16*>(bias)[j];
      default: return 0.0f;
    }
  };
  for (int64_t i = 0; i < rows; ++i) {
    const float token = a.pertoken_scale ? a.pertoken_scale[i0 + i] : 1.0f;
    const int32_t* ar = acc + i * n;
    Out* o = out + (b * a.m + i0 + i) * n;
    for (int64_t j = 0; j < n; ++j) {
      const float s = a.scale[a.scale_len == 1 ? 0 : j];
      float v;
      if (int_bias) {
        // int32 bias joins the exact accumulator (two's-complement wrap, as the hardware's int32 adder)
        const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(ar[j]) +
                                                 static_cast<uint32_t>(reinterpret_cast<const int32_t*>(bias)[j]));
        v = static_cast<float>(sum) * s * token;
      } else {
        v = static_cast<float>(ar[j]) * s * token;
        if (a.bias) v += float_bias(j);
      }
      if (a.offset) v += a.offset[a.offset_len == 1 ? 0 : j];
      o[j] = finish<Out>(v);
    }
  }
}

constexpr int64_t kExactK = 1024;

// acc (rows x n) = x1[b][i0 : i0 + rows] @ x2[b] exactly in int32.
void int8_rows(const QuantMatmulArgs& a, int64_t b, int64_t i0, int64_t rows, int32_t* acc, bool onednn) {
  const int8_t* x1 = a.x1 + b * a.x1_batch_stride + i0 * a.x1_row_stride;
  const int8_t* x2 = a.x2 + b * a.x2_batch_stride;
  if (onednn) {
    // the adapter gives each operand a unit stride in one of its dims: row-major, or the transpose of one.
    // oneDNN's int8 kernel stores its int32 sums through float32, exact only up to 2^24 in magnitude: at most
    // kExactK products of two int8 per call (1024 * 128 * 128 = 2^24), the calls' sums added here in int32.
    const bool ta = a.x1_col_stride != 1, tb = a.x2_col_stride != 1;
    const int64_t lda = ta ? a.x1_col_stride : a.x1_row_stride, ldb = tb ? a.x2_col_stride : a.x2_row_stride;
    std::vector<int32_t> part(a.k > kExactK ? static_cast<size_t>(rows * a.n) : 0);
    for (int64_t p0 = 0; p0 < a.k; p0 += kExactK) {
      const int64_t kc = std::min(kExactK, a.k - p0);
      int32_t* dst = p0 == 0 ? acc : part.data();
      detail::dnnl_gemm_s8(ta, tb, rows, a.n, kc, x1 + p0 * a.x1_col_stride, lda, x2 + p0 * a.x2_row_stride, ldb, dst,
                           a.n);
      if (p0 > 0) {  // two's-complement wrap, as an int32 accumulator
        for (int64_t i = 0; i < rows * a.n; ++i) {
          acc[i] = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(part[i]));
        }
      }
    }
    return;
  }
  std::fill(acc, acc + rows * a.n, 0);
  for (int64_t i = 0; i < rows; ++i) {
    int32_t* c = acc + i * a.n;
    for (int64_t p = 0; p < a.k; ++p) {
      const int32_t v = x1[i * a.x1_row_stride + p * a.x1_col_stride];
      if (v == 0) continue;
      const int8_t* br = x2 + p * a.x2_row_stride;
      for (int64_t j = 0; j < a.n; ++j) {  // wrapping int32 sums (the products fit in 15 bits)
        c[j] = static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(v * br[j * a.x2_col_stride]));
      }
    }
  }
}

// oneDNN when it has a JIT int8 kernel here (not with NPU_SIM_GEMM_DNNL=0) and both operands have a unit stride.
bool use_onednn(const QuantMatmulArgs& a) {
  const bool unit1 = a.x1_col_stride == 1 || a.x1_row_stride == 1;
  const bool unit2 = a.x2_col_stride == 1 || a.x2_row_stride == 1;
  return unit1 && unit2 && detail::dnnl_s8_name() != nullptr;
}

}  // namespace

Status quantize(npu_sim::Stream stream, const float* in, void* codes, int64_t n, const QuantParams& q) {
  return dispatch_code(q.code, [&](auto tag) {
    using C = decltype(tag);
    return parallel_for(stream, "quantize", n, kGrain, [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const Affine aff{q};
      C* out = static_cast<C*>(codes);
      for (int64_t i = b; i < e; ++i) {
        const float inv = 1.0f / static_cast<float>(aff.scale(i));
        out[i] = quantize_one<C>(in[i], inv, aff.zero_point(i));
      }
      detail::record_vec(ctx, (e - b) * 4, (e - b) * static_cast<int64_t>(sizeof(C)), 3 * (e - b));
    });
  });
}

Status dequantize(npu_sim::Stream stream, const void* codes, float* out, int64_t n, const QuantParams& q) {
  return dispatch_code(q.code, [&](auto tag) {
    using C = decltype(tag);
    return parallel_for(stream, "dequantize", n, kGrain, [=](int64_t b, int64_t e, const npu_sim::BlockContext& ctx) {
      const Affine aff{q};
      const C* in = static_cast<const C*>(codes);
      // CPU's arithmetic: float32 per tensor, float64 per channel (its scales are float64), rounded once
      if (q.scales) {
        for (int64_t i = b; i < e; ++i) {
          out[i] = static_cast<float>(static_cast<double>(static_cast<int64_t>(in[i]) - aff.zero_point(i)) * aff.scale(i));
        }
      } else {
        const float scale = static_cast<float>(q.scale);
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<float>(static_cast<int64_t>(in[i]) - q.zero_point) * scale;
      }
      detail::record_vec(ctx, (e - b) * static_cast<int64_t>(sizeof(C)), (e - b) * 4, 2 * (e - b));
    });
  });
}

Status quant_matmul(npu_sim::Stream stream, const QuantMatmulArgs& a) {
  if (a.out_dtype != DType::kInt32 && a.scale == nullptr) return Status::kInvalidValue;
  const bool onednn = use_onednn(a);
  // One row tile per core thread, 64 to 1024 rows: oneDNN reorders x2 into its VNNI layout on every call, so
  // fewer, taller tiles pay that less (64-row tiles cost 23% more at 1024 x 4096 x 4096); the cap bounds each
  // block's int32 buffer (rows x n) and leaves the reorder a small share of a tile's work.
  const int64_t rows_per_tile = std::clamp<int64_t>((a.m + core_threads() - 1) / core_threads(), 64, 1024);
  const int64_t tiles = (a.m + rows_per_tile - 1) / rows_per_tile;
  auto run = [&](auto tag) {
    using Out = decltype(tag);
    return parallel_for(stream, a.name, a.batch * tiles, 1,
                        [a, onednn, tiles, rows_per_tile](int64_t t0, int64_t t1, const npu_sim::BlockContext& ctx) {
      std::vector<int32_t> acc(static_cast<size_t>(rows_per_tile * a.n));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / tiles, i0 = (t % tiles) * rows_per_tile, rows = std::min(rows_per_tile, a.m - i0);
        int8_rows(a, b, i0, rows, acc.data(), onednn);
        epilogue<Out>(a, b, i0, rows, acc.data(), static_cast<Out*>(a.out));
        // Launch records: the tile's rows of x1, all of x2 and the per-column parameters read, the output tile
        // written; 2 Cube ops per int8 MAC, ~4 Vector ops per output element for the epilogue.
        npu_sim::record_traffic(ctx, static_cast<std::uint64_t>(rows * a.k + a.k * a.n + a.n * 8),
                                static_cast<std::uint64_t>(rows * a.n * static_cast<int64_t>(sizeof(Out))),
                                static_cast<std::uint64_t>(2 * rows * a.n * a.k),
                                static_cast<std::uint64_t>(std::is_same_v<Out, int32_t> ? 0 : 4 * rows * a.n));
      }
    });
  };
  switch (a.out_dtype) {
    case DType::kInt8: return run(int8_t{});
    case DType::kFloat16: return run(Half{});
    case DType::kBFloat16: return run(BFloat16{});
    case DType::kFloat32: return run(float{});
    case DType::kInt32: return run(int32_t{});
    default: return Status::kInvalidValue;
  }
}

const char* quant_matmul_library_name() {
  const char* name = detail::dnnl_s8_name();
  return name ? name : "own";
}

}  // namespace npu_kernels
