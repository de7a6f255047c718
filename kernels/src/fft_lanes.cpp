// float32 FFT lines in the SIMD lanes of pocketfft's plans (see fft_lanes.h; 16 with AVX-512, 8 with AVX2): a group
// of kLanes lines is gathered into the plan's vector layout (element i of every line in one vector), transformed,
// and scattered back. Contiguous lines move as kLanes x kLanes blocks through a register transpose, lines that are
// neighbouring columns as whole vectors, anything else (and groups of fewer neighbouring columns) element by
// element. The vectors and the arithmetic are pocketfft's, so each line's result is the one its own calls give.
#include "fft_lanes.h"

#include <pocketfft_hdronly.h>

#include <algorithm>
#include <cstring>
#include <vector>

#if !defined(POCKETFFT_NO_VECTORS) && (defined(__AVX512F__) || defined(__AVX2__))
#include <immintrin.h>
#define NPU_SIM_FFT_LANES 1
#endif

namespace npu_kernels::fft::detail {

#if defined(NPU_SIM_FFT_LANES)
namespace {

// The register layer: one float vector of pocketfft's width (16 lanes in a zmm register with AVX-512, 8 in a ymm
// register with AVX2), whole or its first c lanes, the complex (de)interleave and the kLanes x kLanes transpose.
#if defined(__AVX512F__)
using Reg = __m512;
constexpr int kLanes = 16;
inline __mmask16 low_bits(int64_t c) { return static_cast<__mmask16>(c >= 16 ? 0xffffu : (1u << c) - 1u); }
inline Reg rzero() { return _mm512_setzero_ps(); }
inline Reg rload(const float* p) { return _mm512_loadu_ps(p); }
inline void rstore(float* p, Reg v) { _mm512_storeu_ps(p, v); }
inline Reg rload_first(const float* p, int64_t c) { return _mm512_maskz_loadu_ps(low_bits(c), p); }
inline void rstore_first(float* p, Reg v, int64_t c) { _mm512_mask_storeu_ps(p, low_bits(c), v); }
inline Reg rneg(Reg v) { return _mm512_maskz_xor_ps(0xffff, v, _mm512_set1_ps(-0.0f)); }
// (re, im) of the 16 complex values in z0, z1 (re0 im0 re1 im1 ...), and back
inline void deinterleave(Reg z0, Reg z1, Reg& re, Reg& im) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  re = _mm512_maskz_permutex2var_ps(0xffff, z0, even, z1);
  im = _mm512_maskz_permutex2var_ps(0xffff, z0, odd, z1);
}
inline void interleave(Reg re, Reg im, Reg& z0, Reg& z1) {
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  z0 = _mm512_maskz_permutex2var_ps(0xffff, re, lo, im);
  z1 = _mm512_maskz_permutex2var_ps(0xffff, re, hi, im);
}
// r[k] <- column k of the 16 x 16 block whose rows are r[0..15].
inline void transpose(Reg r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_maskz_unpacklo_ps(0xffff, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_maskz_unpackhi_ps(0xffff, r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, a, b));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, a, b));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, c, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, c, d));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_maskz_shuffle_f32x4(0xffff, r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_maskz_shuffle_f32x4(0xffff, r[i], r[4 + i], 0xdd);
    t[8 + i] = _mm512_maskz_shuffle_f32x4(0xffff, r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_maskz_shuffle_f32x4(0xffff, r[8 + i], r[12 + i], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_maskz_shuffle_f32x4(0xffff, t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_maskz_shuffle_f32x4(0xffff, t[i], t[8 + i], 0xdd);
    r[4 + i] = _mm512_maskz_shuffle_f32x4(0xffff, t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_maskz_shuffle_f32x4(0xffff, t[4 + i], t[12 + i], 0xdd);
  }
}
#else  // AVX2
using Reg = __m256;
constexpr int kLanes = 8;
inline __m256i low_lanes(int64_t c) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(c, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline Reg rzero() { return _mm256_setzero_ps(); }
inline Reg rload(const float* p) { return _mm256_loadu_ps(p); }
inline void rstore(float* p, Reg v) { _mm256_storeu_ps(p, v); }
// vmaskmovps stores cost several plain stores on Zen (they were the hot spots of a row scatter): whole vectors take
// plain loads and stores
inline Reg rload_first(const float* p, int64_t c) {
  return c >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, low_lanes(c));
}
inline void rstore_first(float* p, Reg v, int64_t c) {
  if (c >= 8) _mm256_storeu_ps(p, v);
  else _mm256_maskstore_ps(p, low_lanes(c), v);
}
inline Reg rneg(Reg v) { return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f)); }
inline void deinterleave(Reg z0, Reg z1, Reg& re, Reg& im) {  // shuffles within 128-bit halves, then 0 2 1 3
  re = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(z0, z1, 0x88)), 0xd8));
  im = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(z0, z1, 0xdd)), 0xd8));
}
inline void interleave(Reg re, Reg im, Reg& z0, Reg& z1) {
  const __m256 lo = _mm256_unpacklo_ps(re, im), hi = _mm256_unpackhi_ps(re, im);
  z0 = _mm256_permute2f128_ps(lo, hi, 0x20);
  z1 = _mm256_permute2f128_ps(lo, hi, 0x31);
}
// r[k] <- column k of the 8 x 8 block whose rows are r[0..7].
inline void transpose(Reg r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}
#endif

using V = pocketfft::detail::vtype_t<float>;
using CV = pocketfft::detail::cmplx<V>;
static_assert(sizeof(V) == sizeof(Reg), "pocketfft's float vector is one register here");
constexpr int kHalf = kLanes / 2;  // complex points per kLanes floats

inline Reg zm(const V& v) {
  Reg m;
  std::memcpy(&m, &v, sizeof(m));
  return m;
}
inline V vz(Reg m) {
  V v;
  std::memcpy(&v, &m, sizeof(v));
  return v;
}

struct Pair {  // one complex vector: kLanes real parts, kLanes imaginary parts
  Reg re, im;
};

// Column runs are rows of the operand a page or more apart: each is prefetched kAhead rows early (the hardware
// prefetchers do not follow such strides, and each row is a TLB miss of its own).
constexpr int64_t kAhead = 6;
inline void prefetch_run(const float* p, int64_t floats, int hint) {
  for (int64_t f = 0; f < floats; f += 16) {  // one 64-byte line at a time
    if (hint == _MM_HINT_ET0) _mm_prefetch(reinterpret_cast<const char*>(p + f), _MM_HINT_ET0);
    else _mm_prefetch(reinterpret_cast<const char*>(p + f), _MM_HINT_T0);
  }
}

// How a group's lines lie: kLanes contiguous lines (any offsets), kLanes neighbouring columns, or neither.
enum class Shape { kRows, kColumns, kOther };
Shape shape_of(const int64_t* offsets, int g, int64_t stride) {
  if (stride == 1) return Shape::kRows;
  if (g < kLanes) return Shape::kOther;
  for (int j = 1; j < kLanes; ++j)
    if (offsets[j] != offsets[0] + j) return Shape::kOther;
  return Shape::kColumns;
}

// The complex input lines of a group (float pointers to element 0; lanes past g repeat the last line) into buf.
void gather_complex(const float* const* src, Shape sh, int64_t n, int64_t s, int wide, CV* buf) {
  if (sh == Shape::kRows) {
    for (int64_t i0 = 0; i0 < n; i0 += kHalf) {
      const int64_t c = std::min<int64_t>(kHalf, n - i0);
      Reg r[kLanes];
      for (int j = 0; j < kLanes; ++j) r[j] = rload_first(src[j] + 2 * i0, 2 * c);
      transpose(r);
      if (c == kHalf) {  // a constant count: register stores (a variable one became a rep movsq through the stack)
        for (int q = 0; q < kHalf; ++q) buf[i0 + q] = {vz(r[2 * q]), vz(r[2 * q + 1])};
      } else {
        for (int64_t q = 0; q < c; ++q) buf[i0 + q] = {vz(r[2 * q]), vz(r[2 * q + 1])};
      }
    }
  } else if (sh == Shape::kColumns) {  // wide groups of kLanes neighbouring columns: buffer gg at buf + gg * n
    for (int64_t i = 0; i < n; ++i) {
      const float* p = src[0] + 2 * i * s;
      if (i + kAhead < n) prefetch_run(p + 2 * kAhead * s, 2 * kLanes * wide, _MM_HINT_T0);
      for (int gg = 0; gg < wide; ++gg) {
        Reg re, im;
        deinterleave(rload(p + 2 * kLanes * gg), rload(p + 2 * kLanes * gg + kLanes), re, im);
        buf[gg * n + i] = {vz(re), vz(im)};
      }
    }
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int j = 0; j < kLanes; ++j) {
        buf[i].r[j] = src[j][2 * i * s];
        buf[i].i[j] = src[j][2 * i * s + 1];
      }
  }
}

// Complex values u(k, gg) (k in [0, m)) of lanes [0, g) out to complex lines dst[j] with element stride s (for
// neighbouring columns, `wide` groups of kLanes at once; else gg is 0).
template <class U>
void scatter_complex(U&& u, float* const* dst, int g, Shape sh, int64_t m, int64_t s, int wide) {
  if (sh == Shape::kRows) {
    for (int64_t k0 = 0; k0 < m; k0 += kHalf) {
      const int64_t c = std::min<int64_t>(kHalf, m - k0);
      Reg r[kLanes];
      for (int64_t q = 0; q < kHalf; ++q) {
        const auto [re, im] = q < c ? u(k0 + q, 0) : Pair{rzero(), rzero()};
        r[2 * q] = re;
        r[2 * q + 1] = im;
      }
      transpose(r);
      for (int j = 0; j < g; ++j) rstore_first(dst[j] + 2 * k0, r[j], 2 * c);
    }
  } else if (sh == Shape::kColumns) {  // wide groups: u(k, gg) for group gg
    for (int64_t k = 0; k < m; ++k) {
      float* p = dst[0] + 2 * k * s;
      if (k + kAhead < m) prefetch_run(p + 2 * kAhead * s, 2 * kLanes * wide, _MM_HINT_ET0);
      for (int gg = 0; gg < wide; ++gg) {
        const auto [re, im] = u(k, gg);
        Reg z0, z1;
        interleave(re, im, z0, z1);
        rstore(p + 2 * kLanes * gg, z0);
        rstore(p + 2 * kLanes * gg + kLanes, z1);
      }
    }
  } else {
    for (int64_t k = 0; k < m; ++k) {
      const auto [re, im] = u(k, 0);
      float a[kLanes], b[kLanes];
      rstore(a, re);
      rstore(b, im);
      for (int j = 0; j < g; ++j) {
        dst[j][2 * k * s] = a[j];
        dst[j][2 * k * s + 1] = b[j];
      }
    }
  }
}

// The real input lines of a group into buf.
void gather_real(const float* const* src, Shape sh, int64_t n, int64_t s, int wide, V* buf) {
  if (sh == Shape::kRows) {
    for (int64_t i0 = 0; i0 < n; i0 += kLanes) {
      const int64_t c = std::min<int64_t>(kLanes, n - i0);
      Reg r[kLanes];
      for (int j = 0; j < kLanes; ++j) r[j] = rload_first(src[j] + i0, c);
      transpose(r);
      if (c == kLanes) {
        for (int q = 0; q < kLanes; ++q) buf[i0 + q] = vz(r[q]);
      } else {
        for (int64_t q = 0; q < c; ++q) buf[i0 + q] = vz(r[q]);
      }
    }
  } else if (sh == Shape::kColumns) {
    for (int64_t i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch_run(src[0] + (i + kAhead) * s, kLanes * wide, _MM_HINT_T0);
      for (int gg = 0; gg < wide; ++gg) buf[gg * n + i] = vz(rload(src[0] + i * s + kLanes * gg));
    }
  } else {
    for (int64_t i = 0; i < n; ++i)
      for (int j = 0; j < kLanes; ++j) buf[i][j] = src[j][i * s];
  }
}

// Fewer lines than this go one at a time: 16 lanes of copies of one line cost more than the line alone (a single
// 4096-point rfft 0.10 -> 0.16 ms on AVX-512).
constexpr int kMinLanes = kLanes / 2;

// One line through the plan, pocketfft's scalar way: copied into buf (n complex or n real points), transformed,
// copied out.
void run_line(const LongLines& l, int64_t line, const pocketfft::detail::pocketfft_c<float>* cplan,
              const pocketfft::detail::pocketfft_r<float>* rplan, float* buf) {
  const int64_t n = l.n, si = l.in_stride, so = l.out_stride;
  const auto fct = static_cast<float>(l.scale);
  auto* out = static_cast<float*>(l.out) + 2 * l.out_offsets[static_cast<std::size_t>(line)];
  if (cplan != nullptr) {
    const float* in = static_cast<const float*>(l.in) + 2 * l.in_offsets[static_cast<std::size_t>(line)];
    auto* c = reinterpret_cast<pocketfft::detail::cmplx<float>*>(buf);
    for (int64_t i = 0; i < n; ++i) c[i] = {in[2 * i * si], in[2 * i * si + 1]};
    cplan->exec(c, fct, l.forward);
    for (int64_t i = 0; i < n; ++i) {
      out[2 * i * so] = c[i].r;
      out[2 * i * so + 1] = c[i].i;
    }
    return;
  }
  const float* in = static_cast<const float*>(l.in) + l.in_offsets[static_cast<std::size_t>(line)];
  for (int64_t i = 0; i < n; ++i) buf[i] = in[i * si];
  rplan->exec(buf, fct, true);
  out[0] = buf[0];
  out[1] = 0.0f;
  int64_t k = 1;
  for (; 2 * k < n; ++k) {
    out[2 * k * so] = buf[2 * k - 1];
    out[2 * k * so + 1] = l.forward ? buf[2 * k] : -buf[2 * k];
  }
  if (2 * k == n) {
    out[2 * k * so] = buf[n - 1];
    out[2 * k * so + 1] = 0.0f;
  }
}

// Groups of kLanes neighbouring columns taken together (one pass over their rows reads 256-512-byte runs: a column
// pass of a 1024^2 array read 128 bytes per 8 KiB row, a TLB miss each).
constexpr int kWide = static_cast<int>(kLanesPerBlock / kLanes);

// Whole groups of kLanes lines from `first` (at most kWide, within `end`) whose lines continue neighbouring columns.
int wide_groups(const std::vector<int64_t>& offsets, int64_t first, int64_t end) {
  int w = 1;
  while (w < kWide && first + (w + 1) * kLanes <= end) {
    for (int j = 0; j < kLanes; ++j)
      if (offsets[static_cast<std::size_t>(first + w * kLanes + j)] !=
          offsets[static_cast<std::size_t>(first)] + w * kLanes + j) {
        return w;
      }
    ++w;
  }
  return w;
}

thread_local std::vector<CV> t_buf;  // the core thread's working lines (its UB stand-in), kept across launches

}  // namespace


bool lanes_apply(DType dt, Kind kind, int64_t n) {
  return dt == DType::kComplex64 && (kind == Kind::kC2C || kind == Kind::kR2C) && n >= 2;
}

void run_lanes(const LongLines& l, int64_t begin, int64_t end) {
  const int64_t n = l.n;
  const auto fct = static_cast<float>(l.scale);
  const bool r2c = l.kind == Kind::kR2C;
  if (t_buf.size() < static_cast<std::size_t>(kWide * n)) t_buf.resize(static_cast<std::size_t>(kWide * n));
  CV* cbuf = t_buf.data();
  V* rbuf = reinterpret_cast<V*>(t_buf.data());  // kWide * n real vectors fit in the first half
  const float* in = static_cast<const float*>(l.in);
  auto* out = static_cast<float*>(l.out);
  const int64_t in_w = r2c ? 1 : 2;  // floats per input element
  std::shared_ptr<pocketfft::detail::pocketfft_c<float>> cplan;
  std::shared_ptr<pocketfft::detail::pocketfft_r<float>> rplan;
  if (r2c) rplan = pocketfft::detail::get_plan<pocketfft::detail::pocketfft_r<float>>(static_cast<std::size_t>(n));
  else cplan = pocketfft::detail::get_plan<pocketfft::detail::pocketfft_c<float>>(static_cast<std::size_t>(n));
  const int64_t m = r2c ? n / 2 + 1 : n;  // complex outputs per line
  const Reg zero = rzero();
  const bool fwd = l.forward;
  for (int64_t g0 = begin; g0 < end;) {
    const int g = static_cast<int>(std::min<int64_t>(kLanes, end - g0));
    if (g < kMinLanes) {  // a few lines: one by one, in a buffer of one line
      for (int64_t line = g0; line < end; ++line) {
        run_line(l, line, cplan.get(), rplan.get(), reinterpret_cast<float*>(cbuf));
      }
      break;
    }
    const Shape sin = shape_of(l.in_offsets.data() + g0, g, l.in_stride);
    const Shape sout = shape_of(l.out_offsets.data() + g0, g, l.out_stride);
    int wide = sin == Shape::kColumns ? wide_groups(l.in_offsets, g0, end) : 1;
    if (sout == Shape::kColumns && wide > 1) wide = std::min(wide, wide_groups(l.out_offsets, g0, end));
    const float* src[kLanes];
    float* dst[kLanes];
    for (int j = 0; j < kLanes; ++j) {
      const int64_t line = g0 + std::min(j, g - 1);
      src[j] = in + in_w * l.in_offsets[static_cast<std::size_t>(line)];
      dst[j] = out + 2 * l.out_offsets[static_cast<std::size_t>(line)];
    }
    if (!r2c) {
      gather_complex(src, sin, n, l.in_stride, wide, cbuf);
      for (int gg = 0; gg < wide; ++gg) cplan->exec(cbuf + gg * n, fct, fwd);
    } else {
      gather_real(src, sin, n, l.in_stride, wide, rbuf);
      for (int gg = 0; gg < wide; ++gg) rplan->exec(rbuf + gg * n, fct, true);
    }
    // pocketfft's half-complex order r0, r1, i1, r2, i2, ...: X_k = (r_k, +-i_k), X_0 and an even n's X_{n/2} real
    const auto value = [cbuf, rbuf, r2c, n, fwd, zero](int64_t k, int gg) {
      if (!r2c) return Pair{zm(cbuf[gg * n + k].r), zm(cbuf[gg * n + k].i)};
      const V* t = rbuf + gg * n;
      if (k == 0) return Pair{zm(t[0]), zero};
      if (2 * k >= n) return Pair{zm(t[2 * k - 1]), zero};
      const Reg im = zm(t[2 * k]);  // negated for the backward transform, as pocketfft does
      return Pair{zm(t[2 * k - 1]), fwd ? im : rneg(im)};
    };
    if (sout == Shape::kColumns) {
      scatter_complex(value, dst, g, sout, m, l.out_stride, wide);
    } else {  // each group of kLanes on its own
      for (int gg = 0; gg < wide; ++gg) {
        float* gdst[kLanes];
        for (int j = 0; j < kLanes; ++j) {
          gdst[j] = out + 2 * l.out_offsets[static_cast<std::size_t>(g0 + gg * kLanes + std::min(j, g - 1))];
        }
        const Shape gs = gg == 0 ? sout : shape_of(l.out_offsets.data() + g0 + gg * kLanes, g, l.out_stride);
        scatter_complex([&value, gg](int64_t k, int) { return value(k, gg); }, gdst, g, gs, m, l.out_stride, 1);
      }
    }
    g0 += static_cast<int64_t>(wide) * kLanes;
    if (wide == 1) g0 += g - kLanes;
  }
  if (t_buf.size() * sizeof(CV) > kKeptThreadBufferBytes) std::vector<CV>().swap(t_buf);
}

void run_lanes_grid(bool forward, float fct, int64_t n, int64_t count, const void* in, int64_t in_step,
                    int64_t in_stride, void* out, int64_t out_step, int64_t out_stride) {
  thread_local LongLines l;  // its offset vectors are reused from call to call
  l.kind = Kind::kC2C, l.forward = forward, l.scale = fct, l.n = n;
  l.in = in, l.out = out, l.in_stride = in_stride, l.out_stride = out_stride;
  l.in_offsets.resize(static_cast<std::size_t>(count));
  l.out_offsets.resize(static_cast<std::size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    l.in_offsets[static_cast<std::size_t>(j)] = j * in_step;
    l.out_offsets[static_cast<std::size_t>(j)] = j * out_step;
  }
  run_lanes(l, 0, count);
}

#else  // no vector build: pocketfft's own paths serve every pass

bool lanes_apply(DType, Kind, int64_t) { return false; }
void run_lanes(const LongLines&, int64_t, int64_t) {}
void run_lanes_grid(bool, float, int64_t, int64_t, const void*, int64_t, int64_t, void*, int64_t, int64_t) {}

#endif

}  // namespace npu_kernels::fft::detail
