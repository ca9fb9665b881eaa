// Whole-file reads and crash-safe writes.
//
// Every file gpt2lab writes goes through write_file_atomic (temp file in the
// same directory, fsync, rename, fsync of the directory), so a crash at any
// moment leaves either the old file or the new one, never a torn one.
// Directories (checkpoints) are published with publish_directory, which swaps
// a fully written temp directory into place in one rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace gpt2lab {

namespace fs = std::filesystem;

// Reads a whole regular file of at most max_bytes; throws Error naming the
// path on failure. This is the one way gpt2lab reads a file whole (configs,
// prompts, texts, JSON and JSONL, tokenizer files); every reader goes
// through it so that each gets the same checks:
// - A FIFO, device, socket or directory is refused before anything is read
//   (a FIFO would block forever, /dev/zero never ends, a directory reads as
//   an opaque "underflow").
// - The size is checked before anything is allocated.
// - A regular file that reports size 0 is read by streaming, up to
//   max_bytes: procfs and sysfs files (/proc/self/status) report 0 but have
//   content, and a real empty file streams as empty all the same.
// "-" is a file named "-", not standard input: the commands that take text
// from standard input say so and read it themselves (tokenize), so a path
// never silently becomes a wait on the terminal.
// Every caller names its cap: there is no uncapped read.
std::string read_file(const fs::path& path, size_t max_bytes);

// A cap for text files read whole (prompts, --hyp/--ref, eval text): far
// above any real one, below what would exhaust memory on a laptop.
inline constexpr size_t kMaxTextFileBytes = size_t{1} << 30;

// The last at most `max_bytes` bytes of the first `end` bytes of a regular
// file (a log's tail without reading the log).
std::string read_file_tail(const fs::path& path, uint64_t end, size_t max_bytes);

// Opens a regular file for reading (O_NONBLOCK, so a FIFO cannot block the
// open itself) and returns its descriptor and size; throws Error naming the
// path when it is missing, unreadable or not a regular file.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
};
OpenedFile open_regular_file(const fs::path& path);

// Writes data to path atomically (see above).
void write_file_atomic(const fs::path& path, std::string_view data);

// Streaming variant for large payloads: the callback is handed a FILE* opened
// on the temp file; the file is fsynced and renamed only if it returns.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(fs::path path);
  ~AtomicFileWriter();  // removes the temp file unless commit() ran
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  void commit();

 private:
  fs::path path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// fsync on a directory, so that renames inside it are durable.
void fsync_directory(const fs::path& dir);

// A fresh, empty temp directory beside `target` (same filesystem, so it can be
// renamed onto target).
fs::path make_staging_directory(const fs::path& target);

// Moves the fully written `staging` directory to `target` atomically: if
// target exists it is exchanged in one rename (RENAME_EXCHANGE) and the old
// contents removed afterwards. A crash leaves either the old or new directory.
void publish_directory(const fs::path& staging, const fs::path& target);

}  // namespace gpt2lab
