// Fused kernels: LinearAddGelu written with the tile layer, its tiling, and the same kernel written
// directly on the runtime (the overhead benchmark's baseline).
#include "npu_kernels/fused.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fast_math.h"
#include "gemm_tiling.h"
#include "npu_kernels/tile.h"

namespace npu_kernels {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// The epilogue streams an output tile from L0C through the UB in chunks of this many rows.
constexpr int64_t kEpilogueRows = 32;
std::size_t aligned(std::size_t bytes) {
  return (bytes + tile::TPipe::kAlign - 1) / tile::TPipe::kAlign * tile::TPipe::kAlign;
}

bool valid(const LinearAddGeluArgs& a) {
  if (a.m < 0 || a.n < 0 || a.k < 0 || a.tile_m < 0 || a.tile_n < 0 || a.tile_k < 0) return false;
  const bool empty = a.m == 0 || a.n == 0;
  return empty || (a.out != nullptr && a.bias != nullptr && (a.k == 0 || (a.x != nullptr && a.w != nullptr)));
}

bool plan(npu_sim::Stream stream, const LinearAddGeluArgs& args, LinearAddGeluTiling* t) {
  std::size_t ub = 0;
  int ai_cores = 1, threads = 1;
  if (!detail::device_limits(stream, &ub, &ai_cores, &threads)) return false;
  *t = linear_add_gelu_tiling(args, ai_cores);
  return true;
}

}  // namespace

LinearAddGeluTiling linear_add_gelu_tiling(const LinearAddGeluArgs& a, int ai_cores) {
  LinearAddGeluTiling t{};
  t.m = a.m, t.n = a.n, t.k = a.k;
  t.tile_m = a.tile_m > 0 ? a.tile_m : 128;
  t.tile_n = a.tile_n > 0 ? a.tile_n : 128;
  // tile_k 256: the double-buffered x / w tiles fill the 512 KiB L1 exactly. On libxsmm's micro-kernel (which
  // reads the tiles in place, no repacking) it measured 8-10% faster than K steps of 32, whose accumulator
  // round trips through the host's L2 dominate (bench_tile, 1024^3).
  t.tile_k = a.tile_k > 0 ? a.tile_k : 256;
  t.tiles_m = ceil_div(a.m, t.tile_m);
  t.tiles_n = ceil_div(a.n, t.tile_n);
  t.tiles_k = std::max<int64_t>(1, ceil_div(a.k, t.tile_k));
  t.block_dim = static_cast<uint32_t>(std::min<int64_t>(t.tiles_m * t.tiles_n, std::max(ai_cores, 1)));
  const std::size_t f = sizeof(float);
  t.l1_bytes = 2 * (aligned(f * t.tile_m * t.tile_k) + aligned(f * t.tile_k * t.tile_n));
  t.l0c_bytes = aligned(f * t.tile_m * t.tile_n);
  t.ub_bytes = aligned(f * t.tile_n) + 2 * aligned(f * std::min(t.tile_m, kEpilogueRows) * t.tile_n);
  return t;
}

// The kernel, as a kernel author writes it with the tile layer.
npu_sim::Status linear_add_gelu(npu_sim::Stream stream, const LinearAddGeluArgs& args) {
  using namespace tile;
  if (!valid(args)) return npu_sim::Status::kInvalidValue;
  LinearAddGeluTiling t;
  if (!plan(stream, args, &t)) return npu_sim::Status::kInvalidHandle;
  if (t.m == 0 || t.n == 0) return npu_sim::Status::kSuccess;
  const LinearAddGeluArgs a = args;
  return Launch(stream, "linear_add_gelu", t.block_dim, [a, t](TPipe& pipe) {
    const GlobalTensor<const float> x(a.x, t.m * t.k), w(a.w, t.k * t.n), bias(a.bias, t.n);
    const GlobalTensor<float> out(a.out, t.m * t.n);
    // Cube side: ping-pong x / w tiles for the K loop in L1, the fp32 accumulator in L0C.
    struct Operands {
      LocalTensor<float> x, w;
    };
    DoubleBuffer<Operands> in([&](int) {
      return Operands{pipe.AllocTensor<float>(t.tile_m * t.tile_k, TPosition::A1),
                      pipe.AllocTensor<float>(t.tile_k * t.tile_n, TPosition::B1)};
    });
    const LocalTensor<float> acc = pipe.AllocTensor<float>(t.tile_m * t.tile_n, TPosition::CO1);
    // Vector side, in the UB: the bias row and two chunks of output rows (the epilogue of one chunk overlaps
    // the copy-out of the previous one).
    const int64_t chunk_rows = std::min(t.tile_m, kEpilogueRows);
    const LocalTensor<float> bias_row = pipe.AllocTensor<float>(t.tile_n, TPosition::VECIN);
    const LocalTensor<float> res[2] = {pipe.AllocTensor<float>(chunk_rows * t.tile_n, TPosition::VECOUT),
                                       pipe.AllocTensor<float>(chunk_rows * t.tile_n, TPosition::VECOUT)};
    // Block index -> a contiguous run of output tiles (row-major: neighbours share x rows).
    const int64_t tiles = t.tiles_m * t.tiles_n;
    const int64_t begin = tiles * pipe.GetBlockIdx() / pipe.GetBlockNum();
    const int64_t end = tiles * (pipe.GetBlockIdx() + 1) / pipe.GetBlockNum();
    for (int64_t u = begin; u < end; ++u) {
      const int64_t i0 = u / t.tiles_n * t.tile_m, j0 = u % t.tiles_n * t.tile_n;
      const int64_t mc = std::min(t.tile_m, t.m - i0), nc = std::min(t.tile_n, t.n - j0);  // tails
      auto kc_of = [&](int64_t kt) { return std::min(t.tile_k, t.k - kt * t.tile_k); };
      in.Run(
          t.tiles_k,
          [&](int64_t kt, Operands& s) {  // copy-in: x[i0:+mc, k0:+kc] and w[k0:+kc, j0:+nc], dense in the UB
            const int64_t k0 = kt * t.tile_k, kc = kc_of(kt);
            DataCopy(s.x, x[i0 * t.k + k0], DataCopyParams2D{mc, kc, t.k, kc});
            DataCopy(s.w, w[k0 * t.n + j0], DataCopyParams2D{kc, nc, t.n, nc});
          },
          [&](int64_t kt, Operands& s) {  // compute: acc (+)= x_tile @ w_tile on the Cube, fp32
            Mmad(acc, s.x, s.w, MmadParams{mc, nc, kc_of(kt), kt > 0});
          });
      // Epilogue on the Vector unit, chunk by chunk of rows: the accumulator rows to the UB, + bias on every
      // row, GELU, then copy-out.
      DataCopy(bias_row, bias[j0], nc);
      for (int64_t r0 = 0, c = 0; r0 < mc; r0 += chunk_rows, ++c) {
        const int64_t rows = std::min(chunk_rows, mc - r0);
        const LocalTensor<float>& o = res[c & 1];
        DataCopy(o, acc[r0 * nc], rows * nc);
        for (int64_t r = 0; r < rows; ++r) Add(o[r * nc], o[r * nc], bias_row, nc);
        Gelu(o, o, rows * nc);
        DataCopy(out[(i0 + r0) * t.n + j0], o, DataCopyParams2D{rows, nc, t.n, nc});
      }
    }
  });
}

// The same kernel with the same tiling written directly: raw pointers into the same buffers (x / w in L1, the
// accumulator in L0C, the output tile in the UB), one buffer per operand, bias and GELU in one loop, the
// cost counted by hand and recorded once per block.
npu_sim::Status linear_add_gelu_direct(npu_sim::Stream stream, const LinearAddGeluArgs& args) {
  if (!valid(args)) return npu_sim::Status::kInvalidValue;
  LinearAddGeluTiling t;
  if (!plan(stream, args, &t)) return npu_sim::Status::kInvalidHandle;
  if (t.m == 0 || t.n == 0) return npu_sim::Status::kSuccess;
  detail::ensure_micro_kernel_loaded();
  const LinearAddGeluArgs a = args;
  return npu_sim::launch_kernel(
      stream, "linear_add_gelu_direct", t.block_dim, [a, t](const npu_sim::BlockContext& ctx) {
        const std::size_t l1 = sizeof(float) * (t.tile_m * t.tile_k + t.tile_k * t.tile_n);
        const std::size_t l0c = sizeof(float) * t.tile_m * t.tile_n;
        const std::size_t ub = sizeof(float) * std::min(t.tile_m, kEpilogueRows) * t.tile_n;
        if (l1 > tile::L1Bytes() || l0c > tile::L0CBytes() || ub > ctx.ub_bytes) {
          throw npu_sim::KernelError("tile plan needs " + std::to_string(l1) + " bytes of L1, " + std::to_string(l0c) +
                                     " of L0C and " + std::to_string(ub) + " of UB");
        }
        thread_local std::vector<float> l1_mem, l0c_mem;  // the core's L1 and L0C
        if (l1_mem.size() < l1 / sizeof(float)) l1_mem.resize(l1 / sizeof(float));
        if (l0c_mem.size() < l0c / sizeof(float)) l0c_mem.resize(l0c / sizeof(float));
        float* px = l1_mem.data();
        float* pw = px + t.tile_m * t.tile_k;
        float* acc = l0c_mem.data();
        float* res = static_cast<float*>(ctx.ub);
        uint64_t gm_read = 0, gm_write = 0, cube = 0, vec = 0;
        const int64_t tiles = t.tiles_m * t.tiles_n;
        const int64_t begin = tiles * ctx.block_idx / ctx.block_dim, end = tiles * (ctx.block_idx + 1) / ctx.block_dim;
        for (int64_t u = begin; u < end; ++u) {
          const int64_t i0 = u / t.tiles_n * t.tile_m, j0 = u % t.tiles_n * t.tile_n;
          const int64_t mc = std::min(t.tile_m, t.m - i0), nc = std::min(t.tile_n, t.n - j0);
          for (int64_t kt = 0; kt < t.tiles_k; ++kt) {
            const int64_t k0 = kt * t.tile_k, kc = std::min(t.tile_k, t.k - k0);
            for (int64_t r = 0; r < mc; ++r) std::memcpy(px + r * kc, a.x + (i0 + r) * t.k + k0, sizeof(float) * kc);
            for (int64_t r = 0; r < kc; ++r) std::memcpy(pw + r * nc, a.w + (k0 + r) * t.n + j0, sizeof(float) * nc);
            detail::micro_gemm(mc, nc, kc, px, pw, acc, kt > 0);  // the Cube micro-kernel the tile layer's Mmad calls
            gm_read += sizeof(float) * (mc * kc + kc * nc);
            cube += 2 * static_cast<uint64_t>(mc) * nc * kc;
          }
          const float* b = a.bias + j0;
          for (int64_t r = 0; r < mc; ++r) {
            const float* in = acc + r * nc;
            float* row = res + r % kEpilogueRows * nc;
            for (int64_t j = 0; j < nc; ++j) row[j] = detail::gelu_erf(in[j] + b[j]);
            std::memcpy(a.out + (i0 + r) * t.n + j0, row, sizeof(float) * nc);
          }
          gm_read += sizeof(float) * nc;
          gm_write += sizeof(float) * mc * nc;
          vec += 2 * static_cast<uint64_t>(mc) * nc;
        }
        npu_sim::record_traffic(ctx, gm_read, gm_write, cube, vec);
      });
}

}  // namespace npu_kernels
