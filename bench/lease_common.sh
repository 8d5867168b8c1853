# Sourced by the one-call device scripts (bench/lease_*.sh) after they set OUT: the set-up
# every call repeats. Sets ROOT, D (.device), P (its p2pscope), NGPU; exports the machine's
# rules (no NVLink multicast, ../shared/device.md); writes OUT/machine.txt; defines part
# (bench/part.sh) and TORCHRUN.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
. "$ROOT/bench/part.sh"  # part NAME LIMIT_S CMD...
TORCHRUN=(python3 -m torch.distributed.run)
command -v torchrun > /dev/null && TORCHRUN=(torchrun)
