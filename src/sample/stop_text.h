// Stop strings for streamed generation (`sample --stop`, OpenAI's "stop"):
// text is shown as it is generated, except what could still turn out to be
// the start of a stop string; once one appears, generation ends and neither
// it nor anything after it is shown.
#pragma once

#include <string>
#include <vector>

namespace gpt2lab {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops);  // throws Error on an empty one

  // Adds generated text; returns what can be shown now.
  std::string push(const std::string& text);
  // At the end of generation: the text held back (no stop string came).
  std::string flush();
  // True once a stop string has appeared.
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace gpt2lab
