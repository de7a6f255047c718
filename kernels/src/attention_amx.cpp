// The fused attention forward's bf16 products on the AMX tile unit (see attention_amx.h). Tiles 0-3 hold a 2 x 2
// block of fp32 accumulators, 4-5 two A tiles (16 rows x 32 bf16), 6-7 two B tiles (16 pairs x 16 columns x 2).
// Every operand is zero padded to whole tiles, so each tile is 16 x 64 bytes and no edge needs its own shape.
#include "attention_amx.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define NPU_SIM_AMX_BUILD 1
#define NPU_AMX_TARGET __attribute__((target("amx-tile,amx-bf16")))
#define NPU_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

namespace npu_kernels::detail {

#if defined(NPU_SIM_AMX_BUILD)
namespace {

bool detect_amx_bf16() {
  const char* env = std::getenv("NPU_SIM_AMX");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool amx_bf16 = (edx >> 22) & 1u, amx_tile = (edx >> 24) & 1u, avx512bw = (ebx >> 30) & 1u;
  unsigned eax1 = 0, ebx1 = 0, ecx1 = 0, edx1 = 0;
  const bool avx512_bf16 = __get_cpuid_count(7, 1, &eax1, &ebx1, &ecx1, &edx1) != 0 && ((eax1 >> 5) & 1u);
  // Linux hands out the 8 KiB tile state only on request (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA).
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return amx_bf16 && amx_tile && avx512bw && avx512_bf16 &&
         syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

struct alignas(64) TileConfig {
  unsigned char palette = 1, start_row = 0, reserved[14] = {};
  unsigned short colsb[16] = {};
  unsigned char rows[16] = {};
};

// C tiles (MT x NT of 16 x 16 fp32, at c + rt * 16 * ldc + ct * 16) = (Acc ? C : 0) + sum over t < kt of
// A(rt, t) B(t, ct): A(rt, t) at a + rt * a_rt + t * 32 (row stride lda elements), B(t, ct) at b + ct * b_ct +
// t * 512 (64-byte rows). Tile numbers are immediates, hence one instance per block shape.
template <int MT, int NT, bool Acc>
NPU_AMX_TARGET inline void tile_block(const uint16_t* a, int64_t a_rt, int64_t lda, const uint16_t* b, int64_t b_ct,
                                      int64_t kt, float* c, int64_t ldc) {
  const long sa = static_cast<long>(lda * 2), sc = static_cast<long>(ldc * 4);
  float* c1 = c + 16 * ldc;
  if constexpr (Acc) {
    _tile_loadd(0, c, sc);
    if constexpr (NT > 1) _tile_loadd(1, c + 16, sc);
    if constexpr (MT > 1) _tile_loadd(2, c1, sc);
    if constexpr (MT > 1 && NT > 1) _tile_loadd(3, c1 + 16, sc);
  } else {
    _tile_zero(0);
    if constexpr (NT > 1) _tile_zero(1);
    if constexpr (MT > 1) _tile_zero(2);
    if constexpr (MT > 1 && NT > 1) _tile_zero(3);
  }
  for (int64_t t = 0; t < kt; ++t) {
    _tile_loadd(4, a + t * 32, sa);
    _tile_loadd(6, b + t * 512, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT > 1) {
      _tile_loadd(7, b + b_ct + t * 512, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (MT > 1) {
      _tile_loadd(5, a + a_rt + t * 32, sa);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (NT > 1) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c, sc);
  if constexpr (NT > 1) _tile_stored(1, c + 16, sc);
  if constexpr (MT > 1) _tile_stored(2, c1, sc);
  if constexpr (MT > 1 && NT > 1) _tile_stored(3, c1 + 16, sc);
}

template <bool Acc>
NPU_AMX_TARGET void block(int mt, int nt, const uint16_t* a, int64_t a_rt, int64_t lda, const uint16_t* b,
                          int64_t b_ct, int64_t kt, float* c, int64_t ldc) {
  if (mt == 2 && nt == 2) tile_block<2, 2, Acc>(a, a_rt, lda, b, b_ct, kt, c, ldc);
  else if (mt == 2) tile_block<2, 1, Acc>(a, a_rt, lda, b, b_ct, kt, c, ldc);
  else if (nt == 2) tile_block<1, 2, Acc>(a, a_rt, lda, b, b_ct, kt, c, ldc);
  else tile_block<1, 1, Acc>(a, a_rt, lda, b, b_ct, kt, c, ldc);
}

NPU_AMX_TARGET void load_tile_config() {
  // static: GCC 12 dropped the stores to a local configuration that only ldtilecfg reads
  static const TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.rows[t] = 16;
      c.colsb[t] = 64;
    }
    return c;
  }();
  _tile_loadconfig(&config);
}

NPU_AMX_TARGET void release_tiles() { _tile_release(); }

}  // namespace

bool amx_bf16_ready() {
  static const bool ready = detect_amx_bf16();
  return ready;
}

AmxTiles::AmxTiles() { load_tile_config(); }
AmxTiles::~AmxTiles() { release_tiles(); }

void amx_pack_keys(const BFloat16* k, int64_t ldk, int64_t keys, int64_t head_dim, uint16_t* out) {
  const int64_t pairs = round_up(head_dim, 32) / 2, full = head_dim / 2;
  auto* words = reinterpret_cast<uint32_t*>(out);  // one dim pair (2 x bf16) of one key
  for (int64_t nb = 0; nb < round_up(keys, 16) / 16; ++nb) {
    uint32_t* blk = words + nb * pairs * 16;
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t n = nb * 16 + i;
      if (n >= keys) {
        for (int64_t p = 0; p < pairs; ++p) blk[p * 16 + i] = 0;
        continue;
      }
      const BFloat16* row = k + n * ldk;
      for (int64_t p = 0; p < full; ++p) std::memcpy(&blk[p * 16 + i], row + 2 * p, 4);
      for (int64_t p = full; p < pairs; ++p) blk[p * 16 + i] = 2 * p < head_dim ? row[2 * p].bits : 0u;
    }
  }
}

NPU_AVX512_TARGET void amx_pack_values(const BFloat16* v, int64_t ldv, int64_t keys, int64_t v_dim, uint16_t* out) {
  const int64_t kpairs = round_up(keys, 32) / 2;
  for (int64_t g = 0; g * 16 < v_dim; ++g) {
    const int64_t c0 = g * 16, w = std::min<int64_t>(16, v_dim - c0);
    const __mmask16 cols = static_cast<__mmask16>((1u << w) - 1u);
    uint16_t* dst = out + g * kpairs * 32;
    for (int64_t p = 0; p < kpairs; ++p) {
      const int64_t n0 = 2 * p;
      const __m256i r0 = n0 < keys ? _mm256_maskz_loadu_epi16(cols, v + n0 * ldv + c0) : _mm256_setzero_si256();
      const __m256i r1 =
          n0 + 1 < keys ? _mm256_maskz_loadu_epi16(cols, v + (n0 + 1) * ldv + c0) : _mm256_setzero_si256();
      const __m512i lo = _mm512_maskz_cvtepu16_epi32(0xffff, r0), hi = _mm512_maskz_cvtepu16_epi32(0xffff, r1);
      _mm512_storeu_si512(dst + p * 32, _mm512_or_si512(lo, _mm512_maskz_slli_epi32(0xffff, hi, 16)));
    }
  }
}

NPU_AMX_TARGET void amx_scores(const uint16_t* qa, int64_t m16, int64_t e32, const uint16_t* kp, int64_t key0,
                               int64_t n16, int64_t causal_shift, float* s, int64_t lds) {
  const int64_t kt = e32 / 32, a_rt = 16 * e32, b_ct = 16 * e32;
  const uint16_t* b0 = kp + (key0 / 16) * b_ct;
  for (int64_t rt = 0; rt < m16 / 16; rt += 2) {
    const int mt = static_cast<int>(std::min<int64_t>(2, m16 / 16 - rt));
    const int64_t bound = (rt + mt) * 16 - 1 + causal_shift;  // columns the block's last row may see
    for (int64_t ct = 0; ct < n16 / 16 && ct * 16 < bound; ct += 2) {
      const int nt = static_cast<int>(std::min<int64_t>(2, n16 / 16 - ct));
      block<false>(mt, nt, qa + rt * a_rt, a_rt, e32, b0 + ct * b_ct, b_ct, kt, s + rt * 16 * lds + ct * 16, lds);
    }
  }
}

NPU_AMX_TARGET void amx_accumulate(const uint16_t* pa, int64_t ldp, int64_t m16, int64_t k32, const uint16_t* vp,
                                   int64_t s32, int64_t key0, int64_t ev16, int64_t causal_shift, float* o,
                                   int64_t ldo) {
  const int64_t a_rt = 16 * ldp, b_ct = (s32 / 2) * 32;
  const uint16_t* b0 = vp + (key0 / 2) * 32;
  for (int64_t rt = 0; rt < m16 / 16; rt += 2) {
    const int mt = static_cast<int>(std::min<int64_t>(2, m16 / 16 - rt));
    const int64_t bound = (rt + mt) * 16 - 1 + causal_shift;  // keys the block's last row may see
    const int64_t kt = std::min(k32, round_up(std::max<int64_t>(bound, 0), 32)) / 32;
    if (kt == 0) continue;
    for (int64_t ct = 0; ct < ev16 / 16; ct += 2) {
      const int nt = static_cast<int>(std::min<int64_t>(2, ev16 / 16 - ct));
      block<true>(mt, nt, pa + rt * a_rt, a_rt, ldp, b0 + ct * b_ct, b_ct, kt, o + rt * 16 * ldo + ct * 16, ldo);
    }
  }
}

#else  // no AMX outside x86-64: the callers check amx_bf16_ready() first

bool amx_bf16_ready() { return false; }
AmxTiles::AmxTiles() = default;
AmxTiles::~AmxTiles() = default;
void amx_pack_keys(const BFloat16*, int64_t, int64_t, int64_t, uint16_t*) {}
void amx_pack_values(const BFloat16*, int64_t, int64_t, int64_t, uint16_t*) {}
void amx_scores(const uint16_t*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, int64_t, float*, int64_t) {}
void amx_accumulate(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*, int64_t, int64_t, int64_t, int64_t,
                    float*, int64_t) {}

#endif

}  // namespace npu_kernels::detail
