// One owner at a time for a directory gpt2lab writes into (a run, a study,
// a prepared dataset, a tokenizer folder).
//
// An advisory flock(2) on DIR/.gpt2lab.lock. The kernel drops it when the
// holder exits, however it exits, so a SIGKILLed run never leaves a stale
// lock behind. The holder writes its pid and command into the file so that a
// refused process can name it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

inline constexpr const char* kLockFile = ".gpt2lab.lock";

class DirectoryLock {
 public:
  DirectoryLock() = default;
  // Creates `dir` (and parents) if missing, then takes the lock or throws
  // Error naming the holder (this process itself, when another of its
  // calls holds it). `what` says what this process does there
  // ("train", "study", ...), recorded for the next one to read.
  DirectoryLock(const fs::path& dir, const std::string& what);
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  bool held() const { return fd_ >= 0; }

  // For a failed write: if the folder holds nothing but the lock file (the
  // lock created it, or it was empty), removes both and releases the lock,
  // so that a refused or failed command leaves nothing behind.
  void abandon();

 private:
  void release();
  int fd_ = -1;
  fs::path dir_;
};

}  // namespace gpt2lab

namespace gpt2lab {

// Takes ownership of an output folder the user named (prepare, tokenizer
// train, init, convert), which gpt2lab then replaces whole with its files
// `ours`: refused when the folder holds anything else (nothing that gpt2lab
// did not write is ever deleted), or already holds our files and `force` is
// off. `kind` names the output in messages ("a prepared dataset"). Checked
// before the folder is created or locked, and again under the lock.
DirectoryLock claim_output_directory(const fs::path& dir, const std::vector<std::string>& ours, bool force,
                                     const std::string& kind, const std::string& command);

// The same checks alone, without creating or locking anything: for a command
// to fail before long work rather than after it.
void check_output_directory(const fs::path& dir, const std::vector<std::string>& ours, bool force,
                            const std::string& kind);

}  // namespace gpt2lab
