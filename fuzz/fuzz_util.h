// Shared by the libFuzzer targets: the loaders under test read paths, not
// buffers (they mmap or stat the file, as they would a user's), so each input
// is written to a file in a private temp directory first. /dev/shm keeps that
// in memory; the directory is per process, so parallel fuzzers never collide.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace gpt2lab::fuzz {

namespace fs = std::filesystem;

inline const fs::path& scratch_dir() {
  // Held by a never-destroyed pointer: the atexit clean-up below runs after
  // static destructors would have run, so it must not use a destroyed path.
  static const fs::path* dir = [] {
    std::error_code ec;
    fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string tmpl = (base / "gpt2lab-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    return new fs::path(tmpl);
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code e;
      fs::remove_all(*dir, e);
    });
    return true;
  }();
  (void)cleanup;
  return *dir;
}

// Writes bytes to scratch_dir()/name with plain stdio (not the library's
// atomic writer, which is not what is under test here).
inline fs::path put_file(const std::string& name, std::string_view bytes) {
  const fs::path p = scratch_dir() / name;
  fs::create_directories(p.parent_path());
  FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
  return p;
}

// Splits an input into two parts at its first occurrence of `sep`, so one
// fuzz input can carry two files (config.json + weights, encoder.json +
// vocab.bpe). No separator: everything is the first part.
inline std::pair<std::string_view, std::string_view> split2(std::string_view in, std::string_view sep) {
  const size_t at = in.find(sep);
  if (at == std::string_view::npos) return {in, {}};
  return {in.substr(0, at), in.substr(at + sep.size())};
}

// The separator used by the two-file targets and by make_seeds.
inline constexpr std::string_view kFileSeparator = "\n#=====gpt2lab-next-file=====#\n";

}  // namespace gpt2lab::fuzz
