// gpt2lab tokenize: text on stdin (or in files, one line of ids per file)
// -> token ids on stdout (or back with --decode), for scripting and for
// checking against other tokenizers.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "cli/output.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/stream_encoder.h"

namespace gpt2lab::cli::tokenize_command {
namespace {

// One input: standard input or a file, named in messages.
struct Input {
  std::FILE* file;
  std::string name;
};

// Reads `in` in blocks, handing each to `take`.
template <class F>
void read_input(const Input& in, F&& take) {
  std::string buf(1 << 20, '\0');
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), in.file)) > 0) take(std::string_view(buf.data(), n));
  if (std::ferror(in.file)) throw Error("cannot read " + in.name);
}

// `offset`: where `text` starts in the input, for messages.
std::vector<int> parse_ids(std::string_view text, size_t offset, const std::string& name) {
  std::vector<int> ids;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ',') {
      ++i;
      continue;
    }
    if (c < '0' || c > '9')
      throw Error(name + ", byte " + std::to_string(offset + i) +
                  ": expected a token id (a "
                  "decimal number), found '" +
                  std::string(1, c) + "'");
    int64_t v = 0;
    const size_t start = i;
    while (i < n && text[i] >= '0' && text[i] <= '9') ++i;
    // Shown as written: converted, 2^63 + 5 would wrap to a negative id.
    const std::string_view digits = text.substr(start, i - start);
    for (const char d : digits) {
      v = v * 10 + (d - '0');
      if (v > INT32_MAX)
        throw Error(name + ", byte " + std::to_string(offset + start) + ": token id " + std::string(digits) +
                    " is too large (ids are below the vocabulary size)");
    }
    ids.push_back(static_cast<int>(v));
  }
  return ids;
}

// Ids separated by spaces; `first` says whether any were written before.
std::string format_ids(const std::vector<int>& ids, bool first) {
  std::string out;
  out.reserve(ids.size() * 6 + 1);
  char buf[16];
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k || !first) out.push_back(' ');
    unsigned v = static_cast<unsigned>(ids[k]);
    int len = 0;
    do {
      buf[len++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (len) out.push_back(buf[--len]);
  }
  return out;
}

// --decode, streamed: ids are parsed up to the last separator of what has
// arrived; the bytes they decode to are written at once (raw bytes
// concatenate exactly, whatever a token boundary cuts).
void decode_stream(const Tokenizer& tok, const Input& in) {
  std::string pending;
  size_t offset = 0, ids_before = 0;
  auto flush_through = [&](size_t end) {
    const std::vector<int> ids = parse_ids(std::string_view(pending).substr(0, end), offset, in.name);
    for (size_t i = 0; i < ids.size(); ++i)  // positions count from the start of the input
      check(ids[i] < tok.vocab_size(), in.name + ": token id " + std::to_string(ids[i]) + " at position " +
                                           std::to_string(ids_before + i) + " is outside the vocabulary of " +
                                           std::to_string(tok.vocab_size()) + " tokens");
    write_stdout(tok.decode(ids));
    ids_before += ids.size();
    offset += end;
    pending.erase(0, end);
  };
  read_input(in, [&](std::string_view block) {
    pending.append(block);
    const size_t sep = pending.find_last_of(" \n\t\r,");
    if (sep != std::string::npos) flush_through(sep + 1);
  });
  flush_through(pending.size());
}

// Encoding, streamed with exact cuts (tokenizer/stream_encoder.h).
void encode_stream(const Tokenizer& tok, bool allow_special, size_t chunk, const Input& in) {
  StreamEncoder enc(tok, allow_special, num_threads(), chunk);
  std::vector<int> ids;
  bool first = true;
  auto emit = [&] {
    if (ids.empty()) return;
    write_stdout(format_ids(ids, first));
    first = false;
    ids.clear();
  };
  read_input(in, [&](std::string_view block) {
    enc.push(block, ids);
    emit();
  });
  enc.finish(ids);
  emit();
  write_stdout("\n");
}

// Every file must be there before anything is written: a typo in the last
// name should not cost the output of the others.
void check_readable(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    std::error_code ec;
    check(!std::filesystem::is_directory(f, ec), "tokenize: " + f + " is a folder, not a file");
    std::FILE* probe = std::fopen(f.c_str(), "rb");
    if (!probe) throw Error("tokenize: cannot open " + f + ": " + std::strerror(errno));
    std::fclose(probe);
  }
}

// Each file in turn, or standard input when there are none. Encoding ends
// each file's ids with a line break: one line per file; decoding writes the
// files' bytes one after another.
template <class F>
void each_input(const std::vector<std::string>& files, F&& run) {
  if (files.empty()) return run(Input{stdin, "standard input"});
  check_readable(files);
  for (const std::string& f : files) {
    std::FILE* file = std::fopen(f.c_str(), "rb");
    if (!file) throw Error("tokenize: cannot open " + f + ": " + std::strerror(errno));
    try {
      run(Input{file, f});
    } catch (...) {
      std::fclose(file);
      throw;
    }
    std::fclose(file);
  }
}

void add(CLI::App& app) {
  struct Options {
    std::vector<std::string> files;
    std::string tokenizer = "gpt2";
    bool decode = false, allow_special = false;
    int threads = 0;
    size_t chunk = size_t{8} << 20;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("tokenize",
                                 "Encode stdin (or files, one line each) to token ids on stdout, or --decode ids back");
  sub->add_option("--tokenizer", o->tokenizer, "\"gpt2\" or a folder with encoder.json + vocab.bpe")
      ->capture_default_str();
  sub->add_flag("--decode", o->decode, "Read token ids, write the raw bytes they stand for");
  sub->add_flag("--allow-special", o->allow_special,
                "Encode <|endoftext|> in the text as the special token (default: as plain text)");
  sub->add_option("--chunk-bytes", o->chunk, "Testing aid: text held before an exact cut is sought")
      ->check(CLI::Range(size_t{64}, size_t{1} << 34))
      ->group("");
  add_threads_flag(sub, o->threads);
  sub->add_option("files", o->files, "Files to read instead of stdin; encoding writes one line of ids per file");
  sub->callback([o] {
    set_threads(o->threads);
    const Tokenizer tok = Tokenizer::resolve(o->tokenizer);
    each_input(o->files, [&](const Input& in) {
      if (o->decode)
        decode_stream(tok, in);
      else
        encode_stream(tok, o->allow_special, o->chunk, in);
    });
  });
}

GPT2LAB_COMMAND(20, add);

}  // namespace
}  // namespace gpt2lab::cli::tokenize_command
