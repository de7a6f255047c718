// The tile programming layer kernel authors write fused kernels with, modelled on Ascend C: global
// tensors over device memory, tiles allocated from the core's Unified Buffer (UB), DataCopy GM<->UB,
// vector ops and the Cube matmul on tiles, a double-buffered pipeline, and the per-launch cost records.
//
// Note [Tile layer model]
// A kernel is launched with tile::Launch(stream, name, block_dim, body); each block gets a TPipe, the
// block's view of its AI core: the UB budget (BlockContext::ub_bytes, 192 KiB unless NPU_SIM_UB_KB says
// otherwise), a bump allocator over it (AllocTensor / InitBuffer), and the block's cost counters. Asking
// for more UB than the budget throws npu_sim::KernelError naming the kernel and the bytes asked, which
// the stream records as the launch's failure. Every op that touches GM (DataCopy) counts the bytes it
// moves, every vector op counts one Vector FLOP per element it produces (per element it reads, for the
// reductions; a Cast counts one too), Mmad counts 2*M*N*K Cube FLOPs. The counts are plain per-block sums,
// added to the launch's record (npu_sim::record_traffic) once, when the TPipe goes away; with recording
// off that is a null check.
// Cube buffers: besides the UB (the Vector unit's buffer), a TPipe owns the core's Cube buffers, each a
// bump allocator with its own budget, chosen by the TPosition a tile is allocated at (Ascend C's names):
//   VECIN / VECOUT / VECCALC  the Unified Buffer (ub_bytes)
//   A1 / B1                   L1, the Cube's operand buffer (NPU_SIM_L1_KB, default 512 KiB as on a 910B)
//   CO1                       L0C, the Cube's fp32 accumulator (NPU_SIM_L0C_KB, default 128 KiB as on a 910B)
// Mmad reads its operands from A1 / B1 tiles and accumulates into a CO1 tile; the L1 -> L0A / L0B loads
// of base blocks happen inside it (the micro-kernel's own panel packing), so L0A / L0B have no budget
// here. The Vector ops take UB tiles only; a CO1 tile reaches the UB by DataCopy (the Fixpipe move,
// no GM bytes). Overflowing L1 or L0C throws like the UB ("L1 buffer overflow in kernel ...").
// Layout: tiles are dense row-major (a real Cube wants the fractal NZ layout; a CPU does not).
// The layer is header-only where it is a thin wrapper; the math (Mmad, the vector ops, Cast) is in
// kernels/src/tile.cpp, called once per tile.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "npu_kernels/dtype.h"
#include "npu_sim/runtime.h"

namespace npu_kernels::tile {

class TPipe;

// A tensor in global memory (HBM): pointer + element count. operator[] is a view from an offset.
template <typename T>
struct GlobalTensor {
  T* data = nullptr;
  int64_t size = 0;

  GlobalTensor() = default;
  GlobalTensor(T* p, int64_t n) : data(p), size(n) {}
  void SetGlobalBuffer(T* p, int64_t n) { data = p, size = n; }
  GlobalTensor operator[](int64_t offset) const { return GlobalTensor(data + offset, size - offset); }
  T* GetPhyAddr() const { return data; }
  int64_t GetSize() const { return size; }
};

// A tile in the Unified Buffer, allocated from a TPipe (which its ops charge their costs to).
// Where a tile lives (Ascend C's TPosition): the three VEC positions are the UB, A1 / B1 share L1, CO1 is L0C.
enum class TPosition : uint8_t { VECCALC, VECIN, VECOUT, A1, B1, CO1 };
enum class Buffer : uint8_t { kUB, kL1, kL0C };  // the physical buffer behind a position
constexpr Buffer buffer_of(TPosition p) {
  return p == TPosition::A1 || p == TPosition::B1 ? Buffer::kL1 : p == TPosition::CO1 ? Buffer::kL0C : Buffer::kUB;
}

template <typename T>
struct LocalTensor {
  T* data = nullptr;
  int64_t size = 0;
  TPipe* pipe = nullptr;
  TPosition pos = TPosition::VECCALC;

  LocalTensor operator[](int64_t offset) const { return LocalTensor{data + offset, size - offset, pipe, pos}; }
  T& operator()(int64_t i) const { return data[i]; }
  T GetValue(int64_t i) const { return data[i]; }
  void SetValue(int64_t i, T v) const { data[i] = v; }
  T* GetPhyAddr() const { return data; }
  int64_t GetSize() const { return size; }
};

// A UB range reserved once and viewed as a tile of any type (Ascend C's TBuf<VECCALC>).
struct TBuf {
  void* data = nullptr;
  std::size_t bytes = 0;
  TPipe* pipe = nullptr;
  TPosition pos = TPosition::VECCALC;
  template <typename T>
  LocalTensor<T> Get() const {
    return LocalTensor<T>{static_cast<T*>(data), static_cast<int64_t>(bytes / sizeof(T)), pipe, pos};
  }
};

// What one block has done so far (added to the launch record when its TPipe ends).
struct BlockCost {
  uint64_t gm_read = 0, gm_write = 0, cube_flops = 0, vector_flops = 0;
};

// One block's view of its AI core. Not copyable; lives for the block (tile::Launch makes it).
class TPipe {
 public:
  static constexpr std::size_t kAlign = 64;  // every allocation starts on a 64-byte boundary

  TPipe(const npu_sim::BlockContext& ctx, const char* kernel);
  ~TPipe() { npu_sim::record_traffic(ctx_, cost.gm_read, cost.gm_write, cost.cube_flops, cost.vector_flops); }
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;

  // A tile of n elements at `pos` (the UB unless told); throws KernelError ("Unified Buffer overflow in
  // kernel '<name>': asked for ...", "L1 buffer overflow ...", "L0C buffer overflow ...") if it does not
  // fit what is left of that buffer's budget.
  template <typename T>
  LocalTensor<T> AllocTensor(int64_t n, TPosition pos = TPosition::VECCALC) {
    static_assert(std::is_trivially_copyable_v<T>, "tiles hold plain values");
    if (n < 0) fail("AllocTensor of " + std::to_string(n) + " elements");
    return LocalTensor<T>{static_cast<T*>(take(buffer_of(pos), sizeof(T) * static_cast<std::size_t>(n))), n, this,
                          pos};
  }
  void InitBuffer(TBuf& buf, std::size_t bytes, TPosition pos = TPosition::VECCALC) {
    buf = TBuf{take(buffer_of(pos), bytes), bytes, this, pos};
  }
  // Frees every tile of this pipe, in every buffer (their LocalTensors must not be used afterwards).
  void Reset() { used_[0] = used_[1] = used_[2] = 0; }

  uint32_t GetBlockIdx() const { return ctx_.block_idx; }
  uint32_t GetBlockNum() const { return ctx_.block_dim; }
  std::size_t budget(Buffer b = Buffer::kUB) const { return budget_[static_cast<int>(b)]; }
  std::size_t used(Buffer b = Buffer::kUB) const { return used_[static_cast<int>(b)]; }
  const char* kernel() const { return kernel_; }
  const npu_sim::BlockContext& context() const { return ctx_; }

  BlockCost cost;  // the ops below add to it

  // Throws KernelError(what); the stream records it as "kernel '<name>' failed: <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void* take(Buffer b, std::size_t bytes) {
    const int i = static_cast<int>(b);
    const std::size_t start = (used_[i] + kAlign - 1) / kAlign * kAlign;
    if (bytes > budget_[i] || start > budget_[i] - bytes) overflow(b, bytes);
    used_[i] = start + bytes;
    return static_cast<char*>(base_[i]) + start;
  }
  [[noreturn]] void overflow(Buffer b, std::size_t bytes) const;

  const npu_sim::BlockContext ctx_;
  const char* kernel_;
  void* base_[3];            // UB, L1, L0C of the executing core
  std::size_t budget_[3];    // their sizes
  std::size_t used_[3] = {0, 0, 0};
};

// The Cube buffers' budgets (bytes per AI core): NPU_SIM_L1_KB (default 512) and NPU_SIM_L0C_KB (default
// 128), each 16..16384 KiB, read once.
std::size_t L1Bytes();
std::size_t L0CBytes();

// Launches body(TPipe&) once per block, like npu_sim::launch_kernel (`name` must be a static string;
// `body` is copied into the launch and must own what it reads). Prepares the Cube first.
void PrepareCube();  // loads the Cube micro-kernel on the launching thread (see gemm_micro.cpp)
template <typename Body>
npu_sim::Status Launch(npu_sim::Stream stream, const char* name, uint32_t block_dim, Body body) {
  PrepareCube();
  return npu_sim::launch_kernel(stream, name, block_dim,
                                [name, body = std::move(body)](const npu_sim::BlockContext& ctx) {
                                  TPipe pipe(ctx, name);
                                  body(pipe);
                                });
}

// ---------------------------------------------------------------------------------------------------
// DataCopy: GM -> UB (counts GM bytes read) and UB -> GM (counts GM bytes written). Ranges are checked
// against both tensors' sizes (a KernelError names the kernel).
namespace detail {
void check_copy(const TPipe& pipe, int64_t rows, int64_t cols, int64_t gm_stride, int64_t gm_size, int64_t ub_stride,
                int64_t ub_size);
void copy_rows(void* dst, int64_t dst_stride, const void* src, int64_t src_stride, int64_t rows, std::size_t row_bytes);
}  // namespace detail

// 1-D: n contiguous elements. (A GlobalTensor<const T> is a read-only source.)
template <typename T, typename G, typename = std::enable_if_t<std::is_same_v<std::remove_const_t<G>, T>>>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<G>& src, int64_t n) {
  detail::check_copy(*dst.pipe, 1, n, n, src.size, n, dst.size);
  detail::copy_rows(dst.data, 0, src.data, 0, 1, sizeof(T) * n);
  dst.pipe->cost.gm_read += sizeof(T) * n;
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, int64_t n) {
  detail::check_copy(*src.pipe, 1, n, n, dst.size, n, src.size);
  detail::copy_rows(dst.data, 0, src.data, 0, 1, sizeof(T) * n);
  src.pipe->cost.gm_write += sizeof(T) * n;
}

// 2-D (a matrix tile): `rows` runs of `cols` elements, `gm_stride` / `ub_stride` elements apart.
struct DataCopyParams2D {
  int64_t rows = 0, cols = 0;
  int64_t gm_stride = 0;  // elements between row starts in GM (the matrix's leading dimension)
  int64_t ub_stride = 0;  // elements between row starts in the tile (0: cols, i.e. dense)
};
template <typename T, typename G, typename = std::enable_if_t<std::is_same_v<std::remove_const_t<G>, T>>>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<G>& src, const DataCopyParams2D& p) {
  const int64_t ub_stride = p.ub_stride != 0 ? p.ub_stride : p.cols;
  detail::check_copy(*dst.pipe, p.rows, p.cols, p.gm_stride, src.size, ub_stride, dst.size);
  detail::copy_rows(dst.data, sizeof(T) * ub_stride, src.data, sizeof(T) * p.gm_stride, p.rows, sizeof(T) * p.cols);
  dst.pipe->cost.gm_read += sizeof(T) * p.rows * p.cols;
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams2D& p) {
  const int64_t ub_stride = p.ub_stride != 0 ? p.ub_stride : p.cols;
  detail::check_copy(*src.pipe, p.rows, p.cols, p.gm_stride, dst.size, ub_stride, src.size);
  detail::copy_rows(dst.data, sizeof(T) * p.gm_stride, src.data, sizeof(T) * ub_stride, p.rows, sizeof(T) * p.cols);
  src.pipe->cost.gm_write += sizeof(T) * p.rows * p.cols;
}

// Local: a CO1 (L0C) tile to a UB tile, n elements (the Fixpipe move that hands the Cube's result to the
// Vector unit; no GM bytes). dst must be in the UB, src in CO1.
namespace detail {
void check_fixpipe(const TPipe& pipe, int64_t n, TPosition dst, int64_t dst_size, TPosition src, int64_t src_size);
}
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, int64_t n) {
  detail::check_fixpipe(*dst.pipe, n, dst.pos, dst.size, src.pos, src.size);
  detail::copy_rows(dst.data, 0, src.data, 0, 1, sizeof(T) * n);
}

// ---------------------------------------------------------------------------------------------------
// Vector unit: float32 tiles, n elements (dst may alias a source). One Vector FLOP per element produced.
namespace detail {
enum class VecOp { kAdd, kMul, kAdds, kMuls, kExp, kRelu, kGeluErf, kGeluTanh };
void vec_binary(VecOp op, float* dst, const float* a, const float* b, int64_t n);
void vec_scalar(VecOp op, float* dst, const float* a, float s, int64_t n);
void vec_unary(VecOp op, float* dst, const float* a, int64_t n);
float vec_reduce_sum(const float* a, int64_t n);
float vec_reduce_max(const float* a, int64_t n);
template <typename To, typename From>
void vec_cast(To* dst, const From* src, int64_t n);
void check_vec(const TPipe& pipe, const char* op, int64_t n, int64_t dst_size, int64_t src_size);
// The Vector unit reads and writes UB tiles only (a CO1 tile goes to the UB by DataCopy first).
void check_ub(const TPipe& pipe, const char* op, TPosition dst, TPosition src);
}  // namespace detail

inline void Add(const LocalTensor<float>& dst, const LocalTensor<float>& a, const LocalTensor<float>& b, int64_t n) {
  detail::check_vec(*dst.pipe, "Add", n, dst.size, std::min(a.size, b.size));
  detail::check_ub(*dst.pipe, "Add", dst.pos, a.pos), detail::check_ub(*dst.pipe, "Add", dst.pos, b.pos);
  detail::vec_binary(detail::VecOp::kAdd, dst.data, a.data, b.data, n);
  dst.pipe->cost.vector_flops += n;
}
inline void Mul(const LocalTensor<float>& dst, const LocalTensor<float>& a, const LocalTensor<float>& b, int64_t n) {
  detail::check_vec(*dst.pipe, "Mul", n, dst.size, std::min(a.size, b.size));
  detail::check_ub(*dst.pipe, "Mul", dst.pos, a.pos), detail::check_ub(*dst.pipe, "Mul", dst.pos, b.pos);
  detail::vec_binary(detail::VecOp::kMul, dst.data, a.data, b.data, n);
  dst.pipe->cost.vector_flops += n;
}
inline void Adds(const LocalTensor<float>& dst, const LocalTensor<float>& a, float s, int64_t n) {
  detail::check_vec(*dst.pipe, "Adds", n, dst.size, a.size);
  detail::check_ub(*dst.pipe, "Adds", dst.pos, a.pos);
  detail::vec_scalar(detail::VecOp::kAdds, dst.data, a.data, s, n);
  dst.pipe->cost.vector_flops += n;
}
inline void Muls(const LocalTensor<float>& dst, const LocalTensor<float>& a, float s, int64_t n) {
  detail::check_vec(*dst.pipe, "Muls", n, dst.size, a.size);
  detail::check_ub(*dst.pipe, "Muls", dst.pos, a.pos);
  detail::vec_scalar(detail::VecOp::kMuls, dst.data, a.data, s, n);
  dst.pipe->cost.vector_flops += n;
}
inline void Exp(const LocalTensor<float>& dst, const LocalTensor<float>& a, int64_t n) {
  detail::check_vec(*dst.pipe, "Exp", n, dst.size, a.size);
  detail::check_ub(*dst.pipe, "Exp", dst.pos, a.pos);
  detail::vec_unary(detail::VecOp::kExp, dst.data, a.data, n);
  dst.pipe->cost.vector_flops += n;
}
inline void Relu(const LocalTensor<float>& dst, const LocalTensor<float>& a, int64_t n) {
  detail::check_vec(*dst.pipe, "Relu", n, dst.size, a.size);
  detail::check_ub(*dst.pipe, "Relu", dst.pos, a.pos);
  detail::vec_unary(detail::VecOp::kRelu, dst.data, a.data, n);
  dst.pipe->cost.vector_flops += n;
}
// GELU as torch.nn.functional.gelu: approximate="none" (erf, the default) or "tanh".
enum class GeluForm { kErf, kTanh };
inline void Gelu(const LocalTensor<float>& dst, const LocalTensor<float>& a, int64_t n,
                 GeluForm form = GeluForm::kErf) {
  detail::check_vec(*dst.pipe, "Gelu", n, dst.size, a.size);
  detail::check_ub(*dst.pipe, "Gelu", dst.pos, a.pos);
  detail::vec_unary(form == GeluForm::kErf ? detail::VecOp::kGeluErf : detail::VecOp::kGeluTanh, dst.data, a.data, n);
  dst.pipe->cost.vector_flops += n;
}
// dst(0) = the sum / the max of a's first n elements (n >= 1 for the max).
inline void ReduceSum(const LocalTensor<float>& dst, const LocalTensor<float>& a, int64_t n) {
  detail::check_vec(*dst.pipe, "ReduceSum", n, dst.size < 1 ? -1 : n, a.size);
  detail::check_ub(*dst.pipe, "ReduceSum", dst.pos, a.pos);
  dst.data[0] = detail::vec_reduce_sum(a.data, n);
  dst.pipe->cost.vector_flops += n;
}
inline void ReduceMax(const LocalTensor<float>& dst, const LocalTensor<float>& a, int64_t n) {
  detail::check_vec(*dst.pipe, "ReduceMax", n, dst.size < 1 ? -1 : n, a.size);
  detail::check_ub(*dst.pipe, "ReduceMax", dst.pos, a.pos);
  if (n < 1) dst.pipe->fail("ReduceMax of 0 elements");
  dst.data[0] = detail::vec_reduce_max(a.data, n);
  dst.pipe->cost.vector_flops += n;
}
// Conversions between float32 and fp16 / bf16 (round to nearest even), either way.
template <typename To, typename From>
void Cast(const LocalTensor<To>& dst, const LocalTensor<From>& src, int64_t n) {
  static_assert((std::is_same_v<To, float> && (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>)) ||
                    (std::is_same_v<From, float> && (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>)),
                "Cast converts between float and Half / BFloat16");
  detail::check_vec(*dst.pipe, "Cast", n, dst.size, src.size);
  detail::check_ub(*dst.pipe, "Cast", dst.pos, src.pos);
  detail::vec_cast(dst.data, src.data, n);
  dst.pipe->cost.vector_flops += n;
}

// ---------------------------------------------------------------------------------------------------
// Cube unit: c (m x n) = [c +] a (m x k) @ b (k x n), dense row-major tiles, float32 accumulation; a and b
// are float, Half or BFloat16 tiles in L1 (A1 / B1), c a CO1 (L0C) tile. Counts 2*m*n*k Cube FLOPs.
struct MmadParams {
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;  // false: c = a @ b (Ascend C's cmatrixInitVal); true: c += a @ b
};
namespace detail {
template <typename T>
void mmad(float* c, const T* a, const T* b, int64_t m, int64_t n, int64_t k, bool accumulate);
}
template <typename T>
void Mmad(const LocalTensor<float>& c, const LocalTensor<T>& a, const LocalTensor<T>& b, const MmadParams& p) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>,
                "Mmad multiplies float, Half or BFloat16 tiles");
  if (p.m < 0 || p.n < 0 || p.k < 0 || a.size < p.m * p.k || b.size < p.k * p.n || c.size < p.m * p.n) {
    c.pipe->fail("Mmad: m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                 " does not fit the tiles (a " + std::to_string(a.size) + ", b " + std::to_string(b.size) + ", c " +
                 std::to_string(c.size) + " elements)");
  }
  if (buffer_of(a.pos) != Buffer::kL1 || buffer_of(b.pos) != Buffer::kL1 || c.pos != TPosition::CO1) {
    c.pipe->fail("Mmad takes its operands from L1 (A1 / B1) and accumulates in L0C (CO1)");
  }
  detail::mmad(c.data, a.data, b.data, p.m, p.n, p.k, p.accumulate);
  c.pipe->cost.cube_flops += 2 * static_cast<uint64_t>(p.m) * p.n * p.k;
}

// ---------------------------------------------------------------------------------------------------
// Double-buffered pipeline over `count` steps with two slots of UB tiles (ping-pong): the copy-in of step
// k+1 is issued before the compute of step k, which is followed by its copy-out, so on an NPU the DMA of
// k+1 would overlap the compute of k (here the order is the same, run by one thread). A slot is whatever
// the kernel needs per step (a struct of LocalTensors), made twice from the pipe by `make(slot_index)`.
template <typename Slot>
class DoubleBuffer {
 public:
  template <typename Make>
  explicit DoubleBuffer(Make make) : slots_{make(0), make(1)} {}

  Slot& operator[](int64_t step) { return slots_[step & 1]; }

  // copy_in(k, slot), compute(k, slot), copy_out(k, slot) for k in [0, count).
  template <typename CopyIn, typename Compute, typename CopyOut>
  void Run(int64_t count, CopyIn&& copy_in, Compute&& compute, CopyOut&& copy_out) {
    if (count <= 0) return;
    copy_in(int64_t{0}, slots_[0]);
    for (int64_t k = 0; k < count; ++k) {
      if (k + 1 < count) copy_in(k + 1, slots_[(k + 1) & 1]);
      compute(k, slots_[k & 1]);
      copy_out(k, slots_[k & 1]);
    }
  }
  template <typename CopyIn, typename Compute>
  void Run(int64_t count, CopyIn&& copy_in, Compute&& compute) {
    Run(count, copy_in, compute, [](int64_t, Slot&) {});
  }

 private:
  Slot slots_[2];
};

}  // namespace npu_kernels::tile
