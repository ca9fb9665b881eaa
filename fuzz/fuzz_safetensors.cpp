// Fuzzes the safetensors reader: header length, JSON header, tensor table
// (dtypes, shapes, data_offsets), then reads every tensor it accepted, so an
// entry that passed validation but points outside the mapping is caught by
// ASan. A header that claims a huge tensor must be refused before any
// allocation (libFuzzer's -malloc_limit_mb turns a big allocation into a
// failure).
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "gpt2lab/core/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  const auto path = fuzz::put_file("model.safetensors", {reinterpret_cast<const char*>(data), size});
  try {
    SafetensorsFile f = SafetensorsFile::open(path);
    std::vector<float> buf;
    for (const auto& [name, entry] : f.tensors()) {
      // Accepted entries lie inside the file, so numel is bounded by size.
      if (entry.numel() > size) __builtin_trap();
      buf.resize(entry.numel());
      f.read_f32(name, buf.data());
    }
  } catch (const Error&) {
    // Refused with a message: the expected outcome for bad input.
  }
  return 0;
}
