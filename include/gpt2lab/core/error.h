// The one error type of gpt2lab. Every failure a user can cause (bad flag,
// bad file, bad config) is reported through it with a message that says what
// was wrong, where (file, field, offset) and, where it helps, what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace gpt2lab {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error(message) when cond is false. Cheap enough for boundaries.
inline void check(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}

}  // namespace gpt2lab
