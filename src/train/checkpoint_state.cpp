#include "train/checkpoint_state.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/json.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

nlohmann::json to_json(const CheckpointState& s, uint64_t seed) {
  nlohmann::json j = {{"step", s.step},
                      {"adam_t", s.adam_t},
                      {"data_position", s.data_position},
                      {"metrics_bytes", s.metrics_bytes},
                      {"seed", seed},
                      {"run_config", s.run_config}};
  if (!s.metrics_sha256.empty()) j["metrics_sha256"] = s.metrics_sha256;
  auto recorded = [](double x) { return std::isfinite(x) && x >= 0; };
  if (recorded(s.last_loss)) j["last_loss"] = s.last_loss;
  if (recorded(s.elapsed_s) && s.elapsed_s > 0) j["elapsed_s"] = s.elapsed_s;
  if (s.final) {
    j["final"] = true;
    if (recorded(s.val_loss)) j["val_loss"] = s.val_loss;
  }
  return j;
}

CheckpointState checkpoint_state_from_json(const nlohmann::json& j, uint64_t metrics_size, const std::string& where,
                                           const std::string& metrics_where) {
  check(j.is_object(), where + ": expected a JSON object");
  auto field = [&](const char* key, int64_t max) { return json_int(j, key, where, 0, max); };
  CheckpointState s;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 4;
  s.step = static_cast<long>(field("step", std::numeric_limits<long>::max() / 4));
  s.adam_t = field("adam_t", kMax);
  s.data_position = field("data_position", kMax);
  s.metrics_bytes = static_cast<size_t>(field("metrics_bytes", kMax));
  // Optional (checkpoints written before they existed lack them).
  auto loss = [&](const char* key) {
    return json_real(j, key, where, 0, std::numeric_limits<double>::max()).value_or(-1.0);
  };
  s.last_loss = loss("last_loss");
  s.elapsed_s = std::max(loss("elapsed_s"), 0.0);
  s.val_loss = loss("val_loss");
  if (auto it = j.find("final"); it != j.end()) {
    check(it->is_boolean(), where + ": field 'final' must be true or false");
    s.final = it->get<bool>();
  }
  if (auto it = j.find("seed"); it != j.end()) {
    check(it->is_number_integer(), where + ": field 'seed' must be an integer");
    if (!it->is_number_unsigned() || it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
      s.seed = it->get<int64_t>();
  }
  if (auto it = j.find("metrics_sha256"); it != j.end()) {
    const bool hex = it->is_string() && it->get_ref<const std::string&>().size() == 64 &&
                     it->get_ref<const std::string&>().find_first_not_of("0123456789abcdef") == std::string::npos;
    check(hex, where + ": field 'metrics_sha256' must be 64 lowercase hex digits");
    s.metrics_sha256 = it->get<std::string>();
  }
  if (auto it = j.find("run_config"); it != j.end()) {
    check(it->is_object(), where + ": field 'run_config' must be an object");
    s.run_config = *it;
  }
  check(s.metrics_bytes <= metrics_size, where + ": field 'metrics_bytes' = " + std::to_string(s.metrics_bytes) +
                                             " but " + metrics_where + " has " + std::to_string(metrics_size) +
                                             " bytes (was metrics.jsonl replaced?)");
  return s;
}

}  // namespace gpt2lab
