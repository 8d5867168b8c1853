#!/usr/bin/env bash
# Installs what p2pscope needs to build and test, from Debian's packages only.
# Idempotent: installs nothing when everything is already there.
# CUDA and NCCL are optional and never installed here (they come with the machine).
set -euo pipefail

# `install-deps.sh run` (make run): what building and running the binary needs.
# `install-deps.sh` or `install-deps.sh test` (make test): that and what the tests need.
what=${1:-test}
case "$what" in run|test) ;; *) echo "install-deps: usage: install-deps.sh [run|test]" >&2; exit 2 ;; esac
packages=(build-essential cmake ninja-build pkg-config
          libcli11-dev nlohmann-json3-dev libfmt-dev
          ccache)               # a second build (CI's clone, a worktree) reuses the objects
if [ "$what" = test ]; then
  packages+=(libgtest-dev iproute2 iperf3 clang
             openmpi-bin           # mpirun: the survey's namespace-cluster tests (tests/scripts/survey_cluster.sh)
             slurm-wlm munge       # srun on a one-node Slurm started by the test (tests/scripts/survey_srun.sh)
             python3-torch         # torchrun (tests/scripts/survey_torchrun.sh); about 2 min to install
             python3 python3-yaml  # python3-yaml: tests/scripts/check_export_yaml.py
             universal-ctags)      # tools/function-lengths.sh (ctest repo.LongestFunction)
  if [ "${P2PSCOPE_WITH_BROWSER:-1}" = 1 ]; then
    packages+=(chromium)  # report rendering test (headless)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
