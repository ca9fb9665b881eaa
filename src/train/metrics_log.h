// metrics.jsonl of a run, appended line by line: flushed per line, fsynced
// before a checkpoint records its length (so a resumed run can cut the log
// back to exactly what the checkpoint saw).
#pragma once

#include <cstddef>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace gpt2lab {

class MetricsLog {
 public:
  // Opens (creating) `path` and cuts it to `truncate_to` bytes.
  MetricsLog(const std::filesystem::path& path, size_t truncate_to);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::json& row);  // one line; throws Error on a failed write
  void sync();                            // fsync; throws Error on failure
  size_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  size_t size_ = 0;
};

}  // namespace gpt2lab
