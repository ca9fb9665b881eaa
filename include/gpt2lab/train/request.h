// What a user asks of `train`, option by option, and the run it means. The
// CLI's flags and the Python module's keywords go through the same rules,
// so the same options give the same run (and the same metrics, bit for bit).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2lab/train/options.h"

namespace gpt2lab {

struct TrainRequest {
  TrainOptions options;                      // the defaults, with every given option set
  std::vector<const OptionSpec*> given;      // the rows of the given options
  std::map<std::string, std::string> model;  // the model fields given, by config.json key, as text

  // One option by its flag's name without the dashes ("lr", "batch-size";
  // '_' may stand for '-'): a training option, its value checked against its
  // row, or a model field ("n-layer", "norm"; an integer, one of its words,
  // or true/false for on/off). Throws Error naming it; an unknown name lists
  // the known ones.
  void set(const std::string& name, const nlohmann::json& value);
  bool given_option(const std::string& flag) const;  // by long flag ("--min-lr")

  // The run this request means, as `gpt2lab train` runs it: --min-lr defaults to
  // lr/10; a new run needs --data and takes its vocabulary from the data
  // unless given; --init-from takes the model from the checkpoint (a model
  // field that says otherwise is refused); --resume continues the run in
  // --out with its recorded options (a fixed one given differently is
  // refused) or, when it holds no run yet, starts it (saying so to `note`).
  // Throws Error before anything is written.
  TrainOptions resolve(const std::function<void(const std::string&)>& note = {}) const;
};

}  // namespace gpt2lab
