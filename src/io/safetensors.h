// Reading and writing the safetensors format (Hugging Face):
//   u64 little-endian header length N | N bytes of JSON | raw tensor data.
// The JSON maps tensor names to {dtype, shape, data_offsets: [begin, end)}
// relative to the data section, plus an optional "__metadata__" string map.
//
// The reader validates everything before a byte of tensor data is touched:
// header length against the file size, JSON shape, dtypes, that every shape's
// element count matches its byte range, and that ranges stay inside the file
// and do not overlap. Files are memory-mapped, so a 6 GB model is not copied.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

enum class DType { f32, f16, bf16 };
const char* dtype_name(DType d);
size_t dtype_size(DType d);

struct SafeTensorEntry {
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // byte range within the data section
  size_t numel() const;
};

class SafetensorsFile {
 public:
  static SafetensorsFile open(const fs::path& path);  // throws Error
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const fs::path& path() const { return path_; }
  const std::map<std::string, SafeTensorEntry>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafeTensorEntry* find(const std::string& name) const;
  // Converts the tensor to float32 into dst (numel elements).
  void read_f32(const std::string& name, float* dst) const;
  const uint8_t* raw(const SafeTensorEntry& e) const { return data_ + e.begin; }

 private:
  SafetensorsFile() = default;
  fs::path path_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  std::map<std::string, SafeTensorEntry> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  const float* data;  // numel floats
};

// Writes float32 tensors atomically. The output is a pure function of the
// inputs (sorted keys, fixed padding), so saving the same model twice gives
// byte-identical files.
void write_safetensors(const fs::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata);

// bf16/f16 <-> f32 conversions used by loaders (round-to-nearest-even).
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float f16_to_f32(uint16_t h);

}  // namespace gpt2lab
