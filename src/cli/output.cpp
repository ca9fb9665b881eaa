#include "cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "gpt2lab/core/error.h"

namespace gpt2lab::cli {

void write_stdout(std::string_view s) {
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0)
    throw Error(std::string("cannot write standard output: ") + std::strerror(errno) +
                " (disk full, or the reader went away?)");
}

bool close_stdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const bool clean = !std::ferror(stdout);
  const int saved = errno;
  const bool closed = std::fclose(stdout) == 0;
  if (!flushed || !clean || !closed) {
    if (saved != 0) errno = saved;
    return false;
  }
  return true;
}

}  // namespace gpt2lab::cli
