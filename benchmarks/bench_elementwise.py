"""Elementwise benchmark: (1) a chain of 1000 small ops (1k elements, then one sync) — async launch vs
CPU eager; (2) 16M-element ops — npu time / CPU eager time and achieved GB/s against a STREAM-style
copy bandwidth measured in the same interleaved tries; (3) the same ops in fp16 and bf16; (4) the libm
transcendentals (sin ... atan2) on 1M elements in fp32 and fp64, where npu's loops call glibc's libmvec and CPU's
call Sleef; (5) the small broadcast / strided ops and copies of a transformer layer (a tiny Llama's shapes), 100
back to back. Prints ratios; asserts nothing.
Run: python benchmarks/bench_elementwise.py [--only small]"""
import argparse

import torch

import torch_npu_sim  # noqa: F401
from _common import best_of_each, print_table


def small_chain(device):
    x = torch.randn(1024, device=device)
    y = torch.randn(1024, device=device)

    def run():
        z = x
        for _ in range(250):
            z = z * y
            z = z + x
            z = torch.tanh(z)
            z = z - y
        if device == "npu":
            torch.npu.synchronize()
        return z
    return run


def big(device, op, dtype=torch.float32):
    n = 16 << 20
    a = torch.rand(n, device=device, dtype=dtype)
    b = torch.rand(n, device=device, dtype=dtype)
    out = torch.empty(n, device=device, dtype=dtype)
    fns = {
        "add (a+b)": (lambda: torch.add(a, b, out=out), 3),
        "mul scalar (a*2)": (lambda: torch.mul(a, 2.0, out=out), 2),
        "sigmoid(a)": (lambda: torch.sigmoid(a, out=out), 2),
        # F.gelu has no out=; its ATen op does. (A fresh 64 MB output per call would time CPU's page faults.)
        "gelu(a)": (lambda: torch._C._nn.gelu(a, out=out), 2),
        "gelu tanh(a)": (lambda: torch._C._nn.gelu(a, approximate="tanh", out=out), 2),
        "exp(a)": (lambda: torch.exp(a, out=out), 2),
    }
    fn, arrays = fns[op]

    def run():
        fn()
        if device == "npu":
            torch.npu.synchronize()
    return run, n * a.element_size() * arrays


def stream_copy():
    """A STREAM-style copy of 16M fp32 (CPU PyTorch, all threads): the bandwidth limit. Returns (run, bytes)."""
    n = 16 << 20
    a = torch.empty(n)
    b = torch.rand(n)
    a.copy_(b)
    return (lambda: a.copy_(b)), 2 * 4 * n


def layer_ops(device):
    """The small ops of a transformer layer at tiny-Llama shapes (8 x 64 tokens, hidden 128, 4 heads of 32,
    intermediate 344): broadcasts, per-row scalars, strided views, head reshapes, rotate_half's cat. Each writes a
    preallocated output (out=, copy_), so that neither side times its allocator: CPU's glibc heap gave a 256 KiB
    result back to the kernel after some calls and page-faulted it in again (6 us a call in one harness, 98 in
    another)."""
    g = torch.Generator().manual_seed(0)

    def r(*s):
        return torch.randn(*s, generator=g).to(device)

    h, w, rstd = r(8, 64, 128), r(128), r(8, 64, 1).abs() + 1
    gate, up = r(8, 64, 344), r(8, 64, 344)
    q = r(8, 64, 4, 32).transpose(1, 2)  # [8, 4, 64, 32], as the attention's q after view + transpose
    cos = r(1, 1, 64, 32)
    flat = r(64 * 1024)
    o128, o344, oq, half, oflat = h.clone(), gate.clone(), q.contiguous(), q[..., 16:].contiguous(), flat.clone()
    return {
        "x * weight[128]": lambda: torch.mul(h, w, out=o128),
        "x * rstd[8,64,1]": lambda: torch.mul(h, rstd, out=o128),
        "x / rstd[8,64,1]": lambda: torch.div(h, rstd, out=o128),
        "q (transposed view) * cos": lambda: torch.mul(q, cos, out=oq),
        "heads split (copy_ of the transposed view)": lambda: oq.copy_(q),
        "rotate_half: cat(-x2, x1)": lambda: torch.cat((torch.neg(q[..., 16:], out=half), q[..., :16]), -1, out=oq),
        "gate * up [8,64,344]": lambda: torch.mul(gate, up, out=o344),
        "add 64K": lambda: torch.add(flat, flat, out=oflat),
        "exp 64K": lambda: torch.exp(flat, out=oflat),
    }


def small_ops_table():
    cpu, npu = layer_ops("cpu"), layer_ops("npu")
    rows = []
    for name in cpu:
        c_fn = cpu[name]
        n_fn = npu[name]
        n_run = lambda n_fn=n_fn: (n_fn(), torch.npu.synchronize())  # noqa: E731
        c_fn(), n_run()
        def hundred(fn, sync):
            for _ in range(100):
                fn()  # each result dropped at once: its memory is reused by the next call, as in a model
            sync()
        c, n = best_of_each([lambda: hundred(c_fn, lambda: None), lambda: hundred(n_fn, torch.npu.synchronize)],
                            repeat=7)
        rows.append((name, f"{c * 1e4:.1f}", f"{n * 1e4:.1f}", f"{n / c:.2f}"))
    print_table("Small ops of a transformer layer, 100 back to back (us per op; ratio = npu/cpu)",
                ["case", "CPU eager us", "npu us", "npu/cpu"], rows)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", choices=["small"], help="run one section only")
    if p.parse_args().only == "small":
        return small_ops_table()
    print(f"threads: torch CPU {torch.get_num_threads()}, npu core threads "
          f"{torch.npu.get_device_properties(0).core_threads}")
    rows = []
    cpu_t, npu_t = best_of_each([small_chain("cpu"), small_chain("npu")], repeat=9)
    rows.append(("1000 ops on 1k elements + sync", f"{cpu_t * 1e3:.2f}", f"{npu_t * 1e3:.2f}", f"{npu_t / cpu_t:.2f}", "-"))
    copy_run, copy_bytes = stream_copy()
    for op in ["add (a+b)", "mul scalar (a*2)", "sigmoid(a)", "gelu(a)"]:
        cpu_run, nbytes = big("cpu", op)
        npu_run, _ = big("npu", op)
        cpu_run(), npu_run()
        # the copy is timed in the same interleaved tries: the VM's memory bandwidth drifts between phases
        c, n, cp = best_of_each([cpu_run, npu_run, copy_run], repeat=9)
        limit = copy_bytes / cp / 1e9
        rows.append((f"{op}, 16M fp32", f"{c * 1e3:.2f}", f"{n * 1e3:.2f}", f"{n / c:.2f}",
                     f"{nbytes / n / 1e9:.1f} GB/s ({100 * nbytes / n / 1e9 / limit:.0f}% of copy {limit:.1f})"))
    print_table("Elementwise: npu vs CPU eager (ms; ratio = npu/cpu, lower is better)",
                ["case", "CPU eager ms", "npu ms", "npu/cpu", "npu bandwidth"], rows)
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for op in ["add (a+b)", "mul scalar (a*2)", "sigmoid(a)", "gelu(a)", "gelu tanh(a)", "exp(a)"]:
            cpu_run, nbytes = big("cpu", op, dtype)
            npu_run, _ = big("npu", op, dtype)
            cpu_run(), npu_run()
            c, n = best_of_each([cpu_run, npu_run], repeat=7)
            rows.append((f"{op}, 16M {str(dtype)[6:]}", f"{c * 1e3:.2f}", f"{n * 1e3:.2f}", f"{n / c:.2f}",
                         f"{nbytes / n / 1e9:.1f} GB/s"))
    print_table("16-bit elementwise (computed in fp32, rounded once): npu vs CPU eager in the same dtype",
                ["case", "CPU eager ms", "npu ms", "npu/cpu", "npu bandwidth"], rows)

    rows = []
    names = ["sin", "cos", "tan", "asin", "atan", "sinh", "atanh", "exp2", "expm1", "log10", "log1p", "erfc", "exp",
             "erf", "atan2", "pow 2.5"]
    for dtype in (torch.float32, torch.float64):
        x = torch.rand(1 << 20, dtype=dtype) * 0.98 + 0.01
        for name in names:
            if name == "atan2":
                fn = lambda t: torch.atan2(t, t * 0.5 + 0.1)  # noqa: E731
            elif name == "pow 2.5":
                fn = lambda t: torch.pow(t, 2.5)  # noqa: E731
            else:
                fn = getattr(torch, name)
            xn = x.to("npu")
            cpu_run = lambda fn=fn: fn(x)  # noqa: E731
            npu_run = lambda fn=fn: (fn(xn), torch.npu.synchronize())  # noqa: E731
            cpu_run(), npu_run()
            c, n = best_of_each([cpu_run, npu_run], repeat=5)
            rows.append((f"{name}, 1M {str(dtype)[6:]}", f"{c * 1e3:.2f}", f"{n * 1e3:.2f}", f"{n / c:.2f}", "-"))
    print_table("libm transcendentals: npu (glibc libmvec) vs CPU eager (Sleef)",
                ["case", "CPU eager ms", "npu ms", "npu/cpu", "-"], rows)
    small_ops_table()


if __name__ == "__main__":
    main()
