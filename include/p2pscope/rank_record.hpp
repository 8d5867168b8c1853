#pragma once
// Another rank's part of a collective (the rendezvous's allgather and broadcast) is that
// rank's bytes, and without P2PSCOPE_TOKEN a stranger may hold the rank, or squat rank
// 0's port (include/p2pscope/bootstrap.hpp): read here, bounded and typed, every refusal
// a UsageError that names the rank, what belongs there and what came (issue 43 item 4).
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

namespace p2pscope {

// A JSON object of at most `max_bytes`, two levels deep, or the UsageError.
nlohmann::json rank_record(const std::string& bytes, int rank, const std::string& what, std::size_t max_bytes);
// A field of such a record, of the type asked for, or the same UsageError naming it.
std::string rank_string(const nlohmann::json& record, const char* key, int rank, const std::string& what,
                        std::size_t max_bytes);
std::int64_t rank_count(const nlohmann::json& record, const char* key, int rank, const std::string& what);
// Fields that may be absent but, where present, are strings or whole numbers (any sign).
void rank_fields_typed(const nlohmann::json& record, int rank, const std::string& what,
                       std::initializer_list<const char*> strings, std::initializer_list<const char*> integers);
// A part that must be exactly `bytes` long (a packed binary record).
void rank_part_size(const std::string& part, int rank, const std::string& what, std::size_t bytes);
// The refusal's text: "rank R sent CAME where WHAT belongs: not this run's p2pscope ...".
std::string rank_refusal(int rank, const std::string& what, const std::string& came);

}  // namespace p2pscope
