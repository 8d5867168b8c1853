"""NCCL collectives driven by torch.distributed, one process per GPU, timed two ways
in the same run: nccl-tests' way (a loop of N calls between two synchronizes, host
clock, divided by N) and the seeds' way (host perf_counter around one call plus
synchronize, median of N). Sizes are nccl-tests' S in bytes (float32). With one GPU,
--hostid gives each rank its own NCCL_HOSTID so NCCL accepts two ranks on it (socket
transport). Output per size on rank 0: op size loop_us blocking_us algbw busbw.
Usage: python3 torch_collective_ranks.py --op allreduce [--dtype float] [--nranks 2] [--hostid] [--sizes 8,1048576]"""
import argparse, os, time
import torch, torch.distributed as dist, torch.multiprocessing as mp

DTYPES = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16, "double": torch.float64,
          "int8": torch.int8, "int32": torch.int32}
BUS = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
       "reducescatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}


def call(op, inp, out):
    if op == "allreduce": dist.all_reduce(inp)
    elif op == "allgather": dist.all_gather_into_tensor(out, inp)
    elif op == "reducescatter": dist.reduce_scatter_tensor(out, inp)
    elif op == "alltoall": dist.all_to_all_single(out, inp)


def run(rank, a):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    if a.hostid:
        os.environ["NCCL_HOSTID"] = f"p2pscope-bench-host{rank}"
    ngpu = torch.cuda.device_count()
    dev = rank % ngpu
    torch.cuda.set_device(dev)
    n = a.nranks
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=torch.device("cuda", dev))
    for S in [int(s) for s in a.sizes.split(",")]:
        dt = DTYPES[a.dtype]
        es = torch.tensor([], dtype=dt).element_size()
        elems = max(n, S // es // n * n)
        inp_elems = elems // n if a.op == "allgather" else elems
        out_elems = elems // n if a.op == "reducescatter" else elems
        inp = torch.ones(inp_elems, dtype=dt, device="cuda")
        out = torch.empty(out_elems, dtype=dt, device="cuda")
        for _ in range(a.warmup):
            call(a.op, inp, out)
        torch.cuda.synchronize(); dist.barrier()
        s = time.perf_counter()
        for _ in range(a.iters):
            call(a.op, inp, out)
        torch.cuda.synchronize()
        loop = (time.perf_counter() - s) / a.iters
        dist.barrier(); times = []
        for _ in range(a.iters):
            s = time.perf_counter(); call(a.op, inp, out); torch.cuda.synchronize(); times.append(time.perf_counter() - s)
        times.sort(); blk = times[len(times) // 2]
        if rank == 0:
            alg = elems * es / loop / 1e9
            print(f"torch_{a.op} dtype={a.dtype} ranks={n} size={elems*es} loop_us={loop*1e6:.2f} blocking_us={blk*1e6:.2f} "
                  f"algbw_GBps={alg:.3f} busbw_GBps={alg*BUS[a.op](n):.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--op", default="allreduce", choices=sorted(BUS))
    p.add_argument("--dtype", default="float", choices=sorted(DTYPES))
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--iters", type=int, default=20); p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--port", type=int, default=29532); p.add_argument("--hostid", action="store_true")
    p.add_argument("--sizes", default="8,1048576,33554432,268435456")
    a = p.parse_args()
    mp.spawn(run, args=(a,), nprocs=a.nranks)
