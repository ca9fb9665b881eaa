// Fuzzes load_model on a checkpoint directory made of two fuzzed files:
// config.json, then (after fuzz::kFileSeparator) model.safetensors. Covers
// config_from_json's validation and the presence/shape checks of every
// tensor against the config. The model is allocated only after the weights
// file proved it holds that many bytes, so a config claiming 2^40 parameters
// must be refused without allocating (libFuzzer's malloc limit enforces it).
#include <cstdint>

#include "fuzz_util.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  const auto [config, weights] = fuzz::split2({reinterpret_cast<const char*>(data), size}, fuzz::kFileSeparator);
  fuzz::put_file("ckpt/config.json", config);
  const auto dir = fuzz::put_file("ckpt/model.safetensors", weights).parent_path();
  try {
    GPT2<float> model = load_model(dir);
    if (model.layout().num_parameters() > size) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
