// Standard output that fails loudly: a full disk or a closed pipe must end a
// command with an error, not exit 0 with truncated output.
#pragma once

#include <string_view>

namespace gpt2lab::cli {

// Writes and flushes `s`; throws Error when the write or the flush fails.
void write_stdout(std::string_view s);

// Flushes and closes stdout at the end of a command; false (with errno set)
// when anything written to it was lost.
bool close_stdout();

}  // namespace gpt2lab::cli
