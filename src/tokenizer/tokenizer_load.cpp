// Loading a tokenizer: encoder.json + vocab.bpe (GPT-2's files, or ours)
// read and validated before the tables are built (tokenizer.cpp encodes).
#include "gpt2lab/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/data_dir.h"
#include "core/file.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer_impl.h"

namespace gpt2lab {

using tokenizer::spelling_to_bytes;

// ---------------------------------------------------------------- loading

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

namespace {

std::string shown(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return "\"" + out + "\"";
}

// A byte-level BPE tokenizes like the one it claims to be only if its merges
// are whole: each merge makes a token of the vocabulary, and each multi-byte
// token is made by a merge (a truncated vocab.bpe leaves tokens no merge can
// reach, and the text then splits into other tokens without any error).
void validate_vocabulary(const Tokenizer::Impl& impl, const std::vector<std::pair<std::string, std::string>>& merges) {
  // (Every byte being a token is checked by build_piece_table.)
  const std::string& name = impl.name;
  std::vector<int> made_by(impl.tokens.size(), -1);
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string joined = merges[r].first + merges[r].second;
    const int id = impl.find_piece(joined);
    if (id < 0)
      throw Error("vocabulary of '" + name + "': merge " + std::to_string(r + 1) + " makes " + shown(joined) +
                  ", which is no token (vocab.bpe and encoder.json do not belong together?)");
    if (made_by[id] >= 0)
      throw Error("vocabulary of '" + name + "': merge " + std::to_string(r + 1) + " repeats merge " +
                  std::to_string(made_by[id] + 1) + " (both make " + shown(joined) + ")");
    made_by[id] = static_cast<int>(r);
  }
  for (size_t id = 0; id < impl.tokens.size(); ++id) {
    const std::string& t = impl.tokens[id];
    if (t.size() > 1 && static_cast<int>(id) != impl.eot && made_by[id] < 0)
      throw Error("vocabulary of '" + name + "': token " + std::to_string(id) + " " + shown(t) +
                  " is made by no merge (is vocab.bpe truncated? it has " + std::to_string(merges.size()) +
                  " merges); text would tokenize differently from the tokenizer these files came from");
  }
}

}  // namespace

Tokenizer Tokenizer::from_vocab(std::vector<std::string> tokens,
                                const std::vector<std::pair<std::string, std::string>>& merges, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(name);
  impl->tokens = std::move(tokens);
  for (int id = 0; id < static_cast<int>(impl->tokens.size()); ++id)
    if (impl->tokens[id] == kEndOfText) impl->eot = id;
  check(impl->eot >= 0, "vocabulary of '" + impl->name + "' has no " + std::string(kEndOfText) + " token");
  impl->build_piece_table();
  for (size_t r = 0; r < merges.size(); ++r) {
    const int a = impl->find_piece(merges[r].first), b = impl->find_piece(merges[r].second);
    if (a < 0 || b < 0)
      throw Error("vocabulary of '" + impl->name + "': merge " + std::to_string(r + 1) +
                  " names a part that is no token");
    impl->merges.push_back({a, b});
  }
  validate_vocabulary(*impl, merges);
  impl->build_pair_table();
  return Tokenizer(std::move(impl));
}

namespace {

// encoder.json is one flat object {"spelling": id, ...}; a SAX pass avoids
// building a 50k-entry DOM, a large share of loading the tokenizer
// (docs/performance.md).
class EncoderJsonReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit EncoderJsonReader(const fs::path& path) : path_(path) {}
  std::vector<std::pair<std::string, int64_t>> entries;

  bool null() override { return fail("null"); }
  bool boolean(bool) override { return fail("a boolean"); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return value(static_cast<int64_t>(std::min<number_unsigned_t>(v, INT64_MAX)));
  }
  bool number_float(number_float_t, const string_t&) override { return fail("a fraction"); }
  bool string(string_t&) override { return fail("a string"); }
  bool binary(binary_t&) override { return fail("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_++ != 0) return fail("an object");
    return true;
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return fail("an array"); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(path_.string() + ": invalid JSON at byte " + std::to_string(position) + " (" + json_error_text(e) +
                ")");
  }

 private:
  bool value(int64_t v) {
    if (depth_ != 1) return fail("a number outside the object");
    entries.emplace_back(std::move(key_), v);
    return true;
  }
  bool fail(const std::string& what) {
    throw Error(path_.string() + ": expected one object mapping token spellings to ids, found " + what +
                (key_.empty() ? "" : " (at key \"" + key_ + "\")"));
  }
  fs::path path_;
  std::string key_;
  int depth_ = 0;
};

}  // namespace

std::pair<fs::path, fs::path> Tokenizer::files(const fs::path& dir) {
  std::error_code ec;
  // Hugging Face's names for the same two files (a checkpoint, an HF model).
  if (!fs::exists(dir / "encoder.json", ec) && fs::exists(dir / "vocab.json", ec))
    return {dir / "vocab.json", dir / "merges.txt"};
  return {dir / "encoder.json", dir / "vocab.bpe"};
}

Tokenizer Tokenizer::load(const fs::path& dir) {
  const auto [encoder_path, merges_path] = files(dir);
  for (const auto& p : {encoder_path, merges_path})
    if (!fs::exists(p))
      throw Error("tokenizer folder '" + dir.string() + "' has no " + p.filename().string() +
                  " (a tokenizer is a folder with encoder.json and vocab.bpe, as written by "
                  "`gpt2lab tokenizer train`, or Hugging Face's vocab.json and merges.txt)");
  const std::string json = read_file(encoder_path, kMaxTextFileBytes);
  EncoderJsonReader reader(encoder_path);
  nlohmann::json::sax_parse(json, &reader);
  check(!reader.entries.empty(), encoder_path.string() + ": no tokens");
  const int64_t n = static_cast<int64_t>(reader.entries.size());
  std::vector<std::string> tokens(n);
  std::vector<bool> seen(n, false);
  for (const auto& [spelling, id] : reader.entries) {
    if (id < 0 || id >= n)
      throw Error(encoder_path.string() + ": token \"" + spelling + "\" has id " + std::to_string(id) +
                  "; ids must be 0.." + std::to_string(n - 1) + ", each once");
    if (seen[id])
      throw Error(encoder_path.string() + ": id " + std::to_string(id) + " is used twice (second time for \"" +
                  spelling + "\")");
    seen[id] = true;
    if (spelling == kEndOfText) {
      tokens[id] = spelling;
      continue;
    }
    auto bytes = spelling_to_bytes(spelling);
    if (!bytes || bytes->empty())
      throw Error(encoder_path.string() + ": token \"" + spelling + "\" (id " + std::to_string(id) +
                  ") is not in GPT-2's byte-to-character spelling");
    tokens[id] = std::move(*bytes);
  }

  const std::string bpe = read_file(merges_path, kMaxTextFileBytes);
  std::vector<std::pair<std::string, std::string>> merges;
  // A UTF-8 byte order mark (editors add one) is skipped, as in encoder.json.
  size_t pos = bpe.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  int line_no = 0;
  while (pos < bpe.size()) {
    size_t end = bpe.find('\n', pos);
    if (end == std::string::npos) end = bpe.size();
    std::string_view line(bpe.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    const size_t space = line.find(' ');
    auto a = space == std::string_view::npos ? std::nullopt : spelling_to_bytes(line.substr(0, space));
    auto b = space == std::string_view::npos ? std::nullopt : spelling_to_bytes(line.substr(space + 1));
    if (!a || !b || a->empty() || b->empty())
      throw Error(merges_path.string() + ":" + std::to_string(line_no) +
                  ": expected two token spellings separated by one space, found " + shown(line));
    merges.emplace_back(std::move(*a), std::move(*b));
  }
  std::string name = fs::weakly_canonical(dir).filename().string();
  if (name.empty()) name = dir.string();
  try {
    return from_vocab(std::move(tokens), merges, name);
  } catch (const Error& e) {
    // Named once, by its path: from_vocab says "vocabulary of 'NAME'".
    std::string msg = e.what();
    const std::string prefix = "vocabulary of '" + name + "'";
    if (msg.rfind(prefix, 0) == 0)
      msg.erase(0, prefix.size());
    else
      msg = ": " + msg;
    throw Error("tokenizer '" + dir.string() + "'" + msg);
  }
}

fs::path Tokenizer::resolve_path(const std::string& spec) {
  if (spec == "gpt2") {
    // data/gpt2 ($GPT2LAB_DATA or the working directory's), then the copy an
    // installed package ships.
    const fs::path dir = data_directory() / "gpt2";
    auto has_files = [](const fs::path& d) { return fs::exists(d / "encoder.json") && fs::exists(d / "vocab.bpe"); };
    if (has_files(dir)) return dir;
    const auto share = installed_share_dir();
    if (share && has_files(*share / "data" / "gpt2")) return *share / "data" / "gpt2";
    throw Error("GPT-2's tokenizer files (encoder.json, vocab.bpe) are not in '" + dir.string() + "' (" +
                data_directory_origin() + ")" + (share ? " nor in '" + (*share / "data" / "gpt2").string() + "'" : "") +
                ": set " + std::string(kDataEnvVar) +
                " to the data folder that holds gpt2/ (scripts/setup.sh or scripts/fetch_data.sh fill the source "
                "tree's data/), or run from the folder that holds data/gpt2");
  }
  return spec;
}

Tokenizer Tokenizer::resolve(const std::string& spec) {
  Tokenizer t = load(resolve_path(spec));
  if (spec == "gpt2") t.impl_->name = "gpt2";
  return t;
}

}  // namespace gpt2lab
