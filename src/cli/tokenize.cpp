// gpt2lab tokenize: text on stdin -> token ids on stdout (or back with
// --decode), for scripting and for checking against other tokenizers.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/output.h"
#include "core/error.h"
#include "core/threads.h"
#include "tokenizer/tokenizer.h"

namespace gpt2lab::cli {
namespace {

std::string read_stdin() {
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) data.append(buf, n);
  if (std::ferror(stdin)) throw Error("cannot read standard input");
  return data;
}

std::vector<int> parse_ids(const std::string& text) {
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
      throw Error("standard input, byte " + std::to_string(i) + ": expected a token id (a "
                  "decimal number), found '" + std::string(1, c) + "'");
    int64_t v = 0;
    const size_t start = i;
    while (i < n && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + (text[i] - '0');
      if (v > INT32_MAX)
        throw Error("standard input, byte " + std::to_string(start) + ": token id too large");
      ++i;
    }
    ids.push_back(static_cast<int>(v));
  }
  return ids;
}

std::string format_ids(const std::vector<int>& ids) {
  std::string out;
  out.reserve(ids.size() * 6 + 1);
  char buf[16];
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) out.push_back(' ');
    unsigned v = static_cast<unsigned>(ids[k]);
    int len = 0;
    do {
      buf[len++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (len) out.push_back(buf[--len]);
  }
  out.push_back('\n');
  return out;
}

void add(CLI::App& app) {
  struct Options {
    std::string tokenizer = "gpt2";
    bool decode = false, allow_special = false;
    int threads = 0;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "tokenize", "Encode stdin to token ids (space-separated) on stdout, or --decode ids back");
  sub->add_option("--tokenizer", o->tokenizer, "\"gpt2\" or a folder with encoder.json + vocab.bpe")
      ->capture_default_str();
  sub->add_flag("--decode", o->decode, "Read token ids, write the raw bytes they stand for");
  sub->add_flag("--allow-special", o->allow_special,
                "Encode <|endoftext|> in the text as the special token (default: as plain text)");
  add_threads_flag(sub, o->threads);
  sub->callback([o] {
    set_threads(o->threads);
    const Tokenizer tok = Tokenizer::resolve(o->tokenizer);
    const std::string in = read_stdin();
    if (o->decode) {
      write_stdout(tok.decode(parse_ids(in)));
    } else {
      write_stdout(format_ids(tok.encode_parallel(in, o->allow_special, num_threads())));
    }
  });
}

GPT2LAB_COMMAND(20, add);

}  // namespace
}  // namespace gpt2lab::cli
