// Fuzzes the JSON files a user or a crashed run can hand us: a model's
// config.json (config_from_json), a training run's config.json
// (train_options_from_json) and a checkpoint's state.json
// (checkpoint_state_from_json), the last two read by --resume. Each must
// either return a validated value or throw Error -- never another exception
// type, never UB on a number that does not fit (UBSan's float-cast-overflow
// is on).
#include <cstdint>

#include <nlohmann/json.hpp>

#include "gpt2lab/core/error.h"
#include "gpt2lab/model/config.h"
#include "gpt2lab/train/trainer.h"
#include "train/checkpoint_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const ModelConfig c = config_from_json(j, "config.json");
    // A returned config is valid: the invariants the kernels rely on hold.
    if (c.n_embd % c.n_head != 0 || c.vocab_size <= 0 || c.block_size <= 0) __builtin_trap();
    (void)to_json(c).dump();
  } catch (const Error&) {
  }
  try {
    (void)train_options_from_json(j, "run/config.json");
  } catch (const Error&) {
  }
  try {
    // The input's own size stands in for metrics.jsonl's.
    const CheckpointState st = checkpoint_state_from_json(j, size, "state.json");
    if (st.step < 0 || st.adam_t < 0 || st.data_position < 0 || st.metrics_bytes > size) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
