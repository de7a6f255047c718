"""Rank script: every collective of the hccl backend on npu tensors against values computed locally.

Each rank's input is a function of (rank, size, dtype), so every rank can compute every expected output.
Run under torchrun-style env vars (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); exit code 0 = all passed.
"""
import sys
import warnings

import torch
import torch.distributed as dist

from common import Checker, init

warnings.filterwarnings("ignore")
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64]
SIZES = [1, 7, 1000, 40000]  # one-shot, ring/H-D paths (40000 x 4 B > the 64 KiB mesh threshold)


def data(r, n, dtype, salt=0):
    # Small integers: exactly representable in every dtype, sums/products stay exact.
    return ((torch.arange(n, dtype=torch.int64) * 7 + r * 3 + salt) % 11).to(dtype)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "env"
    if mode == "mixed":
        rank, world, dev = init("cpu:gloo,npu:hccl")
    elif mode == "device_id":
        import os
        r = int(os.environ["RANK"])
        rank, world, dev = init("hccl", device_id=torch.device("npu", r))
    else:
        rank, world, dev = init("hccl")
    c = Checker(rank)
    ranks = range(world)

    for dtype in DTYPES:
        for n in SIZES:
            ins = [data(r, n, dtype) for r in ranks]
            t = ins[rank].to(dev)
            dist.all_reduce(t)
            want = torch.stack([x.to(torch.int64) for x in ins]).sum(0).to(dtype)
            c.eq(f"all_reduce sum {dtype} n={n}", t, want)
            for op, fn in [(dist.ReduceOp.MAX, lambda s: s.max(0).values), (dist.ReduceOp.MIN, lambda s: s.min(0).values)]:
                t = ins[rank].to(dev)
                dist.all_reduce(t, op=op)
                c.eq(f"all_reduce {op} {dtype} n={n}", t, fn(torch.stack([x.to(torch.int64) for x in ins])).to(dtype))
        small = [((torch.arange(64) + r) % 3).to(dtype) for r in ranks]  # products stay tiny
        t = small[rank].to(dev)
        dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
        c.eq(f"all_reduce product {dtype}", t, torch.stack([x.to(torch.int64) for x in small]).prod(0).to(dtype))
        if dtype.is_floating_point:
            for n in (5, 40000):
                ins = [data(r, n, dtype) for r in ranks]
                t = ins[rank].to(dev)
                dist.all_reduce(t, op=dist.ReduceOp.AVG)
                c.eq(f"all_reduce avg {dtype} n={n}", t, (torch.stack([x.float() for x in ins]).sum(0) / world).to(dtype))

    # premul_sum (float32, exact factor)
    ins = [data(r, 1000, torch.float32) for r in ranks]
    t = ins[rank].to(dev)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    c.eq("all_reduce premul_sum", t, torch.stack(ins).sum(0) * 2)
    # bool
    bins = [torch.tensor([r == 0, False, True, r == world - 1]) for r in ranks]
    t = bins[rank].to(dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    c.eq("all_reduce bool max", t, torch.tensor([True, False, True, True]))
    # non-contiguous input
    base = data(rank, 12 * 5, torch.float32).reshape(12, 5)
    t = base.to(dev).t()
    dist.all_reduce(t)
    c.eq("all_reduce non-contiguous", t, torch.stack([data(r, 60, torch.float32).reshape(12, 5) for r in ranks]).sum(0).t())
    # async
    ins = [data(r, 40000, torch.int32) for r in ranks]
    t = ins[rank].to(dev)
    w = dist.all_reduce(t, async_op=True)
    w.wait()
    c.eq("all_reduce async", t, torch.stack(ins).sum(0).int())
    fut = dist.all_reduce(ins[rank].to(dev), async_op=True).get_future()
    c.eq("future value", fut.wait()[0], torch.stack(ins).sum(0).int())

    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        for n in (7, 40000):
            root = world - 1
            t = (data(rank, n, dtype) if rank == root else torch.zeros(n, dtype=dtype)).to(dev)
            dist.broadcast(t, src=root)
            c.eq(f"broadcast {dtype} n={n}", t, data(root, n, dtype))
            t = data(rank, n, dtype).to(dev)
            dist.reduce(t, dst=1)
            want = torch.stack([data(r, n, dtype).long() for r in ranks]).sum(0).to(dtype) if rank == 1 else data(rank, n, dtype)
            c.eq(f"reduce {dtype} n={n}", t, want)
            outs = [torch.zeros(n, dtype=dtype, device=dev) for _ in ranks]
            dist.all_gather(outs, data(rank, n, dtype).to(dev))
            for r in ranks:
                c.eq(f"all_gather {dtype} n={n} [{r}]", outs[r], data(r, n, dtype))
            out = torch.zeros(world * n, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, data(rank, n, dtype).to(dev))
            c.eq(f"all_gather_into_tensor {dtype} n={n}", out, torch.cat([data(r, n, dtype) for r in ranks]))
            # reduce_scatter: rank r's input block p = data(r, n, salt=p)
            out = torch.zeros(n, dtype=dtype, device=dev)
            dist.reduce_scatter(out, [data(rank, n, dtype, salt=p).to(dev) for p in ranks])
            c.eq(f"reduce_scatter {dtype} n={n}", out, torch.stack([data(r, n, dtype, salt=rank).long() for r in ranks]).sum(0).to(dtype))
            out = torch.zeros(n, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, torch.cat([data(rank, n, dtype, salt=p) for p in ranks]).to(dev))
            c.eq(f"reduce_scatter_tensor {dtype} n={n}", out, torch.stack([data(r, n, dtype, salt=rank).long() for r in ranks]).sum(0).to(dtype))
    # large (several ring pieces, peer-read sized, odd so the ring chunks differ in length): the data paths of
    # the bandwidth-bound algorithms, fp16/bf16 through their fp32 combine
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int32):
        n = 300001
        ins = [data(r, n, dtype) for r in ranks]
        t = ins[rank].to(dev)
        dist.all_reduce(t)
        c.eq(f"large all_reduce {dtype}", t, torch.stack([x.long() for x in ins]).sum(0).to(dtype))
        out = torch.zeros(n, dtype=dtype, device=dev)
        dist.reduce_scatter_tensor(out, torch.cat([data(rank, n, dtype, salt=p) for p in ranks]).to(dev))
        c.eq(f"large reduce_scatter_tensor {dtype}", out,
             torch.stack([data(r, n, dtype, salt=rank).long() for r in ranks]).sum(0).to(dtype))
        out = torch.zeros(world * n, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(out, ins[rank].to(dev))
        c.eq(f"large all_gather_into_tensor {dtype}", out, torch.cat(ins))
        t = (ins[rank] if rank == 0 else torch.zeros(n, dtype=dtype)).to(dev)
        dist.broadcast(t, src=0)
        c.eq(f"large broadcast {dtype}", t, ins[0])
    # a broadcast of 8 MiB or more from the last rank: every rank copies a share of the root's buffer
    n = (8 << 20) // 4 + 5
    src = data(world - 1, n, torch.float32)
    t = (src if rank == world - 1 else torch.zeros(n)).to(dev)
    dist.broadcast(t, src=world - 1)
    c.eq("8 MiB broadcast", t, src)
    # an all_gather of 8 MiB or more per rank: the direct version at any world size (every rank pushes its
    # input into slot r of every output), out of place and in place (the input is this rank's own slot)
    n = (8 << 20) // 4 + 3
    ins = [data(r, n, torch.float32, salt=7) for r in ranks]
    out = torch.zeros(world * n, device=dev)
    dist.all_gather_into_tensor(out, ins[rank].to(dev))
    c.eq("8 MiB all_gather_into_tensor", out, torch.cat(ins))
    out = torch.zeros(world * n, device=dev)
    out[rank * n:(rank + 1) * n] = ins[rank].to(dev)
    dist.all_gather_into_tensor(out, out[rank * n:(rank + 1) * n])
    c.eq("8 MiB all_gather_into_tensor in place", out, torch.cat(ins))
    # in place: the output is this rank's own block of the input (as FSDP calls it)
    n = 100003
    full = torch.cat([data(rank, n, torch.float32, salt=p) for p in ranks]).to(dev)
    dist.reduce_scatter_tensor(full[rank * n:(rank + 1) * n], full)
    c.eq("reduce_scatter_tensor in place", full[rank * n:(rank + 1) * n],
         torch.stack([data(r, n, torch.float32, salt=rank) for r in ranks]).sum(0))
    out = torch.zeros(8, device=dev)
    dist.reduce_scatter_tensor(out, torch.cat([data(rank, 8, torch.float32, salt=p) for p in ranks]).to(dev), op=dist.ReduceOp.AVG)
    c.eq("reduce_scatter_tensor avg", out, torch.stack([data(r, 8, torch.float32, salt=rank) for r in ranks]).sum(0) / world)

    # all_to_all_single, equal splits: rank r sends block p = data(r, k, salt=p) to p
    k = 6
    inp = torch.cat([data(rank, k, torch.int32, salt=p) for p in ranks]).to(dev)
    out = torch.zeros(world * k, dtype=torch.int32, device=dev)
    dist.all_to_all_single(out, inp)
    c.eq("all_to_all_single equal", out, torch.cat([data(r, k, torch.int32, salt=rank) for r in ranks]))
    # uneven: rank r sends (r + p + 1) rows of width 3 to p
    rows = lambda r, p: r + p + 1  # noqa: E731
    inp = torch.cat([data(rank, rows(rank, p) * 3, torch.float32, salt=p).reshape(-1, 3) for p in ranks]).to(dev)
    out = torch.zeros(sum(rows(r, rank) for r in ranks), 3, device=dev)
    dist.all_to_all_single(out, inp, output_split_sizes=[rows(r, rank) for r in ranks],
                           input_split_sizes=[rows(rank, p) for p in ranks])
    c.eq("all_to_all_single uneven", out, torch.cat([data(r, rows(r, rank) * 3, torch.float32, salt=rank).reshape(-1, 3) for r in ranks]))
    outs = [torch.zeros(4, dtype=torch.int64, device=dev) for _ in ranks]
    dist.all_to_all(outs, [data(rank, 4, torch.int64, salt=p).to(dev) for p in ranks])
    for r in ranks:
        c.eq(f"all_to_all [{r}]", outs[r], data(r, 4, torch.int64, salt=rank))

    # gather / scatter
    root = 0
    gl = [torch.zeros(5, device=dev) for _ in ranks] if rank == root else None
    dist.gather(data(rank, 5, torch.float32).to(dev), gl, dst=root)
    if rank == root:
        for r in ranks:
            c.eq(f"gather [{r}]", gl[r], data(r, 5, torch.float32))
    out = torch.zeros(5, dtype=torch.int8, device=dev)
    dist.scatter(out, [data(99, 5, torch.int8, salt=p).to(dev) for p in ranks] if rank == root else None, src=root)
    c.eq("scatter", out, data(99, 5, torch.int8, salt=rank))

    # coalesced
    ts = [data(rank, 10, torch.float32).to(dev), data(rank, 3, torch.float32).to(dev)]
    dist.all_reduce_coalesced(ts)
    c.eq("all_reduce_coalesced[0]", ts[0], torch.stack([data(r, 10, torch.float32) for r in ranks]).sum(0))
    c.eq("all_reduce_coalesced[1]", ts[1], torch.stack([data(r, 3, torch.float32) for r in ranks]).sum(0))
    outs = [[torch.zeros(4, device=dev) for _ in ranks], [torch.zeros(2, device=dev) for _ in ranks]]
    dist.all_gather_coalesced(outs, [data(rank, 4, torch.float32).to(dev), data(rank, 2, torch.float32, 1).to(dev)])
    for r in ranks:
        c.eq(f"all_gather_coalesced[0][{r}]", outs[0][r], data(r, 4, torch.float32))
        c.eq(f"all_gather_coalesced[1][{r}]", outs[1][r], data(r, 2, torch.float32, 1))
    with dist._coalescing_manager(device=dev):
        o1 = torch.zeros(world * 3, device=dev)
        dist.all_gather_into_tensor(o1, data(rank, 3, torch.float32).to(dev))
    c.eq("allgather_into_tensor_coalesced", o1, torch.cat([data(r, 3, torch.float32) for r in ranks]))

    # p2p: ring send/recv, isend/irecv, batch_isend_irecv (large: more than the p2p ring), any source
    right, left = (rank + 1) % world, (rank - 1) % world
    for n in (10, 600000):
        if rank % 2 == 0:
            dist.send(data(rank, n, torch.float32).to(dev), right)
            buf = torch.zeros(n, device=dev)
            dist.recv(buf, left)
        else:
            buf = torch.zeros(n, device=dev)
            dist.recv(buf, left)
            dist.send(data(rank, n, torch.float32).to(dev), right)
        c.eq(f"send/recv n={n}", buf, data(left, n, torch.float32))
        buf = torch.zeros(n, device=dev)
        ops = [dist.P2POp(dist.isend, data(rank, n, torch.float32, 2).to(dev), right),
               dist.P2POp(dist.irecv, buf, left)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        c.eq(f"batch_isend_irecv n={n}", buf, data(left, n, torch.float32, 2))
    if rank == 0:
        got = set()
        for _ in range(world - 1):
            buf = torch.zeros(3, dtype=torch.int64, device=dev)
            src = dist.recv(buf)
            got.add(src)
            c.eq(f"recv any source from {src}", buf, data(src, 3, torch.int64))
        c.eq("recv any source: senders", got, set(range(1, world)))
    else:
        dist.send(data(rank, 3, torch.int64).to(dev), 0)

    # subgroups
    even = dist.new_group([r for r in ranks if r % 2 == 0])
    odd = dist.new_group([r for r in ranks if r % 2 == 1])
    mine = [r for r in ranks if r % 2 == rank % 2]
    t = data(rank, 100, torch.int32).to(dev)
    dist.all_reduce(t, group=even if rank % 2 == 0 else odd)
    c.eq("subgroup all_reduce", t, torch.stack([data(r, 100, torch.int32) for r in mine]).sum(0).int())
    dist.barrier()
    print(f"rank {rank}: transport={dist.group.WORLD._get_backend(dev).transport}", flush=True)
    rc = c.finish()
    dist.destroy_process_group()
    return rc


if __name__ == "__main__":
    sys.exit(main())
