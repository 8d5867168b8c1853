// The survey's steps over the bootstrap (survey.hpp): rank 0 sends a step's tasks, every
// rank runs its part, rank 0 gathers the records and decides the next step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "p2pscope/auth.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/bounded_json.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/units.hpp"
#include "survey/device_pairs.hpp"
#include "survey/nccl_link.hpp"
#include "survey/survey.hpp"
#include "survey/transport.hpp"
#include "transport/netpath/plugin_use.hpp"

namespace p2pscope::survey {
namespace {

// Pairs of unflagged hosts measured beside each step of re-measured links.
constexpr int kControlPairs = 3;

struct Task {
  int server = 0, client = 0, rail = 0;  // local: server = client = the host, rail -1
  int group = 2;                         // the size of the group it runs in at once
};

struct Step {
  int pass = 1, round = 0;
  std::string kind;  // "bw", "lat", "local", "gpu", "size" (--sizes: ping-pongs of one size)
  std::vector<Task> tasks;
  std::uint64_t size = 0;  // "size": the message size
};

nlohmann::json to_json(const Step& s) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const Task& t : s.tasks) tasks.push_back({t.server, t.client, t.rail, t.group});
  return {{"op", "step"}, {"pass", s.pass}, {"round", s.round}, {"kind", s.kind}, {"tasks", tasks}, {"size", s.size}};
}

Step step_from_json(const nlohmann::json& j) {
  Step s;
  s.pass = j.at("pass").get<int>();
  s.round = j.at("round").get<int>();
  s.kind = j.at("kind").get<std::string>();
  s.size = j.value("size", std::uint64_t{0});
  for (const auto& t : j.at("tasks"))
    s.tasks.push_back({t.at(0).get<int>(), t.at(1).get<int>(), t.at(2).get<int>(), t.size() > 3 ? t.at(3).get<int>() : 2});
  return s;
}

// Another rank's frame: parsed under limits the parser enforces (a rank's place can be
// taken by a stranger where no P2PSCOPE_TOKEN is set), then read field by field.
nlohmann::json parse(const std::string& text, const char* what) {
  JsonLimits limits;
  limits.max_depth = 8;  // the deepest frame is a list of records holding lists of numbers
  BoundedJson j = parse_json_bounded(text, limits);
  if (!j.ok()) throw Error(fmt::format("survey: {} that does not parse ({})", what, j.error));
  return std::move(j.value);
}

double seconds_since(std::int64_t t0) { return static_cast<double>(monotonic_ns() - t0) / 1e9; }

Record record_for(const Step& s, const Task& t) {
  Record r;
  r.pass = s.pass, r.round = s.round, r.step = s.kind;
  r.server = t.server, r.client = t.client, r.rail = t.rail, r.group = t.group;
  r.size_bytes = s.size;
  return r;
}

// --sizes: a ping-pong session of `size`-byte messages, as many as fit in --size's bytes
// (at least 5, at most --pings): large messages cost their time, small ones their count.
tcp::Params size_params(const Options& o, std::uint64_t size) {
  tcp::Params p = o.lat;
  p.size_bytes = p.chunk_bytes = size;
  const std::uint64_t fit = std::max<std::uint64_t>(o.bw.size_bytes / size, 5);
  p.iters = static_cast<std::uint32_t>(std::min<std::uint64_t>(fit, o.lat.iters));
  p.warmup = 1;
  return p;
}

// The client's view of a session: each direction as its receiver measured it.
void take_figures(Record& rec, const tcp::Results& res) {
  rec.failure = res.failure;
  rec.c2s_bytes_per_s = res.server.round_rx_bytes_per_s;
  rec.s2c_bytes_per_s = res.client.round_rx_bytes_per_s;
  rec.latency_ns = res.client.latency_ns;
}

class Part {
 public:
  Part(Bootstrap& boot, const Options& o, const Result& r, const LinkTransport& transport)
      : boot_(boot), o_(o), hosts_(r.hosts), rails_(r.rails), members_(r.members), transport_(transport),
        me_(boot.rank()), my_host_(host_of(r.members, boot.rank())), token_(auth::load_token()),
        nccl_(o.transport == "nccl") {}

  // This rank's share of one step (every rank calls it for every step): listens for its
  // server tasks, learns every server's port, runs its client tasks; rank 0 returns
  // every rank's records, the others their own.
  std::vector<Record> run(const Step& s) {
    const tcp::Params params = s.kind == "size" ? size_params(o_, s.size) : s.kind == "lat" ? o_.lat : o_.bw;
    std::map<std::size_t, std::unique_ptr<tcp::Server>> servers;  // by task index
    nlohmann::json ports = nlohmann::json::object();
    std::vector<Record> mine;
    std::map<std::size_t, std::unique_ptr<NcclLinkSide>> nccl_servers;  // --transport nccl, by task index
    for (std::size_t i = 0; i < s.tasks.size(); ++i) {
      const Task& t = s.tasks[i];
      if (s.kind == "local" || s.kind == "gpu" || runs_at(t.server, t.rail) != me_) continue;
      if (nccl_) start_nccl_server(s, i, params, nccl_servers, ports, mine);
      else start_tcp_server(s, i, params, servers, ports, mine);
    }
    const nlohmann::json all_ports = exchange_ports(ports);
    std::vector<std::thread> threads;
    std::mutex m;
    for (auto& [i, side] : nccl_servers)
      threads.emplace_back([&, i = i, &side = side] {
        Record r = record_for(s, s.tasks[i]);
        const std::int64_t t0 = monotonic_ns();
        side->finish(r);
        r.wall_s = seconds_since(t0);
        const std::lock_guard lock(m);
        mine.push_back(std::move(r));
      });
    for (auto& [i, server] : servers)
      threads.emplace_back([&server = server] {
        try {
          (void)server->serve_one();  // the client reports both sides
        } catch (const std::exception&) {  // its client reports the failure
        }
      });
    for (std::size_t i = 0; i < s.tasks.size(); ++i) {
      const Task t = s.tasks[i];
      if (runs_at(t.client, t.rail) != me_) continue;
      if (s.kind == "gpu") {  // this host's device pairs: the step's only task here, no peer
        const std::int64_t t0 = monotonic_ns();
        std::vector<Record> pairs = measure_device_pairs(record_for(s, t), o_);
        for (Record& r : pairs) r.wall_s = seconds_since(t0);
        mine.insert(mine.end(), pairs.begin(), pairs.end());
        continue;
      }
      const auto port = all_ports.find(std::to_string(i));
      if (nccl_ && s.kind != "local") {
        const nlohmann::json link = port == all_ports.end() ? nlohmann::json() : *port;
        threads.emplace_back([&, t, link] {
          Record r = run_nccl_client(s, t, params, link);
          if (r.failure.empty()) return;  // the server's side reports the figures
          const std::lock_guard lock(m);
          mine.push_back(std::move(r));
        });
        continue;
      }
      threads.emplace_back([&, t, port_v = port == all_ports.end() ? 0 : port->get<int>()] {
        Record r = record_for(s, t);
        const std::int64_t t0 = monotonic_ns();
        try {
          if (s.kind == "local") {
            // The host's own ceiling: one direction, rounds long enough to time at memory speed.
            tcp::Params local = params;
            local.mode = tcp::Mode::bw;
            local.size_bytes = std::max<std::uint64_t>(local.size_bytes, 16ull << 20);
            take_figures(r, tcp::run_loopback(local));
          } else if (port_v == 0) {
            r.failure = fmt::format("the server side on {} did not listen (gone, or its bind failed)", hosts_[t.server].host);
          } else {
            tcp::ClientOptions co;
            co.hosts = {nic(t.server, my_host_, t.rail).ipv4};
            co.port = static_cast<std::uint16_t>(port_v);
            co.local = local_for(t.server, t.rail);
            co.local.nics = {nic(my_host_, t.server, t.rail).ipv4};
            co.token = token_;
            take_figures(r, tcp::run_client(co, params));
          }
        } catch (const std::exception& e) {
          r.failure = e.what();
        }
        r.wall_s = seconds_since(t0);
        const std::lock_guard lock(m);
        mine.push_back(std::move(r));
      });
    }
    for (auto& th : threads) th.join();
    std::vector<Record> all = gather_records(mine);
    return nccl_ && me_ == 0 ? merge_link_sides(std::move(all)) : all;
  }

 private:
  // The server host's side of task i over sockets or a plugin: a listener on the rail's
  // address, its port sent to the client with the step's ports.
  void start_tcp_server(const Step& s, std::size_t i, const tcp::Params& params,
                        std::map<std::size_t, std::unique_ptr<tcp::Server>>& servers, nlohmann::json& ports,
                        std::vector<Record>& mine) {
    const Task& t = s.tasks[i];
    tcp::ServerOptions so;
    so.bind_addrs = {nic(my_host_, t.client, t.rail).ipv4};
    so.port = 0;
    // The client connects as soon as it has the ports: a longer wait only means it failed.
    so.accept_timeout_s = std::min(o_.round_timeout_s, params.timeout_s + 5);
    so.token = token_;
    so.local = local_for(t.client, t.rail);
    try {
      servers[i] = std::make_unique<tcp::Server>(so);
      ports[std::to_string(i)] = servers[i]->port();
    } catch (const Error& e) {
      Record r = record_for(s, t);
      r.failure = fmt::format("server on {} {} could not listen: {}", hosts_[my_host_].host, so.bind_addrs[0], e.what());
      mine.push_back(r);
    }
  }

  // --transport nccl, the server host's side of task i: NCCL's rank 0 as a child, its
  // rendezvous on the rail's address; the client learns port and secret with the ports.
  void start_nccl_server(const Step& s, std::size_t i, const tcp::Params& params,
                         std::map<std::size_t, std::unique_ptr<NcclLinkSide>>& sides, nlohmann::json& ports,
                         std::vector<Record>& mine) {
    const Task& t = s.tasks[i];
    try {
      NcclLinkSpec spec = nccl_spec(s, t, params, 0);
      spec.rendezvous_ip = nic(my_host_, t.client, t.rail).ipv4;
      spec.port = free_port_on(spec.rendezvous_ip);
      spec.token = auth::random_nonce_hex(16);
      sides[i] = std::make_unique<NcclLinkSide>(spec);
      ports[std::to_string(i)] = {{"port", spec.port}, {"token", spec.token}};
    } catch (const std::exception& e) {
      Record r = record_for(s, t);
      r.failure = fmt::format("the NCCL side on {} could not start: {}", hosts_[my_host_].host, e.what());
      mine.push_back(r);
    }
  }

  // The client host's side: NCCL's rank 1, meeting rank 0 at the server's rail address.
  Record run_nccl_client(const Step& s, const Task& t, const tcp::Params& params, const nlohmann::json& link) {
    Record r = record_for(s, t);
    const std::int64_t t0 = monotonic_ns();
    try {
      if (!link.is_object()) {
        r.failure = fmt::format("the NCCL side on {} did not start (gone, or its start failed)", hosts_[t.server].host);
        return r;
      }
      // Another rank's frame (a stranger's, without a token): a port and a secret as the
      // server side makes them, or no link.
      if (!is_link_offer(link)) {
        r.failure = fmt::format("the NCCL side on {} sent no port and secret of the kind p2pscope makes: not run",
                                hosts_[t.server].host);
        return r;
      }
      NcclLinkSpec spec = nccl_spec(s, t, params, 1);
      spec.rendezvous_ip = nic(t.server, my_host_, t.rail).ipv4;
      spec.port = link.at("port").get<int>();
      spec.token = link.at("token").get<std::string>();
      NcclLinkSide side(spec);
      side.finish(r);
    } catch (const std::exception& e) {
      r.failure = fmt::format("the NCCL side on {} could not run: {}", hosts_[my_host_].host, e.what());
    }
    r.wall_s = seconds_since(t0);
    return r;
  }

  NcclLinkSpec nccl_spec(const Step& s, const Task& t, const tcp::Params& params, int rank) const {
    NcclLinkSpec spec;
    spec.rank = rank;
    const int peer = rank == 0 ? t.client : t.server;
    spec.nic = nic(my_host_, peer, t.rail).name;
    spec.host_id = hosts_[static_cast<std::size_t>(my_host_)].host;
    spec.gpu = gpu_for_link(t.rail, o_.per_gpu);
    spec.size_bytes = params.size_bytes;
    spec.iters = static_cast<int>(params.iters);
    spec.warmup = static_cast<int>(std::max<std::uint32_t>(params.warmup, 1));
    // Past the step's bound this rank would be dropped: the child ends before it.
    spec.timeout_s = std::max(10.0, o_.round_timeout_s - 5);
    spec.dir = nccl_link_dir(s.kind, hosts_[t.server].host, hosts_[t.client].host, s.pass, s.round, t.rail);
    return spec;
  }

  // The NIC `host` uses on `rail` with `peer` (--rails may cross them).
  const NicInfo& nic(int host, int peer, int rail) const { return rail_nic(hosts_, rails_, host, peer, rail); }

  // The rank that runs `host`'s side on `rail`: its r-th rank (mod their count), its first
  // for the local ceiling and device pairs (rail -1). One rank a host unless --per gpu.
  int runs_at(int host, int rail) const {
    const std::vector<int>& m = members_.at(static_cast<std::size_t>(host));
    return m[rail < 0 ? 0 : static_cast<std::size_t>(rail) % m.size()];
  }

  // This host's side of a session with `peer` on `rail`: sockets, or the plugin device
  // that is the rail's NIC here. A plugin call that hangs holds a thread nothing can stop:
  // the rank ends, and rank 0 names it gone and goes on (as for a killed host).
  tcp::LocalOptions local_for(int peer, int rail) const {
    tcp::LocalOptions l;
    const NicInfo& n = nic(my_host_, peer, rail);
    l.path = transport_.by_nic.at(static_cast<std::size_t>(&n - hosts_[static_cast<std::size_t>(my_host_)].nics.data()));
    l.on_hung_call = tcp::exit_on_hung_call("p2pscope survey");
    return l;
  }

  nlohmann::json exchange_ports(const nlohmann::json& mine) {
    const auto parts = boot_.gather_live(out::dump_json(mine), o_.round_timeout_s);
    std::string merged;
    if (me_ == 0) {
      nlohmann::json all = nlohmann::json::object();
      for (const auto& p : parts) {
        if (!p) continue;
        const nlohmann::json theirs = parse(*p, "a rank's ports");  // named: items() of a temporary dangles
        for (const auto& [k, v] : theirs.items()) all[k] = v;
      }
      merged = out::dump_json(all);
    }
    return parse(boot_.broadcast_live(merged, o_.round_timeout_s), "rank 0's ports");
  }

  std::vector<Record> gather_records(const std::vector<Record>& mine) {
    nlohmann::json j = nlohmann::json::array();
    for (const Record& r : mine) j.push_back(to_json(r));
    const auto parts = boot_.gather_live(out::dump_json(j), o_.round_timeout_s);
    if (me_ != 0) return mine;
    std::vector<Record> all;
    for (std::size_t rank = 0; rank < parts.size(); ++rank) {
      if (!parts[rank]) continue;
      // A rank whose records do not parse (another version, or a stranger in its place)
      // loses its own records of the step, not the survey's.
      try {
        std::vector<Record> theirs;
        for (const auto& r : parse(*parts[rank], "a rank's records")) theirs.push_back(record_from_json(r));
        all.insert(all.end(), theirs.begin(), theirs.end());
      } catch (const Error& e) {
        refused_.push_back(fmt::format("rank {}'s records of a step were refused: {}", rank, e.what()));
      }
    }
    return all;
  }

 public:
  // What gather_records refused since the last call (rank 0 puts it in the notes).
  std::vector<std::string> take_refused() { return std::exchange(refused_, {}); }

 private:

  Bootstrap& boot_;
  const Options& o_;
  const std::vector<HostInfo>& hosts_;
  const std::vector<Rail>& rails_;
  const std::vector<std::vector<int>>& members_;
  const LinkTransport& transport_;
  int me_, my_host_;
  std::optional<std::string> token_;
  bool nccl_;
  std::vector<std::string> refused_;
};

// Rank 0's side: the plan, the steps, the second pass, the verdict.
class Driver {
 public:
  Driver(Bootstrap& boot, const Options& o, Result& r, const LinkTransport& transport)
      : boot_(boot), o_(o), r_(r), part_(boot, o, r, transport) {
    for (const Record& rec : o.resumed) done_.insert(task_key(rec, r.hosts));
  }

  void run() {
    t0_ = monotonic_ns();
    const int n = static_cast<int>(r_.hosts.size());
    for (const Record& rec : o_.resumed) r_.records.push_back(rec);
    if (!o_.resumed.empty())
      r_.notes.push_back(fmt::format("resumed: {} records of an earlier run kept, their tasks not run again",
                                     o_.resumed.size()));
    if (n == 1)
      r_.notes.push_back("one process: only this host's local ceiling was measured; start one process per host "
                         "under a launcher (mpirun --map-by ppr:1:node, srun --ntasks-per-node=1) to survey links");
    if (o_.local) local_phase(n);
    const bool groups = o_.pairs.kind == "groups";
    const GroupRounds g = groups ? group_rounds(n, o_.pairs.k) : GroupRounds{};
    const std::vector<Round> rounds = groups ? g.rounds : rounds_for(o_.pairs, n, o_.seed);
    if (groups)
      r_.notes.push_back(fmt::format("adaptive mode: {} rounds of groups (a {} x {} grid; every pair in one group) "
                                     "instead of {} rounds of pairs, then each flagged link alone; a link is seen "
                                     "only when slower than its group's share of a NIC; no latency in groups",
                                     rounds.size(), g.grid, g.grid, circle_rounds(n).size()));
    r_.rounds = static_cast<int>(rounds.size());
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      if (over_bound(fmt::format("round {} of {}", i + 1, rounds.size()))) break;
      const std::int64_t t = monotonic_ns();
      pair_round(1, static_cast<int>(i + 1), rounds[i], groups ? g.group_size[i] : std::vector<int>{});
      round_s_.push_back(seconds_since(t));
      progress(fmt::format("round {}/{}: {} pairs x {} rail{}, {:.1f} s{}", i + 1, rounds.size(), rounds[i].size(),
                           rails(), rails() == 1 ? "" : "s", round_s_.back(), eta(rounds.size() - i - 1)));
    }
    if (o_.recheck) second_pass();
    r_.judged = judge(figures_of(r_.records, r_.hosts, r_.rails), o_.outliers);
    r_.verdict = decide(r_.judged, r_.names, r_.gone);
    apply_expectation(r_.verdict, r_.judged, o_.expect, o_.outliers);
    r_.wall_s = seconds_since(t0_);
  }

 private:
  int rails() const { return static_cast<int>(r_.rails.size()); }
  bool alive(int rank) const { return r_.gone[static_cast<std::size_t>(rank)].empty(); }

  void progress(const std::string& line) {
    if (o_.progress) o_.progress(line);
  }
  std::string eta(std::size_t rounds_left) const {
    if (round_s_.empty() || rounds_left == 0) return "";
    double sum = 0;
    for (double s : round_s_) sum += s;
    return fmt::format("; about {:.0f} s left for {} round{}", sum / static_cast<double>(round_s_.size()) *
                                                                      static_cast<double>(rounds_left),
                       rounds_left, rounds_left == 1 ? "" : "s");
  }
  bool over_bound(const std::string& what) {
    if (o_.max_time_s <= 0 || seconds_since(t0_) < o_.max_time_s) return false;
    if (!bound_hit_) {
      r_.notes.push_back(fmt::format("--max-time {:.0f} s reached before {}: the rest was not run (--resume goes on)",
                                     o_.max_time_s, what));
      progress(r_.notes.back());
    }
    bound_hit_ = true;
    return true;
  }

  void run_step(Step s) {
    std::erase_if(s.tasks, [&](const Task& t) {
      Record probe = record_for(s, t);
      return !alive(t.server) || !alive(t.client) || done_.count(task_key(probe, r_.hosts));
    });
    if (s.tasks.empty()) return;
    const std::string what = fmt::format("{} step of round {} (pass {})",
                                         s.kind == "bw"     ? "bandwidth"
                                         : s.kind == "lat"  ? "latency"
                                         : s.kind == "size" ? format_size(s.size) + " ping-pong"
                                                            : s.kind,
                                         s.round, s.pass);
    boot_.broadcast_live(out::dump_json(to_json(s)), o_.round_timeout_s);
    std::vector<Record> got = part_.run(s);
    for (const auto& [rank, why] : boot_.dropped()) {
      const int h = host_of(r_.members, rank);  // --per gpu: one rank gone takes its host's rails with it
      auto& g = r_.gone[static_cast<std::size_t>(h)];
      if (g.empty()) {
        g = fmt::format("rank {} stopped answering in the {}", rank, what);
        progress(fmt::format("{} ({}): {}; the survey goes on without it", r_.hosts[static_cast<std::size_t>(h)].host,
                             g, why));
      }
    }
    for (Record& rec : got) {
      if (o_.record) o_.record(to_json(rec));
      r_.records.push_back(std::move(rec));
    }
    for (std::string& why : part_.take_refused()) {
      progress(why);
      r_.notes.push_back(std::move(why));
    }
  }

  void local_phase(int n) {
    const auto local_task = [](int h) { return Task{h, h, -1}; };
    if (r_.shared_cpus) {
      // Namespace hosts of one machine share its CPUs: one at a time, or each ceiling
      // would be a share of the others'.
      for (int h = 0; h < n; ++h) run_step({1, 0, "local", {local_task(h)}});
      r_.notes.push_back("every host runs on one kernel (network namespaces of one machine) and on shared CPUs: their "
                         "local ceilings and latencies were measured one at a time, and their links share those CPUs");
    } else {
      Step s{1, 0, "local", {}};
      for (int h = 0; h < n; ++h) s.tasks.push_back(local_task(h));
      run_step(s);
    }
    progress(fmt::format("local ceilings measured ({} host{})", n, n == 1 ? "" : "s"));
    device_pair_phase(n);
  }

  // Every host's device pairs; one host at a time where the hosts share a kernel (their
  // GPUs and memory are the same ones).
  void device_pair_phase(int n) {
    std::string why;
    if (device_backend(o_.gpu_backend, why).empty()) {
      r_.notes.push_back("device pairs inside the hosts not measured on rank 0's host: " + why);
      return;
    }
    const std::size_t before = r_.records.size();
    const auto task = [](int h) { return Task{h, h, -1}; };
    if (r_.shared_kernel) {
      for (int h = 0; h < n; ++h) run_step({1, 0, "gpu", {task(h)}});
    } else {
      Step s{1, 0, "gpu", {}};
      for (int h = 0; h < n; ++h) s.tasks.push_back(task(h));
      run_step(s);
    }
    const std::size_t got = static_cast<std::size_t>(std::count_if(
        r_.records.begin() + static_cast<std::ptrdiff_t>(before), r_.records.end(),
        [](const Record& rec) { return rec.size_bytes == 0; }));  // --sizes' points are not figures
    progress(fmt::format("device pairs inside the hosts measured ({} figure{})", got, got == 1 ? "" : "s"));
  }

  // --sizes: each link of the round ping-pongs each message size, the campaign's points
  // (one-way time = round trip / 2) for the link models. One size a step; on hosts that
  // share CPUs one link at a time, as latency (a ping-pong times its CPU's hand-over).
  void size_steps(int pass, int round, const std::vector<Task>& tasks) {
    for (const std::uint64_t size : o_.sizes) {
      if (!r_.shared_cpus) {
        run_step({pass, round, "size", tasks, size});
        continue;
      }
      for (const Task& t : tasks) run_step({pass, round, "size", {t}, size});
    }
  }

  void pair_round(int pass, int round, const Round& pairs, const std::vector<int>& group_sizes) {
    Step bw{pass, round, "bw", {}};
    for (std::size_t i = 0; i < pairs.size(); ++i)
      for (int rail = 0; rail < rails(); ++rail)
        bw.tasks.push_back({pairs[i].a, pairs[i].b, rail, i < group_sizes.size() ? group_sizes[i] : 2});
    run_step(bw);
    if (!group_sizes.empty()) return;
    size_steps(pass, round, bw.tasks);
    if (!o_.latency) return;
    Step lat = bw;
    lat.kind = "lat";
    if (!r_.shared_cpus) {
      run_step(lat);
      return;
    }
    // Hosts of one kernel share its CPUs: ping-pongs at once would time the scheduler
    // (a reader waits for a CPU another pair spins on), so each runs alone, as it would
    // on hosts of their own.
    for (const Task& t : bw.tasks) run_step({pass, round, "lat", {t}});
  }

  void second_pass() {
    const auto judged = judge(figures_of(r_.records, r_.hosts, r_.rails), o_.outliers);
    std::set<int> suspect;
    std::vector<Task> latency_again;
    std::set<std::tuple<int, int, int>> links_again;  // (a, b, rail), a < b
    for (const Judged& j : judged) {
      if (!j.flagged || j.figure.pass != 1) continue;
      if (j.figure.metric == Metric::bandwidth) {
        suspect.insert({j.figure.from, j.figure.to});
        if (j.figure.rail >= 0)
          links_again.insert({std::min(j.figure.from, j.figure.to), std::max(j.figure.from, j.figure.to), j.figure.rail});
      } else {
        latency_again.push_back({j.figure.from, j.figure.to, j.figure.rail});
      }
    }
    // A flagged link is measured again as it was: a flag the link does not repeat was a
    // moment of the machine's load (decide() drops it); one it repeats is then told
    // apart from a slow end by the partners below. Disjoint pairs at once.
    std::vector<Task> again;
    for (const auto& [a, b, rail] : links_again)
      if (alive(a) && alive(b)) again.push_back({a, b, rail});
    // Beside them, in the same step, links of hosts with no flag: the second pass is
    // judged among its own figures (figures_of), so a moment when the whole machine or
    // fabric is slow moves the controls as much as the suspects.
    std::vector<int> controls;
    for (int h = 0; h < static_cast<int>(r_.hosts.size()); ++h)
      if (alive(h) && !suspect.count(h)) controls.push_back(h);
    while (!again.empty()) {
      Step s{2, 0, "bw", {}};
      std::set<int> busy;
      std::vector<Task> later;
      for (const Task& t : again) {
        if (busy.count(t.server) || busy.count(t.client)) {
          later.push_back(t);
          continue;
        }
        busy.insert(t.server), busy.insert(t.client);
        s.tasks.push_back(t);
      }
      int pairs = 0;
      for (std::size_t i = 0; i + 1 < controls.size() && pairs < kControlPairs; i += 2) {
        const int a = controls[i], b = controls[i + 1];
        if (busy.count(a) || busy.count(b)) continue;
        for (int rail = 0; rail < rails(); ++rail) s.tasks.push_back({a, b, rail});
        ++pairs;
      }
      run_step(s);
      again = std::move(later);
    }
    // A latency flag counts only when the same pair is slow again: a ping-pong meets the
    // machine's other load at its moment, and one moment is no finding.
    for (const Task& t : latency_again) {
      if (!alive(t.server) || !alive(t.client)) continue;
      run_step({2, 0, "lat", {t}});
    }
    if (!latency_again.empty())
      progress(fmt::format("second pass: {} latency flag{} measured again", latency_again.size(),
                           latency_again.size() == 1 ? "" : "s"));
    if (suspect.empty()) return;
    std::vector<int> good;
    for (int h = 0; h < static_cast<int>(r_.hosts.size()); ++h)
      if (!suspect.count(h) && alive(h)) good.push_back(h);
    std::vector<int> suspects;
    for (int h : suspect)
      if (alive(h)) suspects.push_back(h);
    const std::vector<Round> rounds = recheck_rounds(suspects, good);
    r_.recheck_rounds = static_cast<int>(rounds.size());
    if (rounds.empty()) {
      r_.notes.push_back("second pass: no host was found good, so no suspect could be measured against one");
      return;
    }
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      if (over_bound(fmt::format("second-pass round {}", i + 1))) break;
      // Bandwidth only: the second pass tells a slow host, NIC and link apart.
      Step bw{2, static_cast<int>(i + 1), "bw", {}};
      for (const Pair& p : rounds[i])
        for (int rail = 0; rail < rails(); ++rail) bw.tasks.push_back({p.a, p.b, rail});
      run_step(bw);
      progress(fmt::format("second pass {}/{}: {} suspect{} against good partners", i + 1, rounds.size(),
                           rounds[i].size(), rounds[i].size() == 1 ? "" : "s"));
    }
  }

  Bootstrap& boot_;
  const Options& o_;
  Result& r_;
  Part part_;
  std::set<std::string> done_;
  std::int64_t t0_ = 0;
  std::vector<double> round_s_;
  bool bound_hit_ = false;
};

// --transport nccl: the paths NCCL took, each once ("NCCL 2.28.3, NET/Socket eth1: 12 links").
void note_nccl_paths(Result& r) {
  std::map<std::string, int> paths;
  for (const Record& rec : r.records)
    if (rec.step == "bw" && rec.failure.empty()) ++paths[rec.via.substr(0, rec.via.find(';'))];
  for (const auto& [path, n] : paths)
    r.notes.push_back(fmt::format("NCCL's path: {}: {} link session{}", path.empty() ? "not in its log" : path, n,
                                  n == 1 ? "" : "s"));
}

}  // namespace

Result run(Bootstrap& boot, const Options& o) {
  Result r;
  const int me = boot.rank(), n = boot.size();
  HostInfo mine = describe_host(me, o);
  const LinkTransport transport = open_transport(o, mine);  // a plugin that cannot serve: mine.problem
  mine.transport = transport.name;
  const auto parts = boot.allgather(out::dump_json(to_json(mine)));  // everyone is present at the start
  std::vector<HostInfo> ranks;
  for (const auto& p : parts) ranks.push_back(host_from_json(parse(p, "a host description")));
  for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)].rank = i;
  group_ranks(ranks, o, r);
  check_hosts(r.hosts, o);  // the same hosts on every rank: the same refusal everywhere
  r.gone.assign(r.hosts.size(), "");
  r.shared_kernel = r.hosts.size() > 1 && std::all_of(r.hosts.begin(), r.hosts.end(), [&](const HostInfo& h) {
                      return !h.boot_id.empty() && h.boot_id == r.hosts.front().boot_id;
                    });
  std::set<int> taken;
  for (const HostInfo& h : r.hosts)
    for (int cpu : h.allowed_cpus) r.shared_cpus = r.shared_cpus || !taken.insert(cpu).second;
  r.shared_cpus = r.shared_kernel && (r.shared_cpus || taken.empty());
  r.rails = o.rails.empty() ? identity_rails(r.hosts.front().nics.size()) : o.rails;
  for (const HostInfo& h : r.hosts) {
    r.names.hosts.push_back(h.host);
    std::vector<std::string> nics;  // by rail: the NIC's name, or both where a rail crosses
    for (const Rail& rail : r.rails) nics.push_back(rail_label(h, rail));
    r.names.nics.push_back(nics);
  }
  for (const Rail& rail : r.rails) r.names.rails.push_back(rail_label(r.hosts.front(), rail));

  if (me != 0) {
    Part part(boot, o, r, transport);
    // Rank 0 may run other hosts' local ceilings one at a time meanwhile.
    const double wait_s = std::max(600.0, o.round_timeout_s * (n + 2));
    for (;;) {
      const nlohmann::json msg = parse(boot.broadcast_live("", wait_s), "rank 0's step");
      if (msg.value("op", "") != "step") break;
      (void)part.run(step_from_json(msg));
    }
    return r;
  }
  r.transport = transport.name;
  if (o.transport == "nccl")
    r.notes.push_back("links over NCCL's own send/recv: for each link a pair of child processes (`bench gpu --backend "
                      "nccl`), each with its host's NCCL_HOSTID and the rail's NIC as NCCL_SOCKET_IFNAME; the two "
                      "directions one after the other, each alone (over tcp and net both at once); the local ceilings "
                      "over TCP loopback");
  else if (o.transport != "tcp")
    r.notes.push_back(fmt::format("links over {}, each rail's sessions on the device that is its NIC ({}); the local "
                                  "ceilings over TCP loopback", transport.name, fmt::join(transport.devices, ", ")));
  Driver d(boot, o, r, transport);
  try {
    d.run();
  } catch (...) {
    boot.broadcast_live(out::dump_json(nlohmann::json{{"op", "end"}}), o.round_timeout_s);
    throw;
  }
  boot.broadcast_live(out::dump_json(nlohmann::json{{"op", "end"}}), o.round_timeout_s);
  if (o.transport == "nccl") note_nccl_paths(r);
  return r;
}

}  // namespace p2pscope::survey
