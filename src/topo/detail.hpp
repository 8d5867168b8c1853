#pragma once
// Helpers shared by the discovery files of src/topo; not a public interface.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "p2pscope/fsroot.hpp"
#include "p2pscope/topo.hpp"

namespace p2pscope::topo::detail {

// A CPU list file ("0-3,8") read through the root; nullopt when missing or malformed,
// so one bad file makes that fact unknown instead of failing discovery.
std::optional<std::vector<int>> read_cpulist(const FsRoot& fs, const std::string& abs);
// Integer file, or `unknown` when missing / not a number.
long long read_int_or(const FsRoot& fs, const std::string& abs, long long unknown = -1);
// First line, "" when missing.
std::string read_text(const FsRoot& fs, const std::string& abs);

// "0000:00:03.0" shape (4 hex domain, 2 bus, 2 device, 1 function digit).
bool is_pci_address(std::string_view s);
// "pci0000:00" shape: a PCI root complex (host bridge) directory of /sys/devices.
bool is_pci_root(std::string_view s);
// Nearest PCI ancestor in a resolved /sys/devices path ("" when none, e.g. virtual).
std::string nearest_pci(const std::string& resolved_path);
// A kernel-given id made of decimal digits only ("12" of "cpu12", "CPU12", "node1"):
// nullopt when empty, not all digits, or too long to be an id (a garbled file must
// not throw out of a parser).
std::optional<int> parse_id(std::string_view digits);
// Path components.
std::vector<std::string> split_path(const std::string& p);

// Discovery steps, one per file of src/topo.
void discover_cpus(const FsRoot& fs, Topology& t);
void discover_pci(const FsRoot& fs, Topology& t);
void discover_nics(const FsRoot& fs, Topology& t);
void discover_rdma(const FsRoot& fs, Topology& t);
void discover_gpus(Topology& t);
void add_nvml_facts(Topology& t);
// nvidia-smi output saved beside a captured tree (tools/capture-fsroot.sh).
void add_captured_gpu_facts(const FsRoot& fs, Topology& t);

}  // namespace p2pscope::topo::detail

namespace p2pscope::topo::detail {
// "0000:...:ffff:0a00:0001" -> true and "10.0.0.1" (dotted may be null).
bool parse_ipv4_mapped(const std::string& gid, std::string* dotted);
}  // namespace p2pscope::topo::detail
