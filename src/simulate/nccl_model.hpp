#pragma once
// predict's model of NCCL's collectives (docs/predict.md), calibrated from the short
// NCCL runs `profile` keeps in DIR/nccl-calibration/ (apps/p2pscope/nccl_calibration.hpp).
//
// A call's time as nccl-tests reports it (one host-timed span of back-to-back
// iterations) combines two costs that overlap, as (host^3 + gpu^3)^(1/3) (the larger one,
// plus what imperfect overlap adds where they are close):
//   host: the launch of every NCCL call of one iteration from one thread,
//         h0(n) + h1(n) x calls (allreduce n calls, sendrecv 2n, alltoall 2n^2);
//         calls, wire bytes and ring steps per op are the collective table's
//         (p2pscope/collective.hpp), the same rows bench nccl's busbw reads;
//   GPU:  the collective itself, priced from the calibration by what it moves: at n
//         ranks an op moves W bytes per rank (allreduce 2(n-1)/n S, allgather and
//         reducescatter (n-1)/n S, broadcast and sendrecv S, alltoall (n-1)/n S).
// GPU time of an (op, n) that was timed: its own curve against W (log-log between the
// sizes measured). Of an op timed at another rank count n0: that curve at the same W;
// for allgather and reducescatter, that curve at the same bytes per ring step plus the
// middle steps n adds, each priced as allreduce's n-rank less n0-rank time per step. Of an op not timed at all: its class
// mate at n (allreduce for ring ops, sendrecv for point-to-point) plus NCCL's per-step
// latency for the steps it differs by. Without a calibration: NCCL's own default model
// (latency per step, 360 GB/s per rank), every such figure marked.
// NCCL's algorithm, protocol and channel count per size come from its TUNING log.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "simulate/nccl_tuning.hpp"

namespace p2pscope::simulate {

struct NcclCurve {
  std::string op;  // bench nccl's name: allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv
  int ranks = 0;
  std::vector<double> bytes, span_ns, gpu_ns;  // by S ascending: nccl-tests' time, the per-iteration median
};

struct NcclCalibration {
  std::string dir;                     // DIR/nccl-calibration
  bool present = false;                // its manifest was found
  std::string nccl_version;            // from the logs ("" when they do not say)
  std::vector<NcclCurve> curves;
  std::vector<NcclCurve> host_curves;  // small sizes only: for the host's launch cost, never priced as GPU time
  std::map<int, NcclTuning> choices;   // by rank count
  std::vector<std::string> notes;      // runs that failed, files missing
  const NcclCurve* find(const std::string& op, int ranks) const;
};

// Reads campaign_dir/nccl-calibration (absent: present = false, no error). Throws
// UsageError naming the file when one is there but malformed.
NcclCalibration read_nccl_calibration(const std::string& campaign_dir);

struct NcclPrediction {
  double time_ns = 0, gpu_ns = 0, host_ns = 0;
  std::string role;         // "calibration": this op at this rank count was timed; "predicted"
  std::string basis;        // how the GPU time was priced, in words
  std::string algo, proto;  // NCCL's choice where its log says ("" otherwise); "p2p" for send/recv ops
  int channels = 0;
  bool defaults = false;      // a figure fell back on NCCL's default model, not a measurement
  bool extrapolated = false;  // beyond the sizes the calibration timed
};

class NcclModel {
 public:
  explicit NcclModel(NcclCalibration cal);
  NcclPrediction predict(const std::string& op, int ranks, std::uint64_t S) const;
  // What calibrated the model, one line each ("allreduce at 2 ranks: 31 sizes, 1 B - 1 GiB"),
  // and the figures taken from NCCL's defaults instead.
  std::vector<std::string> calibrated_by() const;
  std::vector<std::string> defaults_used() const;
  const NcclCalibration& calibration() const { return cal_; }
  // The host cost of one iteration at n ranks for `calls` NCCL calls (ns), and whether it
  // was measured at that rank count.
  double host_ns(int ranks, int calls, bool* measured = nullptr) const;
  // Scales the host cost at `ranks` (a launch rate seen by another process; see
  // predict_nccl.cpp's host anchor). No effect where that rank count has no fit.
  void scale_host(int ranks, double factor);

 private:
  NcclCalibration cal_;
  std::map<int, std::pair<double, double>> host_fit_;  // ranks -> (h0, h1) in ns
  double gpu_from_curve(const NcclCurve& c, double wire, bool* extrapolated) const;
  // allgather / reducescatter at n from the same op at another rank count (see the .cpp).
  void ring_steps_from(const NcclCurve& same, int n, double S, NcclPrediction* p) const;
  // allgather / reducescatter at n from allreduce at n, less the steps allreduce has more
  // (see the .cpp); false where allreduce is not timed at n and at one other rank count.
  bool allreduce_less_steps(const std::string& op, int n, double S, NcclPrediction* p) const;
  // NCCL's protocol for (op, ranks, S) from its TUNING log; "" where the log does not say.
  std::string proto_at(const std::string& op, int ranks, double S) const;
  // c's GPU time at S from the sizes NCCL ran in `proto` only; NaN with fewer than two.
  double gpu_in_proto(const NcclCurve& c, const std::string& proto, double S, bool* extrapolated) const;
};

}  // namespace p2pscope::simulate
