#include "train/metrics_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

MetricsLog::MetricsLog(const std::filesystem::path& path, size_t truncate_to) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw Error("cannot open '" + path.string() + "' for writing: " + std::strerror(errno));
  if (::ftruncate(fd_, static_cast<off_t>(truncate_to)) != 0 ||
      ::lseek(fd_, static_cast<off_t>(truncate_to), SEEK_SET) < 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);  // the destructor does not run for a constructor that throws
    fd_ = -1;
    throw Error("cannot truncate '" + path.string() + "': " + why);
  }
  size_ = truncate_to;
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const nlohmann::json& row) {
  const std::string line = row.dump() + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot append to '" + path_.string() + "': " + std::strerror(errno) + " (disk full?)");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  size_ += line.size();
}

void MetricsLog::sync() {
  if (::fsync(fd_) != 0) throw Error("cannot flush '" + path_.string() + "' to disk: " + std::strerror(errno));
}

}  // namespace gpt2lab
