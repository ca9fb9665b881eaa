#include "sample/stop_text.h"

#include <algorithm>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

StopText::StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& s : stops_) check(!s.empty(), "--stop: an empty stop string would stop at once");
}

std::string StopText::push(const std::string& text) {
  if (stopped_) return "";
  pending_ += text;
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    std::string out = pending_.substr(0, first);
    pending_.clear();
    stopped_ = true;
    return out;
  }
  // Hold back the longest tail that is the beginning of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_)
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > keep; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopText::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

}  // namespace gpt2lab
