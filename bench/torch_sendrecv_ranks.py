"""shared/reference/torch_sendrecv.py's method (host perf_counter around a blocking
send/recv plus synchronize, median of N), with one addition: --hostid gives each of
the two processes its own NCCL_HOSTID, so NCCL treats them as two hosts. On a machine
with one GPU that is the only way NCCL accepts two ranks on it, and it forces NCCL's
network (socket) transport, which is what bench/tcp_vs_nccl_socket.sh compares with.
Usage: python3 torch_sendrecv_ranks.py --src 0 --dst 1 [--hostid] [--sizes 8,268435456]"""
import argparse, os, time
import torch, torch.distributed as dist, torch.multiprocessing as mp


def run(rank, a):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    if a.hostid:
        os.environ["NCCL_HOSTID"] = f"p2pscope-bench-host{rank}"
    dev = a.src if rank == 0 else a.dst
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=2, device_id=torch.device("cuda", dev))
    op = dist.send if rank == 0 else dist.recv
    for size in [int(s) for s in a.sizes.split(",")]:
        t = torch.randint(0, 255, (size,), dtype=torch.uint8, device="cuda")
        for _ in range(a.warmup):
            op(t, 1 - rank)
        torch.cuda.synchronize(); dist.barrier(); times = []
        for _ in range(a.iters):
            s = time.perf_counter(); op(t, 1 - rank); torch.cuda.synchronize(); times.append(time.perf_counter() - s)
        times.sort(); med = times[len(times) // 2]
        if rank == 1:
            print(f"torch_sendrecv src={a.src} dst={a.dst} size={size} median_us={med*1e6:.2f} GBps={size/med/1e9:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--src", type=int, default=0); p.add_argument("--dst", type=int, default=1)
    p.add_argument("--iters", type=int, default=20); p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--port", type=int, default=29512); p.add_argument("--hostid", action="store_true")
    p.add_argument("--sizes", default="8,1048576,33554432,268435456")
    mp.spawn(run, args=(p.parse_args(),), nprocs=2)
