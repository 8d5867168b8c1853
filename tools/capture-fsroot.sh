#!/usr/bin/env bash
# Copies the /sys and /proc files that `p2pscope topo` reads into OUT_DIR (a tree
# that stands for "/"), keeping sysfs symlinks as symlinks, and tars it. Attach the
# tarball to a bug report; `p2pscope topo --root OUT_DIR` reads it back.
#
#   tools/capture-fsroot.sh [OUT_DIR]     (default ./fsroot-<host>-<time>)
#
# What sysfs cannot show (NVLinks, GPU names) is saved from nvidia-smi, when it is
# installed, under OUT_DIR/p2pscope/: nvidia-smi-gpus.csv, nvidia-smi-topo-m.txt,
# nvidia-smi-q.xml, nvidia-smi-nvlink-s.txt; `p2pscope topo --root` reads them.
# Only named attributes are read (never config, rom, vpd or resource files, whose
# reads can be slow, privileged or hang); unreadable files are skipped; no link is
# followed out of /sys. Runs as any user; root adds nothing it needs.
set -u
export LC_ALL=C

out=${1:-./fsroot-$(hostname 2>/dev/null || echo host)-$(date -u +%Y%m%dT%H%M%SZ)}
if [[ -e $out && -n $(ls -A "$out" 2>/dev/null) ]]; then
  echo "capture-fsroot: '$out' exists and is not empty; give a new directory" >&2
  exit 2
fi
mkdir -p "$out" || { echo "capture-fsroot: cannot create '$out'" >&2; exit 1; }
out=$(cd "$out" && pwd)

files=()  # regular files to copy (real paths, no symlink components)
links=()  # symlinks to copy as links
dirs=()   # directories to recreate empty (queues/rx-N)

add_files() { local f; for f in "$@"; do [[ -f $f && ! -L $f ]] && files+=("$f"); done; }
add_link() { [[ -L $1 ]] && links+=("$1"); }

pci_attrs=(class vendor device subsystem_vendor subsystem_device revision numa_node local_cpulist local_cpus
           current_link_speed current_link_width max_link_speed max_link_width irq)

# A device directory under /sys/devices and every PCI directory above it (the
# bridge chain that path classes are computed from).
add_device_chain() {
  local real=$1 d=$1
  [[ $real == /sys/devices/* ]] || return 0  # never leave /sys
  while [[ $d == /sys/devices/* ]]; do
    case ${d##*/} in
      [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f].[0-7])
        local a; for a in "${pci_attrs[@]}"; do add_files "$d/$a"; done
        add_files "$d"/msi_irqs/*
        ;;
    esac
    d=${d%/*}
  done
}

# CPUs and NUMA nodes.
add_files /sys/devices/system/cpu/{online,possible,present}
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  add_files "$c"/topology/{core_id,physical_package_id,die_id,thread_siblings_list,core_siblings_list}
done
add_files /sys/devices/system/node/{online,possible}
for n in /sys/devices/system/node/node[0-9]*; do add_files "$n"/{cpulist,cpumap,distance}; done

# Every PCI device (GPUs are found here) with its chain of bridges.
for p in /sys/bus/pci/devices/*; do
  add_link "$p"
  add_device_chain "$(readlink -f "$p")"
done

# Network interfaces.
for n in /sys/class/net/*; do
  [[ -L $n ]] || continue
  add_link "$n"
  real=$(readlink -f "$n")
  [[ $real == /sys/* ]] || continue
  add_files "$real"/{address,mtu,speed,duplex,operstate,ifindex,type,carrier}
  add_link "$real/device"
  for q in "$real"/queues/[rt]x-*; do [[ -d $q ]] && dirs+=("$q"); done
  add_device_chain "$real"
done

# RDMA devices: ports and GID tables.
for i in /sys/class/infiniband/*; do
  [[ -L $i ]] || continue
  add_link "$i"
  real=$(readlink -f "$i")
  [[ $real == /sys/* ]] || continue
  add_files "$real"/{node_guid,fw_ver,hca_type,node_type}
  add_link "$real/device"
  for port in "$real"/ports/*; do
    add_files "$port"/{state,phys_state,link_layer,rate,lid}
    add_files "$port"/gids/* "$port"/gid_attrs/types/* "$port"/gid_attrs/ndevs/*
  done
  add_device_chain "$real"
done

# /proc.
add_files /proc/interrupts /proc/cpuinfo /proc/stat /proc/net/dev /proc/net/route /proc/sys/kernel/hostname
for q in /proc/irq/[0-9]*; do
  add_files "$q"/smp_affinity "$q"/smp_affinity_list "$q"/effective_affinity "$q"/effective_affinity_list
done

# Copy: cp reads until EOF (sysfs sizes lie) and keeps links as links with -P.
# Unreadable files (EINVAL on empty GID attributes, EACCES) fail alone and are skipped.
copy() { xargs -0 -r -n 512 timeout 10 cp --parents -P -t "$out" 2>/dev/null; }
printf '%s\0' "${files[@]}" | copy
printf '%s\0' "${links[@]}" | copy
for d in "${dirs[@]}"; do mkdir -p "$out$d"; done
# nvidia-smi facts (each command bounded: a wedged driver must not hang the capture).
if command -v nvidia-smi >/dev/null 2>&1; then
  mkdir -p "$out/p2pscope"
  smi() { local f=$1; shift; timeout 30 nvidia-smi "$@" >"$out/p2pscope/$f" 2>/dev/null || rm -f "$out/p2pscope/$f"; }
  smi nvidia-smi-gpus.csv --query-gpu=index,pci.bus_id,name,uuid,memory.total --format=csv,noheader,nounits
  smi nvidia-smi-topo-m.txt topo -m
  smi nvidia-smi-q.xml -q -x
  smi nvidia-smi-nvlink-s.txt nvlink -s
  smi nvidia-smi.txt
else
  echo "capture-fsroot: nvidia-smi not found: NVLinks and GPU names are not in this capture" >&2
fi
# A file that failed to read leaves nothing; drop empty copies of unreadable ones.
find "$out" -type f -empty -delete 2>/dev/null
# git keeps no empty directory: mark the queue dirs so a committed tree keeps them.
for d in "${dirs[@]}"; do : >"$out$d/.keep"; done

tarball="$out.tar.gz"
tar -C "$out" -czf "$tarball" . || { echo "capture-fsroot: tar failed" >&2; exit 1; }
nfiles=$(find "$out" -type f | wc -l)
nlinks=$(find "$out" -type l | wc -l)
echo "captured $nfiles files and $nlinks links into $out"
echo "tarball: $tarball   (read it back: p2pscope topo --root $out)"
