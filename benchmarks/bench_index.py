"""Indexing / RNG / ordering ops on npu vs CPU eager (same process, 2 shared cores: noisy). Prints ms per call and
npu/cpu."""
import time

import torch

import torch_npu_sim  # noqa: F401


def timeit(fn, sync, reps=10):
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t) / reps * 1e3


def main():
    torch.manual_seed(0)
    x = torch.randn(4096, 1024)
    idx = torch.randint(0, 4096, (4096,))
    gi = torch.randint(0, 1024, (4096, 1024))
    mask = x > 0
    cases = {
        "index_select 4096x1024": lambda t, i, g, m: t.index_select(0, i),
        "gather 4096x1024": lambda t, i, g, m: t.gather(1, g),
        "scatter_add 4096x1024": lambda t, i, g, m: t.scatter_add(1, g, t),
        "index x[i] 4096x1024": lambda t, i, g, m: t[i],
        "index_put acc": lambda t, i, g, m: t.index_put((i,), t, accumulate=True),
        "masked_fill": lambda t, i, g, m: t.masked_fill(m, 0.0),
        "where(m, t, 0)": lambda t, i, g, m: torch.where(m, t, 0.0),
        "where(m, t, -t)": lambda t, i, g, m: torch.where(m, t, -t),
        "sort dim=1": lambda t, i, g, m: t.sort(1),
        "topk 8 dim=1": lambda t, i, g, m: t.topk(8, 1),
        "median dim=1": lambda t, i, g, m: t.median(1),
        "kthvalue 256 dim=1": lambda t, i, g, m: t.kthvalue(256, 1),
        "sort 262144x16": lambda t, i, g, m: t.view(-1, 16).sort(1),
        "median 131072x32": lambda t, i, g, m: t.view(-1, 32).median(1),
        "topk 4 65536x64": lambda t, i, g, m: t.view(-1, 64).topk(4, 1),
        "cat x3": lambda t, i, g, m: torch.cat([t, t, t], 0),
        "randn 4M": lambda t, i, g, m: torch.randn(4096, 1024, device=t.device),
        "dropout 4M": lambda t, i, g, m: torch.nn.functional.dropout(t, 0.5),
    }
    xn, idn, gn, mn = x.to("npu"), idx.to("npu"), gi.to("npu"), mask.to("npu")
    print(f"{'op':28s} {'cpu ms':>8s} {'npu ms':>8s} {'npu/cpu':>8s}")
    for name, fn in cases.items():
        c = timeit(lambda: fn(x, idx, gi, mask), lambda: None)
        n = timeit(lambda: fn(xn, idn, gn, mn), torch.npu.synchronize)
        print(f"{name:28s} {c:8.2f} {n:8.2f} {n / c:8.2f}")
    # one long line (16M elements): npu sorts it by radix, selects topk in a bounded buffer, kthvalue / median by radix
    n_long = 1 << 24
    for dtype in (torch.float32, torch.int64, torch.uint8):
        y = (torch.rand(n_long) * 100).to(dtype)
        yn = y.to("npu")
        long_cases = {"sort": lambda t: t.sort(), "topk 10": lambda t: t.topk(10),
                      "kthvalue n/2": lambda t: t.kthvalue(n_long // 2), "median": lambda t: t.median(),
                      "unique": lambda t: torch.unique(t)}
        for name, fn in long_cases.items():
            c = timeit(lambda: fn(y), lambda: None, reps=2)
            n = timeit(lambda: fn(yn), torch.npu.synchronize, reps=2)
            label = f"{name} 16M {str(dtype).split('.')[1]}"
            print(f"{label:28s} {c:8.2f} {n:8.2f} {n / c:8.2f}")


if __name__ == "__main__":
    main()
