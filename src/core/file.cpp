#include "core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string unique_suffix() {
  thread_local std::random_device rd;  // a study writes files from several threads (--jobs)
  char buf[64];
  std::snprintf(buf, sizeof buf, ".tmp-%d-%08x", static_cast<int>(getpid()), static_cast<unsigned>(rd()));
  return buf;
}

void write_all(int fd, const void* data, size_t bytes, const fs::path& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write '" + path.string() + "': " + errno_text() + " (is the disk full?)");
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

}  // namespace

OpenedFile open_regular_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path.string() + "': " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw Error("cannot read '" + path.string() + "': " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(
        "'" + path.string() + "' is " +
        (S_ISDIR(st.st_mode) ? "a directory, not a regular file" : "not a regular file (a FIFO, device or socket)") +
        "; expected a file");
  }
  // Regular files never block; clear O_NONBLOCK for the reads anyway.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return {fd, static_cast<uint64_t>(st.st_size)};
}

std::string read_file_tail(const fs::path& path, uint64_t end, size_t max_bytes) {
  const OpenedFile f = open_regular_file(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{f.fd};
  end = std::min(end, f.size);
  const uint64_t begin = end > max_bytes ? end - max_bytes : 0;
  std::string data(static_cast<size_t>(end - begin), '\0');
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pread(f.fd, data.data() + done, data.size() - done, static_cast<off_t>(begin + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read '" + path.string() + "': " + errno_text());
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

namespace {

std::string too_large(const fs::path& path, const std::string& size, size_t max_bytes) {
  return "'" + path.string() + "' is " + size + " bytes, more than the " + std::to_string(max_bytes) +
         " expected of such a file; refusing to read it";
}

// A file that reports size 0 (procfs, sysfs) read to its end in blocks,
// refused once it passes max_bytes.
std::string read_streamed(int fd, const fs::path& path, size_t max_bytes) {
  std::string data;
  char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read '" + path.string() + "': " + errno_text());
    if (n == 0) return data;
    if (static_cast<size_t>(n) > max_bytes - data.size()) throw Error(too_large(path, "over", max_bytes));
    data.append(block, static_cast<size_t>(n));
  }
}

}  // namespace

std::string read_file(const fs::path& path, size_t max_bytes) {
  const OpenedFile f = open_regular_file(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{f.fd};
  if (f.size > max_bytes) throw Error(too_large(path, std::to_string(f.size), max_bytes));
  if (f.size == 0) return read_streamed(f.fd, path, max_bytes);
  std::string data(static_cast<size_t>(f.size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::read(f.fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read '" + path.string() + "': " + errno_text());
    if (n == 0) break;  // shrank while read
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

void fsync_directory(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some filesystems refuse O_DIRECTORY opens
  ::fsync(fd);
  ::close(fd);
}

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(std::move(path)) {
  tmp_ = path_;
  tmp_ += unique_suffix();
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot write '" + path_.string() + "' (creating its temp file failed): " + errno_text());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
  write_all(fd_, data, bytes, path_);  // named as the user knows it, not by its temp name
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) throw Error("cannot flush '" + path_.string() + "' to disk: " + errno_text());
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error("cannot close '" + path_.string() + "': " + errno_text());
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error("cannot rename '" + tmp_.string() + "' to '" + path_.string() + "': " + errno_text());
  committed_ = true;
  fsync_directory(path_.parent_path());
}

void write_file_atomic(const fs::path& path, std::string_view data) {
  AtomicFileWriter w(path);
  w.write(data.data(), data.size());
  w.commit();
}

fs::path make_staging_directory(const fs::path& target) {
  fs::path abs = fs::absolute(target).lexically_normal();
  if (abs.filename().empty()) abs = abs.parent_path();
  std::error_code ec;
  fs::create_directories(abs.parent_path(), ec);
  if (ec) throw Error("cannot create directory '" + abs.parent_path().string() + "': " + ec.message());
  fs::path staging = abs;
  staging += unique_suffix();
  if (::mkdir(staging.c_str(), 0755) != 0) throw Error("cannot create '" + staging.string() + "': " + errno_text());
  return staging;
}

void publish_directory(const fs::path& staging, const fs::path& target) {
  fs::path abs = fs::absolute(target).lexically_normal();
  if (abs.filename().empty()) abs = abs.parent_path();
  std::error_code ec;
  // Make every file in staging durable before it becomes visible.
  for (const auto& entry : fs::directory_iterator(staging)) {
    int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  fsync_directory(staging);
  if (!fs::exists(abs, ec)) {
    if (::rename(staging.c_str(), abs.c_str()) != 0)
      throw Error("cannot move '" + staging.string() + "' to '" + abs.string() + "': " + errno_text());
  } else {
#ifdef SYS_renameat2
    constexpr unsigned kRenameExchange = 2;  // RENAME_EXCHANGE
    long rc = ::syscall(SYS_renameat2, AT_FDCWD, staging.c_str(), AT_FDCWD, abs.c_str(), kRenameExchange);
#else
    long rc = -1;
    errno = ENOSYS;
#endif
    if (rc != 0) {
      // Filesystem without RENAME_EXCHANGE: move the old one aside first. A
      // crash between the two renames leaves the old data under old_aside.
      fs::path aside = abs;
      aside += unique_suffix() + ".old";
      if (::rename(abs.c_str(), aside.c_str()) != 0 || ::rename(staging.c_str(), abs.c_str()) != 0)
        throw Error("cannot replace '" + abs.string() + "': " + errno_text());
      fs::remove_all(aside, ec);
    } else {
      fs::remove_all(staging, ec);  // staging now holds the old contents
    }
  }
  fsync_directory(abs.parent_path());
}

}  // namespace gpt2lab
