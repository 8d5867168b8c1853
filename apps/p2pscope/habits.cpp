// What main() says for arguments a subcommand does not take: the arguments in the
// order they were typed (CLI11 lists them reversed), then, for each flag, the
// p2pscope way to say it: the habits of nccl-tests, nvbandwidth and iperf3 that
// have no alias, and the nearest option name for a typo.
#include "habits.hpp"

#include <algorithm>
#include <string_view>

namespace p2pscope::app {
namespace {

struct Habit {
  const char* command;  // "bench nccl"; "bench tcp|bench net" for several
  const char* flags;    // "-t|--nthreads"
  const char* hint;
};

constexpr Habit kHabits[] = {
    // nccl-tests
    {"bench nccl", "-t|--nthreads",
     "nccl-tests' -t (threads per process): bench nccl drives its GPUs from one thread; choose them with -g N or "
     "--gpus 0-3, or run one process per GPU under mpirun -np N"},
    {"bench nccl", "-i|--stepbytes",
     "nccl-tests' -i (a size increment): give the sizes as a list, --sizes 1M,2M,3M, or a factor, -f 2 / --sizes 8:1G:2"},
    {"bench nccl", "-m|--agg_iters", "nccl-tests' -m: each timed iteration is one collective here; use -n/--iters"},
    {"bench nccl", "-a|--average",
     "nccl-tests' -a: bench nccl reports the median over iterations (and the mean of the ranks' times under a launcher)"},
    {"bench nccl", "-p|--parallel_init", "nccl-tests' -p: the communicators are set up once, before the timing"},
    {"bench nccl", "-z|--blocking", "nccl-tests' -z: not available; the collectives are issued as nccl-tests' default"},
    {"bench nccl", "-G|--cudagraph", "nccl-tests' -G: CUDA graphs are not used; the timing is per launched collective"},
    {"bench nccl", "-C|--report_cputime", "nccl-tests' -C: times are GPU events; `bench gpu --pattern blocking` times on the host"},
    {"bench nccl", "-R|--local_register", "nccl-tests' -R: buffer registration is NCCL's default"},
    {"bench nccl", "-N|--run_cycles", "nccl-tests' -N: run the command again, or use `profile --reps N`"},
    {"bench nccl", "-r|--root", "nccl-tests' -r: bench nccl has no rooted collective (broadcast, reduce)"},
    {"bench nccl", "-T|--timeout", "nccl-tests' -T: not available"},
    // nvbandwidth
    {"bench gpu", "-i|--testSamples", "nvbandwidth's -i: use --iters N (timed iterations; the median is reported)"},
    {"bench gpu", "-m|--useMean", "nvbandwidth's -m: bench gpu reports the median, with p95 and CV in --format json"},
    {"bench gpu", "-j|--json", "nvbandwidth's -j: use --format json"},
    {"bench gpu", "-d|--disableAffinity", "nvbandwidth's -d: not needed; bench gpu sets no CPU affinity of its own"},
    {"bench gpu", "-H|--skipVerification", "nvbandwidth's -H: use --no-verify"},
    {"bench gpu", "-p|--testPrefix", "nvbandwidth's -p: -t takes one full testcase name; --list names them"},
    {"bench gpu", "-v|--verbose", "nvbandwidth's -v: the text output already names every pair and size"},
    // iperf3
    {"bench tcp|bench net", "-u|--udp", "iperf3's -u: p2pscope measures TCP (bench tcp) or a net plugin (bench net)"},
    {"bench tcp|bench net", "-n|--bytes", "iperf3's -n: use --size S (bytes per round) and --iters N (rounds)"},
    {"bench tcp|bench net", "-l|--length", "iperf3's -l: use --chunk S (the unit each send moves)"},
    {"bench tcp|bench net", "-w", "iperf3's -w (socket buffer): use --sockbuf S; p2pscope's --window counts chunks in flight"},
    {"bench tcp|bench net", "-i|--interval", "iperf3's -i: no interval reports; each of the --iters rounds is a sample"},
    {"bench tcp|bench net", "-B", "iperf3's -B: use --bind ADDR (server) or --nics NIC (client)"},
    {"bench tcp|bench net", "--bidir", "iperf3's --bidir: use --mode bidir"},
    {"bench tcp|bench net", "-O|--omit", "iperf3's -O: use --warmup N (untimed rounds)"},
    {"bench tcp|bench net", "-1|--one-off", "iperf3's -1: use --sessions 1"},
    {"bench tcp|bench net", "-D|--daemon", "iperf3's -D: not available; run the server under nohup or systemd"},
    {"bench tcp|bench net", "-Z|--zerocopy", "iperf3's -Z: not available"},
    {"bench tcp|bench net", "-V|--verbose", "iperf3's -V: --format json holds every figure"},
    {"bench tcp|bench net", "-4|--version4", "iperf3's -4: p2pscope speaks IPv4 only"},
    // ours, renamed
    {"irq diff", "--interval", "use --duration (e.g. --duration 10s)"},
};

bool listed(std::string_view list, std::string_view item) {
  std::size_t b = 0;
  while (b <= list.size()) {
    const auto e = std::min(list.find('|', b), list.size());
    if (list.substr(b, e - b) == item) return true;
    b = e + 1;
  }
  return false;
}

std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string habit_hint(const std::string& command, const std::string& flag, const std::vector<std::string>& known) {
  std::string name = flag.substr(0, flag.find('='));
  for (const auto& h : kHabits)
    if (listed(h.command, command) && listed(h.flags, name)) return h.hint;
  if (name.rfind("--", 0) != 0 || name.size() < 4) return {};
  std::string best;
  std::size_t best_d = 3;
  for (const auto& k : known) {
    if (k.rfind("--", 0) != 0) continue;
    const std::size_t d = distance(name, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best.empty() ? std::string() : "did you mean " + best + "?";
}

std::string unexpected_arguments_message(const std::string& command, const std::vector<std::string>& args,
                                         const std::vector<std::string>& known) {
  std::string typed;
  for (const auto& a : args) typed += (typed.empty() ? "" : " ") + a;
  std::string msg = (command.empty() ? std::string("p2pscope") : "p2pscope " + command) + ": unexpected argument" +
                    (args.size() == 1 ? "" : "s") + ": " + typed;
  for (const auto& a : args) {
    if (a.size() < 2 || a[0] != '-') continue;
    if (const std::string h = habit_hint(command, a, known); !h.empty()) msg += "\n  " + a + ": " + h;
  }
  return msg;
}

std::string parse_error_words(const std::string& what, const std::function<std::string(const std::string&)>& type_of) {
  const auto between = [&](std::string_view from, std::string_view to, std::size_t at = 0) {
    const auto a = what.find(from, at);
    if (a == std::string::npos) return std::string();
    const auto b = to.empty() ? what.size() : what.find(to, a + from.size());
    return b == std::string::npos ? std::string() : what.substr(a + from.size(), b - a - from.size());
  };
  if (what.rfind("Could not convert: ", 0) == 0) {
    const std::string name = between("Could not convert: ", " = "), value = between(" = ", "");
    const std::string type = type_of(name);
    const std::string kind = type.rfind("UINT", 0) == 0  ? "a whole number of 0 or more"
                             : type.rfind("INT", 0) == 0 ? "a whole number"
                             : type.rfind("FLOAT", 0) == 0 || type.rfind("NUMBER", 0) == 0
                                 ? "a number"
                                 : "a value this option takes";
    if (!name.empty()) return name + ": '" + value + "' is not " + kind + " (or is out of range)";
  }
  if (const auto r = what.find(" required ");
      r != std::string::npos && what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0) {
    const auto colon = what.rfind(": ", r);
    if (colon != std::string::npos) return what.substr(0, colon) + " needs a value";
  }
  if (const auto in = what.find(" not in {"); in != std::string::npos && what.back() == '}') {
    const auto colon = what.find(": ");
    if (colon != std::string::npos && colon < in) {
      std::string choices = what.substr(in + 9, what.size() - in - 10);
      for (std::size_t c = 0; (c = choices.find(',', c)) != std::string::npos; c += 2) choices.replace(c, 1, ", ");
      return what.substr(0, colon) + ": '" + what.substr(colon + 2, in - colon - 2) + "' is not one of " + choices;
    }
  }
  return what;
}

}  // namespace p2pscope::app
