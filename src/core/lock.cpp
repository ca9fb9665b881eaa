#include "core/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

std::string read_holder(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

// The lock files this process holds, by (device, inode): flock(2) refuses a
// second open of the same file within one process too, and then the holder
// named in the file is this very process, which "another process" would
// misreport.
struct HeldLocks {
  std::mutex mu;
  std::set<std::pair<dev_t, ino_t>> files;
};

HeldLocks& held_locks() {
  static HeldLocks h;
  return h;
}

std::pair<dev_t, ino_t> file_id(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

bool held_here(int fd) {
  HeldLocks& h = held_locks();
  std::lock_guard lock(h.mu);
  return h.files.count(file_id(fd)) != 0;
}

void set_held(int fd, bool held) {
  HeldLocks& h = held_locks();
  std::lock_guard lock(h.mu);
  if (held)
    h.files.insert(file_id(fd));
  else
    h.files.erase(file_id(fd));
}

Error busy_error(const fs::path& dir, int fd) {
  if (held_here(fd))
    return Error("'" + dir.string() + "' is already in use by this process (pid " + std::to_string(::getpid()) +
                 "): another call here (a train() or save() still running, on another thread or around this "
                 "call) owns it; let that call finish first (one owner at a time for a run, study or output "
                 "folder)");
  const std::string holder = read_holder(fd);
  return Error("'" + dir.string() + "' is in use by another gpt2lab process" +
               (holder.empty() ? "" : " (" + holder + ")") +
               "; wait for it to finish or stop it (one process at a time owns a run, study or output folder)");
}

}  // namespace

DirectoryLock::DirectoryLock(const fs::path& dir, const std::string& what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, "cannot create directory '" + dir.string() + "': " + ec.message());
  const fs::path path = dir / kLockFile;
  // The directory can be replaced between open and flock (a dataset is
  // published by swapping folders): retry until the locked file is the one
  // the path names.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) throw Error("cannot open lock file '" + path.string() + "': " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      Error busy = busy_error(dir, fd);
      ::close(fd);
      if (err == EWOULDBLOCK) throw busy;
      throw Error("cannot lock '" + path.string() + "': " + std::strerror(err));
    }
    struct stat by_fd {
    }, by_path{};
    if (::fstat(fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 && by_fd.st_ino == by_path.st_ino &&
        by_fd.st_dev == by_path.st_dev) {
      const std::string text = "pid " + std::to_string(::getpid()) + ", " + what + "\n";
      // Best effort: the record only improves the next refusal's message.
      if (::ftruncate(fd, 0) == 0) {
        const ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
        (void)n;
      }
      fd_ = fd;
      dir_ = dir;
      set_held(fd_, true);
      return;
    }
    ::close(fd);
  }
  throw Error("cannot lock '" + path.string() + "': the folder keeps being replaced");
}

DirectoryLock::~DirectoryLock() { release(); }

void DirectoryLock::release() {
  if (fd_ < 0) return;
  set_held(fd_, false);
  ::close(fd_);
  fd_ = -1;
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), dir_(std::move(other.dir_)) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    dir_ = std::move(other.dir_);
  }
  return *this;
}

void DirectoryLock::abandon() {
  if (fd_ < 0) return;
  std::error_code ec;
  bool only_lock = true;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().filename() != kLockFile) only_lock = false;
  if (!ec && only_lock) {
    fs::remove(dir_ / kLockFile, ec);
    fs::remove(dir_, ec);
  }
  release();
}

}  // namespace gpt2lab

namespace gpt2lab {

void check_output_directory(const fs::path& dir, const std::vector<std::string>& ours, bool force,
                            const std::string& kind) {
  std::error_code ec;
  const auto st = fs::symlink_status(dir, ec);
  // Replaced whole by a rename: a link would be replaced by a folder and
  // what it points to left behind.
  check(!fs::is_symlink(st), "--out '" + dir.string() + "' is a symbolic link; give the folder itself");
  std::error_code cwd_ec;
  check(fs::weakly_canonical(dir, ec) != fs::current_path(cwd_ec),
        "--out '" + dir.string() + "' is the current directory, which would be replaced whole; give another folder");
  if (!fs::exists(st)) return;
  check(fs::is_directory(st), "--out '" + dir.string() + "' exists and is not a folder");
  std::vector<std::string> foreign;
  bool have_ours = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == kLockFile) continue;
    // One of our names, but a folder (or a link, a FIFO): not something we wrote.
    if (std::find(ours.begin(), ours.end(), name) != ours.end() && e.is_regular_file(ec) && !e.is_symlink(ec)) {
      have_ours = true;
      continue;
    }
    foreign.push_back(name);
  }
  check(!ec, "cannot list '" + dir.string() + "': " + ec.message());
  if (!foreign.empty()) {
    std::sort(foreign.begin(), foreign.end());
    std::string shown;
    for (size_t i = 0; i < std::min<size_t>(foreign.size(), 3); ++i) shown += (i ? ", " : "") + foreign[i];
    if (foreign.size() > 3) shown += ", ... (" + std::to_string(foreign.size()) + " entries)";
    throw Error("--out '" + dir.string() + "' holds files that are not " + kind + " (" + shown +
                "); gpt2lab replaces the folder whole and never deletes what it did not write, so choose a new or "
                "empty folder");
  }
  check(!have_ours || force, "--out '" + dir.string() + "' already holds " + kind + "; pass --force to replace it");
}

DirectoryLock claim_output_directory(const fs::path& dir, const std::vector<std::string>& ours, bool force,
                                     const std::string& kind, const std::string& command) {
  check_output_directory(dir, ours, force, kind);
  DirectoryLock lock(dir, command);
  check_output_directory(dir, ours, force, kind);
  return lock;
}

}  // namespace gpt2lab
