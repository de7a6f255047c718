// The fused attention forward's two bf16 products on the CPU's AMX tile unit (tdpbf16ps, fp32 accumulators), as
// the Cube runs them: a head's K and V packed once into the tile layout, then per query tile Q K^T into fp32
// scores and P V into the fp32 output accumulator, 16 x 16 accumulator tiles in blocks of 2 x 2.
#pragma once

#include <cstdint>

#include "npu_kernels/dtype.h"

namespace npu_kernels::detail {

// AMX-BF16 (and AVX512-BF16, which rounds the probabilities) is usable here: the CPU has them, Linux granted
// this process the tile state, and NPU_SIM_AMX is not "0". Decided once per process.
bool amx_bf16_ready();

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Elements (uint16_t) of a head's packed keys / values.
inline int64_t amx_keys_elems(int64_t keys, int64_t head_dim) { return round_up(keys, 16) * round_up(head_dim, 32); }
inline int64_t amx_values_elems(int64_t keys, int64_t v_dim) { return round_up(keys, 32) * round_up(v_dim, 16); }

// K rows [0, keys) x [0, head_dim) (row stride ldk) as the B operand of Q K^T: per 16 keys and 32 dims one tile of
// 16 dim pairs x 16 keys x 2. Zero padding up to whole tiles.
void amx_pack_keys(const BFloat16* k, int64_t ldk, int64_t keys, int64_t head_dim, uint16_t* out);
// V rows [0, keys) x [0, v_dim) (row stride ldv) as the B operand of P V: per 16 columns, 16 key pairs x 16
// columns x 2 per tile, the key pairs of a column group contiguous. Zero padding up to whole tiles.
void amx_pack_values(const BFloat16* v, int64_t ldv, int64_t keys, int64_t v_dim, uint16_t* out);

// Holds the tile configuration on this thread for the products below, and releases the tile state at the end.
// (The configuration is per thread; oneDNN's AMX kernels load their own, so a scope must not span a oneDNN call.)
class AmxTiles {
 public:
  AmxTiles();
  ~AmxTiles();
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;
};

// Row r (of m16 = rows rounded up to 16) of a query tile sees block-relative key columns c < r + causal_shift
// (a large shift: all). Tiles wholly past that are skipped: their scores are never read, their P rows are 0.
//
// s[r][c] = sum_d qa[r][d] K[key0 + c][d] for c in [0, n16): qa is m16 x e32 bf16 (row stride e32, zero padded),
// kp amx_pack_keys' layout with e32 = head_dim rounded up to 32; key0 a multiple of 16; s fp32, row stride lds.
void amx_scores(const uint16_t* qa, int64_t m16, int64_t e32, const uint16_t* kp, int64_t key0, int64_t n16,
                int64_t causal_shift, float* s, int64_t lds);
// o[r][c] += sum_j pa[r][j] V[key0 + j][c] for j in [0, k32), c in [0, ev16): pa bf16, row stride ldp (zero beyond
// the row's last key up to k32); vp amx_pack_values' layout for s32 = keys rounded up to 32; key0 even; o fp32.
void amx_accumulate(const uint16_t* pa, int64_t ldp, int64_t m16, int64_t k32, const uint16_t* vp, int64_t s32,
                    int64_t key0, int64_t ev16, int64_t causal_shift, float* o, int64_t ldo);

}  // namespace npu_kernels::detail
