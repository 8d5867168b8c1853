#pragma once
// The last lines of a child's output file, for an error message: what a process said
// before it failed, made safe to print.
#include <cstddef>
#include <filesystem>
#include <string>

namespace p2pscope {

// The last `n` non-blank lines of `path` (read up to 1 MiB), joined by newlines and passed
// through external_text at `max_bytes`; "" when the file cannot be read.
std::string last_lines_of(const std::filesystem::path& path, std::size_t n, std::size_t max_bytes);

}  // namespace p2pscope
