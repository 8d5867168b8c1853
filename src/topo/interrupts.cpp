// /proc/interrupts: a header of CPU columns, numbered IRQ lines
// ("  34:  0  5  PCI-MSIX-0000:00:03.0  0-edge  virtio2-config"), and named lines
// ("LOC: ...  Local timer interrupts"). Malformed lines are skipped and counted.
#include <algorithm>
#include <cctype>
#include <sstream>

#include "p2pscope/text.hpp"
#include "p2pscope/topo.hpp"
#include "topo/detail.hpp"

namespace p2pscope::topo {
namespace {
bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The hardware IRQ column of newer kernels: "1048576-edge", "0-edge", "5-fasteoi".
bool looks_like_hwirq(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || ends_with(s, "-edge") || ends_with(s, "-level") ||
                        ends_with(s, "-fasteoi"));
}

struct Token {
  std::string text;
  std::size_t end;  // offset just past the token in the line
};

std::vector<Token> tokens(const std::string& line) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t b = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > b) out.push_back({line.substr(b, i - b), i});
  }
  return out;
}

}  // namespace

std::uint64_t Irq::total() const {
  std::uint64_t sum = 0;
  for (auto c : per_cpu) sum += c;
  return sum;
}

InterruptTable parse_interrupts(const std::string& text) {
  InterruptTable t;
  std::istringstream in(text);
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    const auto tok = tokens(line);
    if (tok.empty()) continue;
    if (header) {
      header = false;
      bool ok = true;
      for (const auto& k : tok) {
        // "CPU37777777777" (a garbled header) is no column: parse_id bounds the number.
        const auto id = k.text.compare(0, 3, "CPU") == 0 ? detail::parse_id(std::string_view(k.text).substr(3))
                                                         : std::nullopt;
        if (id)
          t.cpu_columns.push_back(*id);
        else
          ok = false;
      }
      if (!ok) {
        t.cpu_columns.clear();
        ++t.malformed_lines;
      }
      continue;
    }
    const std::string& label = tok[0].text;
    if (label.size() < 2 || label.back() != ':') {
      ++t.malformed_lines;
      continue;
    }
    const std::string key = label.substr(0, label.size() - 1);
    const std::size_t ncpu = t.cpu_columns.size();
    std::vector<std::uint64_t> counts;
    std::size_t k = 1;
    bool bad = false;
    for (; k < tok.size() && counts.size() < ncpu && all_digits(tok[k].text); ++k) {
      try {
        counts.push_back(std::stoull(tok[k].text));
      } catch (const std::exception&) {  // out of range
        bad = true;
        break;
      }
    }
    if (all_digits(key)) {
      // A numbered IRQ has one count per CPU column; anything less is a torn line.
      const auto number = detail::parse_id(key);
      if (bad || !number || counts.size() != ncpu || ncpu == 0) {
        ++t.malformed_lines;
        continue;
      }
      Irq irq;
      irq.irq = *number;
      irq.per_cpu = std::move(counts);
      irq.cpu_columns = t.cpu_columns;
      std::size_t name_from = tok[k - 1].end;
      if (k < tok.size()) {
        irq.chip = tok[k].text;
        name_from = tok[k].end;
        if (k + 1 < tok.size() && !looks_like_hwirq(irq.chip) && looks_like_hwirq(tok[k + 1].text)) name_from = tok[k + 1].end;
      }
      irq.name = std::string(trim(std::string_view(line).substr(name_from)));
      t.irqs.push_back(std::move(irq));
    } else {
      // Named lines (LOC, NMI, ERR...) may carry a single total instead of columns.
      // Their labels are words ("LOC", "PIN"); "1x:" is a damaged IRQ number.
      const bool word = std::isalpha(static_cast<unsigned char>(key[0])) &&
                        std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
      if (bad || counts.empty() || !word) {
        ++t.malformed_lines;
        continue;
      }
      t.named[key] = std::move(counts);
    }
  }
  return t;
}

}  // namespace p2pscope::topo
