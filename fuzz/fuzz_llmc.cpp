// Fuzzes the llm.c model file loader: the 256-int header (magic, version,
// sizes, padded vocab) and the blob size it implies. The file size is
// compared with the header's claim before the model is allocated.
#include <cstdint>

#include "fuzz_util.h"
#include "gpt2lab/core/error.h"
#include "io/llmc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  const auto path = fuzz::put_file("model.bin", {reinterpret_cast<const char*>(data), size});
  (void)is_llmc_file(path);
  try {
    GPT2<float> model = load_llmc(path);
    if (model.layout().num_parameters() > size) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
