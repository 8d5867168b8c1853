#pragma once
// Each session's clock readings, kept in the campaign directory so that the alignment
// of a campaign measured by several processes (--processes K) or resumed (--resume)
// rests on every session's readings, not the last one's. CLOCK_MONOTONIC and
// %globaltimer are both system-wide, so readings taken by different processes of one
// boot lie on the same two time lines and fit together. Without this, the last
// session's map extrapolated the earlier sessions' rows from its own first piece: on
// an H100 at --processes 3 the bound grew from +-0.7 us to +-8.5 us.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profile/alignment.hpp"

namespace p2pscope::profile {

// One session's readings: its start window, the bursts it took while measuring, its end window.
struct SessionReadings {
  DriftWindow start, during, end;
};

// "clock_readings-003.json": the session's index in metadata.json's sessions.
std::string clock_readings_file(std::size_t session);

nlohmann::json to_json(const SessionReadings& r);
// Throws Error naming what is malformed.
SessionReadings session_readings_from_json(const nlohmann::json& j);

// Writes DIR/clock_readings-<session>.json atomically (a kill leaves the old file whole).
void save_session_readings(const std::string& dir, std::size_t session, const SessionReadings& r);
// Every other session's readings in DIR (not `except_session`'s), by session index.
// A damaged file is left out with a note saying so: its session's rows are then
// placed from the other sessions' readings.
std::map<std::size_t, SessionReadings> load_other_session_readings(const std::string& dir, std::size_t except_session,
                                                                   std::vector<std::string>& notes);

// What align_clocks fits: the earliest session's start window as the start, this
// session's end window as the end, and every other reading (all sessions' bursts,
// the other sessions' windows) as readings during the run.
struct MergedReadings {
  DriftWindow start, during, end;
  std::size_t sessions = 0;        // sessions whose readings are in (0: no device clock)
  std::vector<std::string> notes;  // sessions left out, and why
};
// A session whose timer offset (device - host) differs from this one's by more than 1 ms
// plus 500 ppm of the time between them read another clock epoch (a reboot restarts
// CLOCK_MONOTONIC, a GPU reset reloads %globaltimer): it is left out with a note.
MergedReadings merge_session_readings(const std::map<std::size_t, SessionReadings>& others,
                                      const SessionReadings& mine);

}  // namespace p2pscope::profile
