#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {
// Real headers are a few hundred KB at most (gpt2-xl: ~60 KB).
constexpr uint64_t kMaxHeader = 100ull << 20;
}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
  }
  return "?";
}

size_t dtype_size(DType d) { return d == DType::f32 ? 4 : 2; }

size_t SafeTensorEntry::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      u = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept { *this = std::move(o); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
    path_ = std::move(o.path_);
    map_ = o.map_;
    map_size_ = o.map_size_;
    data_ = o.data_;
    tensors_ = std::move(o.tensors_);
    metadata_ = std::move(o.metadata_);
    o.map_ = nullptr;
    o.map_size_ = 0;
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
}

namespace {

// One tensor's entry of the header, checked against the data section.
SafeTensorEntry parse_entry(const nlohmann::json& v, const std::string& at, uint64_t data_size) {
  check(v.is_object(), at + " must be an object");
  auto dt = v.find("dtype");
  check(dt != v.end() && dt->is_string(), at + ": missing string field 'dtype'");
  SafeTensorEntry e{};
  const std::string d = dt->get<std::string>();
  if (d == "F32")
    e.dtype = DType::f32;
  else if (d == "F16")
    e.dtype = DType::f16;
  else if (d == "BF16")
    e.dtype = DType::bf16;
  else
    throw Error(at + ": dtype '" + d + "' is not supported (F32, F16, BF16)");
  auto sh = v.find("shape");
  check(sh != v.end() && sh->is_array() && sh->size() <= 8,
        at + ": field 'shape' must be an array of at most 8 dimensions");
  // Multiply with an overflow guard: a hostile header can claim 2^62 elements.
  unsigned __int128 numel = 1;
  for (const auto& dim : *sh) {
    check(dim.is_number_integer() && dim.get<int64_t>() >= 0, at + ": shape entries must be non-negative integers");
    e.shape.push_back(dim.get<int64_t>());
    numel *= static_cast<uint64_t>(dim.get<int64_t>());
    check(numel < (static_cast<unsigned __int128>(1) << 62), at + ": shape is too large");
  }
  auto off = v.find("data_offsets");
  check(off != v.end() && off->is_array() && off->size() == 2 && (*off)[0].is_number_unsigned() &&
            (*off)[1].is_number_unsigned(),
        at + ": field 'data_offsets' must be [begin, end] with non-negative integers");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  check(e.begin <= e.end, at + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                              "] are reversed (begin after end)");
  check(e.end <= data_size, at + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                                ") fall outside the " + std::to_string(data_size) +
                                "-byte data section (truncated file?)");
  check(static_cast<unsigned __int128>(e.end - e.begin) == numel * dtype_size(e.dtype),
        at + ": " + std::to_string(e.end - e.begin) + " bytes do not match its shape and dtype " + d);
  return e;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const fs::path& path) {
  const std::string where = path.string();
  // Refuses a FIFO or device before it can block or be mapped.
  const OpenedFile opened = open_regular_file(path);
  const int fd = opened.fd;
  const uint64_t size = opened.size;
  if (size < 8) {
    ::close(fd);
    throw Error(where + ": file is " + std::to_string(size) +
                " bytes, too short for a safetensors header (truncated?)");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw Error("cannot map '" + where + "': " + std::strerror(errno));
  SafetensorsFile f;
  f.path_ = path;
  f.map_ = static_cast<const uint8_t*>(m);
  f.map_size_ = size;

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | f.map_[i];
  check(header_len <= kMaxHeader, where + ": header length " + std::to_string(header_len) +
                                      " (offset 0) exceeds the 100 MiB limit: not a safetensors file?");
  check(header_len <= size - 8, where + ": header length " + std::to_string(header_len) + " runs past the end of the " +
                                    std::to_string(size) + "-byte file (truncated?)");
  const nlohmann::json header = parse_json(
      std::string_view(reinterpret_cast<const char*>(f.map_ + 8), static_cast<size_t>(header_len)), where + ": header");
  check(header.is_object(), where + ": header must be a JSON object");
  f.data_ = f.map_ + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      check(it->is_object(), where + ": __metadata__ must be an object of strings");
      for (auto m2 = it->begin(); m2 != it->end(); ++m2) {
        check(m2->is_string(), where + ": __metadata__." + m2.key() + " must be a string");
        f.metadata_[m2.key()] = m2->get<std::string>();
      }
      continue;
    }
    SafeTensorEntry e = parse_entry(*it, where + ": tensor '" + name + "'", data_size);
    ranges.emplace_back(e.begin, e.end);
    f.tensors_.emplace(name, std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    check(ranges[i].first >= ranges[i - 1].second,
          where + ": tensors overlap at data offset " + std::to_string(ranges[i].first));
  return f;
}

const SafeTensorEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void SafetensorsFile::read_f32(const std::string& name, float* dst) const {
  const SafeTensorEntry* e = find(name);
  check(e != nullptr, path_.string() + ": no tensor named '" + name + "'");
  const uint8_t* src = data_ + e->begin;
  const size_t n = e->numel();
  switch (e->dtype) {
    case DType::f32: std::memcpy(dst, src, n * 4); break;
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      break;
    case DType::f16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      break;
  }
}

void write_safetensors(const fs::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Data goes in name order, the same order nlohmann::json gives the keys.
  std::vector<const TensorToWrite*> order;
  order.reserve(tensors.size());
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorToWrite* a, const TensorToWrite* b) { return a->name < b->name; });
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto* t : order) {
    size_t n = 1;
    for (int64_t d : t->shape) n *= static_cast<size_t>(d);
    header[t->name] = {{"dtype", "F32"}, {"shape", t->shape}, {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned (as HF does).
  while ((text.size() + 8) % 8 != 0) text.push_back(' ');
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  AtomicFileWriter w(path);
  w.write(len, 8);
  w.write(text.data(), text.size());
  for (const auto* t : order) {
    size_t numel = 1;
    for (int64_t d : t->shape) numel *= static_cast<size_t>(d);
    w.write(t->data, numel * 4);
  }
  w.commit();
}

}  // namespace gpt2lab
