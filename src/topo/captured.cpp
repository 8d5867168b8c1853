// GPU facts that sysfs cannot show (NVLinks, names, UUIDs), read from what
// tools/capture-fsroot.sh saved of nvidia-smi beside a captured tree:
//   /p2pscope/nvidia-smi-gpus.csv   --query-gpu=index,pci.bus_id,name,uuid,memory.total (noheader,nounits)
//   /p2pscope/nvidia-smi-topo-m.txt `nvidia-smi topo -m`
//   /p2pscope/nvidia-smi-q.xml      `nvidia-smi -q -x` (names and bus ids when the CSV is missing)
// Without them GPU-GPU links stay unknown: a PCIe path is not evidence of no NVLink.
#include <algorithm>
#include <cctype>
#include <map>

#include "p2pscope/text.hpp"
#include "topo/detail.hpp"

namespace p2pscope::topo::detail {
namespace {

// "00000000:00:06.0" / "0000:00:06.0" -> "0000:00:06.0", lower case; "" if not a bus id.
std::string bus_id(std::string s) {
  s = std::string(trim(s));
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.size() > 12) s = s.substr(s.size() - 12);
  return is_pci_address(s) ? s : std::string();
}

// Drops ANSI escapes (nvidia-smi underlines the header when writing to a terminal).
std::string strip_escapes(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
      continue;
    }
    out += s[i];
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

// Text between <tag> and </tag> after `from`; npos-safe.
std::string xml_value(const std::string& x, const std::string& tag, std::size_t from, std::size_t to) {
  const auto b = x.find("<" + tag + ">", from);
  if (b == std::string::npos || b >= to) return {};
  const auto s = b + tag.size() + 2;
  const auto e = x.find("</" + tag + ">", s);
  return e == std::string::npos ? std::string() : std::string(trim(std::string_view(x).substr(s, e - s)));
}

struct SmiGpu {
  std::string bus, name, uuid;
  std::uint64_t memory_bytes = 0;
};

}  // namespace

void add_captured_gpu_facts(const FsRoot& fs, Topology& t) {
  std::map<int, SmiGpu> smi;  // nvidia-smi index -> facts
  if (const auto csv = fs.read("/p2pscope/nvidia-smi-gpus.csv")) {
    for (const std::string_view line : split_lines(*csv)) {
      std::vector<std::string> f;
      for (const std::string_view v : split_views(line, ',')) f.emplace_back(trim(v));
      const auto idx = f.empty() ? std::nullopt : parse_id(f[0]);
      if (!idx || f.size() < 3) continue;
      SmiGpu g{bus_id(f[1]), f[2], f.size() > 3 ? f[3] : "", 0};
      if (f.size() > 4)
        if (const auto mib = parse_id(f[4])) g.memory_bytes = static_cast<std::uint64_t>(*mib) << 20;
      smi[*idx] = g;
    }
  } else if (const auto xml = fs.read("/p2pscope/nvidia-smi-q.xml")) {
    int idx = 0;
    for (std::size_t p = xml->find("<gpu id=\""); p != std::string::npos; p = xml->find("<gpu id=\"", p + 1)) {
      const auto q = xml->find('"', p + 9);
      const auto next = xml->find("<gpu id=\"", p + 1);
      const auto end = next == std::string::npos ? xml->size() : next;
      SmiGpu g;
      g.bus = bus_id(xml->substr(p + 9, q == std::string::npos ? 0 : q - p - 9));
      g.name = xml_value(*xml, "product_name", p, end);
      g.uuid = xml_value(*xml, "uuid", p, end);
      smi[idx++] = g;
    }
  }
  std::map<int, int> ours;  // nvidia-smi index -> topology GPU index
  for (const auto& [i, g] : smi)
    for (auto& gpu : t.gpus)
      if (!g.bus.empty() && gpu.pci == g.bus) {
        ours[i] = gpu.index;
        if (!g.name.empty()) gpu.name = g.name;
        if (!g.uuid.empty()) gpu.uuid = g.uuid;
        if (g.memory_bytes) gpu.memory_bytes = g.memory_bytes;
      }
  if (!smi.empty() && ours.size() != t.gpus.size())
    t.warnings.push_back("nvidia-smi in the capture lists " + std::to_string(smi.size()) + " GPU(s), sysfs " +
                         std::to_string(t.gpus.size()) + "; facts of unmatched GPUs left out");

  const auto topo_m = fs.read("/p2pscope/nvidia-smi-topo-m.txt");
  if (!topo_m) return;
  std::vector<std::string> labels;
  std::map<int, std::vector<std::string>> rows;
  for (const std::string_view raw : split_lines(*topo_m)) {
    const auto w = words(strip_escapes(std::string(raw)));
    if (w.empty()) continue;
    if (labels.empty() && w[0] == "GPU0") {
      for (const auto& x : w)
        if (x.rfind("GPU", 0) == 0 || x.rfind("NIC", 0) == 0 || x.rfind("mlx", 0) == 0) labels.push_back(x);
        else break;
      continue;
    }
    if (!labels.empty() && w[0].rfind("GPU", 0) == 0)
      if (const auto r = parse_id(w[0].substr(3))) rows[*r] = std::vector<std::string>(w.begin() + 1, w.end());
  }
  if (labels.empty() || rows.empty()) {
    t.warnings.push_back("/p2pscope/nvidia-smi-topo-m.txt has no GPU matrix: GPU-GPU links unknown");
    return;
  }
  // Without the CSV/XML, nvidia-smi's order is PCI order, as ours.
  if (ours.empty() && rows.size() == t.gpus.size())
    for (const auto& g : t.gpus) ours[g.index] = g.index;
  int filled = 0;
  for (const auto& [r, cells] : rows)
    for (std::size_t c = 0; c < labels.size() && c < cells.size(); ++c) {
      if (labels[c].rfind("GPU", 0) != 0) continue;
      const auto col = parse_id(labels[c].substr(3));
      if (!col || !ours.count(r) || !ours.count(*col)) continue;
      const int a = ours[r], b = ours[*col];
      int links = 0;
      if (cells[c].rfind("NV", 0) == 0)
        if (const auto n = parse_id(cells[c].substr(2))) links = *n;
      t.nvlinks[a][b] = links;
      ++filled;
    }
  if (filled > 0) t.gpu_links_source = "capture (nvidia-smi topo -m)";
}

}  // namespace p2pscope::topo::detail
