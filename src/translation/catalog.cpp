#include "translation/catalog.h"

#include <charconv>
#include <utility>

#include "core/file.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

// ---------------------------------------------------------------- .mo

constexpr uint64_t kMoHeaderBytes = 28;
constexpr char kContextSeparator = '\x04';  // gettext's msgctxt glue

std::string hex32(uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += kDigits[(v >> shift) & 0xF];
  return s;
}

class MoReader {
 public:
  MoReader(std::string_view bytes, const std::string& where) : bytes_(bytes), where_(where) {}

  std::vector<CatalogEntry> read() {
    read_header();
    // Two passes: every table entry is checked (and the strings' total size
    // bounded) before the first entry is allocated.
    uint64_t total = 0;
    for (uint32_t i = 0; i < count_; ++i)
      total += string_at(originals_, i, "original").size() + string_at(translations_, i, "translation").size();
    check(total <= size(), where_ + ": the .mo string tables' " + std::to_string(count_) + " entries add up to " +
                               std::to_string(total) + " bytes, more than the whole file (" + std::to_string(size()) +
                               " bytes): the entries overlap, so the file is damaged; recompile it with msgfmt");
    std::vector<CatalogEntry> entries;
    entries.reserve(count_);
    for (uint32_t i = 0; i < count_; ++i)
      entries.push_back(decode(string_at(originals_, i, "original"), string_at(translations_, i, "translation")));
    return entries;
  }

 private:
  uint64_t size() const { return bytes_.size(); }

  uint32_t u32(uint64_t offset) const {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data()) + offset;
    if (big_endian_) return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
    return uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0];
  }

  void read_header() {
    check(size() >= kMoHeaderBytes, where_ + ": truncated .mo file: " + std::to_string(size()) +
                                        " bytes, but the header alone is 28; the file is damaged or not a catalog");
    const uint32_t magic = u32(0);
    check(magic == kMoMagic || magic == kMoMagicSwapped,
          where_ + ": not a .mo file: magic number " + hex32(magic) + " at byte 0, expected " + hex32(kMoMagic));
    big_endian_ = magic == kMoMagicSwapped;  // read little-endian above
    const uint32_t revision = u32(4);
    check(revision >> 16 <= 1, where_ + ": unsupported .mo revision " + std::to_string(revision >> 16) + "." +
                                   std::to_string(revision & 0xFFFF) +
                                   " (field 'revision' at byte 4); gettext's format has major revisions 0 and 1");
    count_ = u32(8);
    originals_ = u32(12);
    translations_ = u32(16);
    check_table(originals_, "original", 12);
    check_table(translations_, "translation", 16);
  }

  // N entries of 8 bytes must fit in the file: this bounds N by the file
  // size before anything is allocated.
  void check_table(uint32_t offset, const char* name, int field_byte) const {
    const uint64_t end = uint64_t{offset} + uint64_t{count_} * 8;
    check(offset >= kMoHeaderBytes && end <= size(),
          where_ + ": the " + name + " string table (" + std::to_string(count_) +
              " entries of 8 bytes from byte offset " + std::to_string(offset) + ", given at byte " +
              std::to_string(field_byte) + ") " +
              (offset < kMoHeaderBytes ? "overlaps the 28-byte header"
                                       : "ends at byte " + std::to_string(end) + ", past the end of the file (" +
                                             std::to_string(size()) + " bytes)") +
              ": the file is truncated or damaged (string count " + std::to_string(count_) + " at byte 8)");
  }

  std::string_view string_at(uint32_t table, uint32_t index, const char* name) const {
    const uint64_t entry = uint64_t{table} + uint64_t{index} * 8;
    const uint32_t length = u32(entry), offset = u32(entry + 4);
    check(uint64_t{offset} + length <= size(),
          where_ + ": " + name + " string #" + std::to_string(index) + " (table entry at byte " +
              std::to_string(entry) + ") has " + std::to_string(length) + " bytes at byte offset " +
              std::to_string(offset) + ", past the end of the file (" + std::to_string(size()) +
              " bytes): the file is truncated or damaged");
    return bytes_.substr(offset, length);
  }

  static std::vector<std::string> split_nul(std::string_view s) {
    std::vector<std::string> parts;
    for (;;) {
      const size_t nul = s.find('\0');
      parts.emplace_back(s.substr(0, nul));
      if (nul == std::string_view::npos) return parts;
      s.remove_prefix(nul + 1);
    }
  }

  static CatalogEntry decode(std::string_view original, std::string_view translation) {
    CatalogEntry e;
    if (const size_t sep = original.find(kContextSeparator); sep != std::string_view::npos) {
      e.context = original.substr(0, sep);
      original.remove_prefix(sep + 1);
    }
    const size_t nul = original.find('\0');
    e.msgid = original.substr(0, nul);
    if (nul == std::string_view::npos) {
      e.msgstr.emplace_back(translation);
    } else {
      e.msgid_plural = original.substr(nul + 1);
      e.msgstr = split_nul(translation);
    }
    return e;
  }

  std::string_view bytes_;
  const std::string& where_;
  bool big_endian_ = false;
  uint32_t count_ = 0, originals_ = 0, translations_ = 0;
};

// ---------------------------------------------------------------- .po

constexpr std::string_view kBom = "\xEF\xBB\xBF";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One entry as it is read: which keywords it has had, for the order checks.
struct PoEntryInProgress {
  CatalogEntry entry;
  int first_line = 0, id_line = 0;
  bool has_context = false, has_id = false, has_plural = false, has_str = false;
};

class PoParser {
 public:
  explicit PoParser(const std::string& where) : where_(where) {}

  std::vector<CatalogEntry> parse(std::string_view text) {
    if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
    while (!text.empty()) {
      ++line_;
      const size_t nl = text.find('\n');
      const std::string_view raw = text.substr(0, nl);
      if (const size_t nul = raw.find('\0'); nul != std::string_view::npos)
        fail("a NUL byte (column " + std::to_string(nul + 1) + "): this is a binary file, not .po text");
      parse_line(trim(raw));
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    }
    if (cur_.has_str) {
      finish();
    } else if (cur_.has_id || cur_.has_context) {
      fail("the file ends inside the entry that starts on line " + std::to_string(cur_.first_line) +
           ": it has no msgstr");
    }
    return std::move(entries_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_ + ":" + std::to_string(line_) + ": " + what);
  }

  void parse_line(std::string_view s) {
    if (s.empty()) return;
    if (s.starts_with("#~")) {
      s = trim(s.substr(2));
      if (s.empty() || s.front() == '|') return;  // "#~|": previous msgid of an obsolete entry
      statement(s, /*obsolete=*/true);
    } else if (s.front() == '#') {
      comment(s);
    } else {
      statement(s, /*obsolete=*/false);
    }
  }

  // A comment ends a complete entry; a flags comment marks the next one.
  void comment(std::string_view s) {
    if (cur_.has_str) finish();
    last_ = nullptr;
    if (!s.starts_with("#,")) return;
    s.remove_prefix(2);
    while (!s.empty()) {
      const size_t comma = s.find(',');
      if (trim(s.substr(0, comma)) == "fuzzy") cur_.entry.fuzzy = true;
      s.remove_prefix(comma == std::string_view::npos ? s.size() : comma + 1);
    }
  }

  void statement(std::string_view s, bool obsolete) {
    if (s.front() == '"') {
      if (last_ == nullptr) fail("a string with no keyword before it (or after a comment)");
      *last_ += unquote(s);
      return;
    }
    size_t k = 0;
    while (k < s.size() && !is_space(s[k]) && s[k] != '"') ++k;
    const std::string_view keyword = s.substr(0, k);
    const std::string_view rest = trim(s.substr(k));
    if (keyword == "msgctxt") {
      on_context(rest, obsolete);
    } else if (keyword == "msgid") {
      on_id(rest, obsolete);
    } else if (keyword == "msgid_plural") {
      on_plural(rest);
    } else if (keyword == "msgstr") {
      on_str(rest);
    } else if (keyword.starts_with("msgstr[") && keyword.ends_with("]")) {
      on_str_form(keyword.substr(7, keyword.size() - 8), rest);
    } else {
      fail("unknown keyword '" + std::string(keyword.substr(0, 40)) +
           "': a .po line is msgctxt, msgid, msgid_plural, msgstr, msgstr[N] followed by a quoted string, "
           "a quoted string continuing the one before, a # comment or blank");
    }
  }

  void start(bool obsolete) {
    if (cur_.has_str) finish();
    if (cur_.first_line == 0) cur_.first_line = line_;
    cur_.entry.obsolete = cur_.entry.obsolete || obsolete;
  }

  void on_context(std::string_view rest, bool obsolete) {
    start(obsolete);
    if (cur_.has_id) fail("msgctxt after the msgid of line " + std::to_string(cur_.id_line) + ", which has no msgstr");
    if (cur_.has_context) fail("a second msgctxt (the entry of line " + std::to_string(cur_.first_line) + ")");
    cur_.has_context = true;
    set(cur_.entry.context, rest, "msgctxt");
  }

  void on_id(std::string_view rest, bool obsolete) {
    start(obsolete);
    if (cur_.has_id) fail("msgid, but the msgid of line " + std::to_string(cur_.id_line) + " has no msgstr");
    cur_.has_id = true;
    cur_.id_line = line_;
    set(cur_.entry.msgid, rest, "msgid");
  }

  void on_plural(std::string_view rest) {
    if (!cur_.has_id || cur_.has_str) fail("msgid_plural must follow a msgid, before its msgstr");
    if (cur_.has_plural) fail("a second msgid_plural for the msgid of line " + std::to_string(cur_.id_line));
    cur_.has_plural = true;
    set(cur_.entry.msgid_plural, rest, "msgid_plural");
  }

  void on_str(std::string_view rest) {
    if (!cur_.has_id) fail("msgstr without a msgid before it");
    if (cur_.has_plural)
      fail("the entry has a msgid_plural, so its translations are msgstr[0], msgstr[1], ..., not msgstr");
    if (cur_.has_str) fail("a second msgstr for the msgid of line " + std::to_string(cur_.id_line));
    cur_.has_str = true;
    set(cur_.entry.msgstr.emplace_back(), rest, "msgstr");
  }

  void on_str_form(std::string_view index_text, std::string_view rest) {
    const std::string keyword = "msgstr[" + std::string(index_text.substr(0, 20)) + "]";
    if (!cur_.has_id) fail(keyword + " without a msgid before it");
    if (!cur_.has_plural) fail(keyword + " in an entry without msgid_plural: use msgstr");
    size_t index = 0;
    const auto [end, ec] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    if (ec != std::errc{} || end != index_text.data() + index_text.size()) fail("bad plural index in " + keyword);
    auto& forms = cur_.entry.msgstr;
    if (index != forms.size())
      fail(keyword + " out of order: the plural forms are numbered 0, 1, ... and msgstr[" +
           std::to_string(forms.size()) + "] comes next");
    cur_.has_str = true;
    set(forms.emplace_back(), rest, keyword);
  }

  void set(std::string& field, std::string_view rest, const std::string& keyword) {
    if (rest.empty() || rest.front() != '"') fail(keyword + " needs a quoted string after it");
    field = unquote(rest);
    last_ = &field;
  }

  void finish() {
    entries_.push_back(std::move(cur_.entry));
    cur_ = {};
    last_ = nullptr;
  }

  // s starts with '"' and has no surrounding spaces.
  std::string unquote(std::string_view s) const {
    std::string out;
    size_t i = 1;
    for (;;) {
      if (i >= s.size()) fail("unterminated string: no closing \" on this line");
      const char c = s[i++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail("unterminated string: it ends in a backslash");
      out += unescape(s, i);
    }
    if (i != s.size()) fail("text after the closing quote: '" + std::string(s.substr(i, 40)) + "'");
    return out;
  }

  // The escape after a backslash at s[i]; advances i past it.
  char unescape(std::string_view s, size_t& i) const {
    const char c = s[i++];
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'a': return '\a';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'v': return '\v';
      case '"':
      case '\\': return c;
      default: break;
    }
    int value = 0;
    if (c >= '0' && c <= '7') {
      value = c - '0';
      for (int n = 1; n < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++n) value = value * 8 + (s[i++] - '0');
      if (value > 0xFF) fail("octal escape above \\377 (one byte): \\" + std::string(s.substr(i - 3, 3)));
      return static_cast<char>(value);
    }
    if (c == 'x') {
      const size_t first = i;
      while (i < s.size() && hex_value(s[i]) >= 0 && value <= 0xFF) value = value * 16 + hex_value(s[i++]);
      if (i == first) fail("\\x without hex digits after it");
      if (value > 0xFF) fail("hex escape above \\xff (one byte): \\x" + std::string(s.substr(first, i - first)));
      return static_cast<char>(value);
    }
    fail(std::string("bad escape '\\") + c + "': a .po string has the escapes \\n \\t \\r \\a \\b \\f \\v \\\" \\\\, " +
         "octal \\ooo and hex \\xHH (as GNU gettext)");
  }

  const std::string& where_;
  int line_ = 0;
  PoEntryInProgress cur_;
  std::string* last_ = nullptr;  // the string a continuation line appends to
  std::vector<CatalogEntry> entries_;
};

bool starts_with_mo_magic(std::string_view bytes) {
  if (bytes.size() < 4) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint32_t le = uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0];
  return le == kMoMagic || le == kMoMagicSwapped;
}

}  // namespace

std::vector<CatalogEntry> parse_mo(std::string_view bytes, const std::string& where) {
  return MoReader(bytes, where).read();
}

std::vector<CatalogEntry> read_mo(const fs::path& path) {
  return parse_mo(read_file(path, kMaxCatalogBytes), path.string());
}

std::vector<CatalogEntry> parse_po(std::string_view text, const std::string& where) {
  return PoParser(where).parse(text);
}

std::vector<CatalogEntry> read_catalog(const fs::path& path) {
  const std::string bytes = read_file(path, kMaxCatalogBytes);
  if (starts_with_mo_magic(bytes)) return parse_mo(bytes, path.string());
  try {
    return parse_po(bytes, path.string());
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (" + path.string() + " does not start with the .mo magic number " +
                hex32(kMoMagic) + " in either byte order, so it was read as .po text; give a gettext .mo or .po)");
  }
}

}  // namespace gpt2lab
