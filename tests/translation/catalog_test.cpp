// gettext catalogs: .po text (plural forms, fuzzy and obsolete entries,
// escapes, multi-line strings, msgctxt, CRLF, BOM, malformed input) and .mo
// files built byte by byte in both byte orders, damaged ones included, which
// must be refused with the file, table index and byte offset named and
// without allocating what they claim. Where msgfmt is installed, a .po it
// compiles must read back as the same entries.
#include "translation/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "../alloc_watch.h"
#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "test_util.h"

namespace gpt2lab {
namespace {

using testing::expect_refused_without_allocating;
using namespace std::string_literals;

// A .mo file as msgfmt lays it out: header, original table, translation
// table, no hash table, then the NUL-terminated strings.
struct MoString {
  std::string original, translation;
};

void put_u32(std::string& bytes, size_t offset, uint32_t v, bool big_endian) {
  for (int i = 0; i < 4; ++i) {
    const int shift = big_endian ? 24 - 8 * i : 8 * i;
    bytes[offset + i] = static_cast<char>((v >> shift) & 0xFF);
  }
}

std::string build_mo(const std::vector<MoString>& strings, bool big_endian, uint32_t revision = 0) {
  const auto n = static_cast<uint32_t>(strings.size());
  const uint32_t originals = 28, translations = originals + 8 * n, data = translations + 8 * n;
  std::string bytes(data, '\0');
  put_u32(bytes, 0, kMoMagic, big_endian);
  put_u32(bytes, 4, revision, big_endian);
  put_u32(bytes, 8, n, big_endian);
  put_u32(bytes, 12, originals, big_endian);
  put_u32(bytes, 16, translations, big_endian);
  put_u32(bytes, 20, 0, big_endian);
  put_u32(bytes, 24, data, big_endian);
  auto append = [&](uint32_t table, uint32_t i, const std::string& s) {
    put_u32(bytes, table + 8 * i, static_cast<uint32_t>(s.size()), big_endian);
    put_u32(bytes, table + 8 * i + 4, static_cast<uint32_t>(bytes.size()), big_endian);
    bytes += s;
    bytes += '\0';
  };
  for (uint32_t i = 0; i < n; ++i) append(originals, i, strings[i].original);
  for (uint32_t i = 0; i < n; ++i) append(translations, i, strings[i].translation);
  return bytes;
}

CatalogEntry entry(std::string ctx, std::string id, std::string plural, std::vector<std::string> str) {
  return {std::move(ctx), std::move(id), std::move(plural), std::move(str)};
}

const std::vector<MoString> kMoStrings = {
    {"", "Content-Type: text/plain; charset=UTF-8\n"},
    {"File", "Fichier"},
    {"menu\x04Open", "Ouvrir"},
    {"%d file\0%d files"s, "%d fichier\0%d fichiers"s},
};
const std::vector<CatalogEntry> kMoEntries = {
    entry("", "", "", {"Content-Type: text/plain; charset=UTF-8\n"}),
    entry("", "File", "", {"Fichier"}),
    entry("menu", "Open", "", {"Ouvrir"}),
    entry("", "%d file", "%d files", {"%d fichier", "%d fichiers"}),
};

// ---------------------------------------------------------------- .po

constexpr const char* kPo = R"po(# Translator comment
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"

#. extracted comment
#: src/main.c:10 src/main.c:20
#, c-format
msgid "Hello %s\n"
msgstr "Bonjour %s\n"

#, fuzzy, c-format
#| msgid "Old text"
msgid "Guess"
msgstr "Devinette"

msgctxt "menu"
msgid "Open"
msgstr "Ouvrir"

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d fichier"
msgstr[1] "%d fichiers"

msgid ""
"A long message "
"on two lines"
msgstr "Un long message "
"sur deux lignes"

msgid "Esc \t \" \\ \r \a \b \f \v \101\x42\0 ?"
msgstr "ok"

  msgid   "Spaced"   
msgstr "Espacé"

msgid "Untranslated"
msgstr ""

#~ msgid "Gone"
#~ msgstr "Parti"
#~ "!"
)po";

TEST(CatalogPo, ParsesEveryKindOfEntry) {
  const auto entries = parse_po(kPo, "fr.po");
  ASSERT_EQ(entries.size(), 10u);
  EXPECT_EQ(entries[0], entry("", "", "",
                              {"Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; "
                               "plural=(n > 1);\n"}));
  EXPECT_EQ(entries[1], entry("", "Hello %s\n", "", {"Bonjour %s\n"}));
  CatalogEntry fuzzy = entry("", "Guess", "", {"Devinette"});
  fuzzy.fuzzy = true;
  EXPECT_EQ(entries[2], fuzzy);
  EXPECT_EQ(entries[3], entry("menu", "Open", "", {"Ouvrir"}));
  EXPECT_EQ(entries[4], entry("", "%d file", "%d files", {"%d fichier", "%d fichiers"}));
  EXPECT_EQ(entries[5], entry("", "A long message on two lines", "", {"Un long message sur deux lignes"}));
  EXPECT_EQ(entries[6].msgid, "Esc \t \" \\ \r \a \b \f \v AB\0 ?"s);
  EXPECT_EQ(entries[7], entry("", "Spaced", "", {"Espacé"}));
  EXPECT_EQ(entries[8], entry("", "Untranslated", "", {""}));
  CatalogEntry gone = entry("", "Gone", "", {"Parti!"});
  gone.obsolete = true;
  EXPECT_EQ(entries[9], gone);
}

TEST(CatalogPo, AcceptsCrlfAndByteOrderMark) {
  std::string text = std::string("\xEF\xBB\xBF") + kPo;
  std::string crlf;
  for (const char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_EQ(parse_po(crlf, "crlf.po"), parse_po(kPo, "fr.po"));
}

TEST(CatalogPo, EmptyTextHasNoEntries) {
  EXPECT_TRUE(parse_po("", "empty.po").empty());
  EXPECT_TRUE(parse_po("# only a comment\n\n", "c.po").empty());
}

TEST(CatalogPo, MalformedInputIsRefusedWithFileAndLine) {
  struct Case {
    std::string text, needle;
  };
  const std::vector<Case> cases = {
      {"msgid \"a\"\nmsgstr \"b\n", "x.po:2: unterminated string"},
      {"msgid \"a\"\nmsgstr \"b\\\"\n", "x.po:2: unterminated string"},
      {"msgid \"a\"\nmsgtxt \"b\"\n", "x.po:2: unknown keyword 'msgtxt'"},
      {"msgstr \"b\"\n", "x.po:1: msgstr without a msgid"},
      {"msgid \"a\\q\"\nmsgstr \"b\"\n", "x.po:1: bad escape '\\q'"},
      {"msgid \"a\\'\"\nmsgstr \"b\"\n", "x.po:1: bad escape '\\''"},
      {"msgid \"\\400\"\nmsgstr \"b\"\n", "x.po:1: octal escape above \\377"},
      {"msgid \"\\x100\"\nmsgstr \"b\"\n", "x.po:1: hex escape above \\xff"},
      {"msgid \"\\x\"\nmsgstr \"b\"\n", "x.po:1: \\x without hex digits"},
      {"msgid \"a\"\n\n", "x.po:2: the file ends inside the entry that starts on line 1"},
      {"msgid \"a\"\nmsgid \"b\"\n", "x.po:2: msgid, but the msgid of line 1 has no msgstr"},
      {"msgid \"a\"\nmsgstr[0] \"b\"\n", "x.po:2: msgstr[0] in an entry without msgid_plural"},
      {"msgid \"a\"\nmsgid_plural \"as\"\nmsgstr \"b\"\n", "x.po:3: the entry has a msgid_plural"},
      {"msgid \"a\"\nmsgid_plural \"as\"\nmsgstr[1] \"b\"\n", "x.po:3: msgstr[1] out of order"},
      {"msgid \"a\"\nmsgid_plural \"as\"\nmsgstr[x] \"b\"\n", "x.po:3: bad plural index in msgstr[x]"},
      {"msgid \"a\" x\nmsgstr \"b\"\n", "x.po:1: text after the closing quote"},
      {"msgid a\nmsgstr \"b\"\n", "x.po:1: msgid needs a quoted string"},
      {"\"orphan\"\n", "x.po:1: a string with no keyword before it"},
      {"msgid \"a\"\nmsgstr \"b\"\nmsgctxt \"c\"\n", "x.po:3: the file ends inside the entry"},
      {"msgid \"a\"\nmsgstr \"b\0\"\n"s, "x.po:2: a NUL byte"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    test::expect_refused([&] { parse_po(c.text, "x.po"); }, {c.needle});
  }
}

// ---------------------------------------------------------------- .mo

class CatalogMo : public test::ScratchDir {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    write_file_atomic(p, bytes);
    return p;
  }
  // read_mo must refuse the file, naming it and every needle, having
  // allocated nothing near the size its tables claim.
  void expect_mo_refused(const std::string& bytes, std::initializer_list<std::string> needles) {
    const fs::path p = write("bad.mo", bytes);
    expect_refused_without_allocating([&] { read_mo(p); }, needles, "a damaged .mo file", p.string());
  }
};

TEST_F(CatalogMo, ReadsBothByteOrders) {
  for (const bool big : {false, true}) {
    SCOPED_TRACE(big ? "big-endian" : "little-endian");
    const fs::path p = write(big ? "be.mo" : "le.mo", build_mo(kMoStrings, big));
    EXPECT_EQ(read_mo(p), kMoEntries);
    EXPECT_EQ(read_catalog(p), kMoEntries);
  }
}

TEST_F(CatalogMo, AcceptsMajorRevisionsZeroAndOne) {
  EXPECT_EQ(read_mo(write("r1.mo", build_mo(kMoStrings, false, 1))), kMoEntries);
  EXPECT_EQ(read_mo(write("r10.mo", build_mo(kMoStrings, true, 0x10001))), kMoEntries);
  expect_mo_refused(build_mo(kMoStrings, false, 0x20000), {"unsupported .mo revision 2.0", "byte 4"});
}

TEST_F(CatalogMo, EmptyCatalogHasNoEntries) { EXPECT_TRUE(read_mo(write("e.mo", build_mo({}, false))).empty()); }

TEST_F(CatalogMo, TruncatedFilesAreRefused) {
  const std::string good = build_mo(kMoStrings, false);
  expect_mo_refused(good.substr(0, 20), {"truncated .mo file: 20 bytes", "header"});
  // Tables intact, strings cut off: the last translation runs past the end.
  expect_mo_refused(good.substr(0, good.size() - 10),
                    {"translation string #3", "past the end of the file", "byte offset"});
}

TEST_F(CatalogMo, OffsetPastTheEndIsRefusedWithTableIndexAndOffset) {
  std::string bytes = build_mo(kMoStrings, true);
  put_u32(bytes, 28 + 8 * 2 + 4, 1'000'000, true);  // original #2's offset
  expect_mo_refused(bytes, {"original string #2", "table entry at byte 44", "byte offset 1000000", "past the end"});
  bytes = build_mo(kMoStrings, false);
  put_u32(bytes, 16, 0xFFFFFFF0u, false);  // translation table offset
  expect_mo_refused(bytes, {"translation string table", "from byte offset 4294967280", "given at byte 16"});
}

TEST_F(CatalogMo, HugeCountIsRefusedBeforeAllocating) {
  for (const uint32_t count : {0xFFFFFFFFu, 0x10000000u, 1000u}) {
    std::string bytes = build_mo(kMoStrings, false);
    put_u32(bytes, 8, count, false);
    expect_mo_refused(bytes, {"string table", std::to_string(count) + " entries", "string count"});
  }
}

TEST_F(CatalogMo, OverlappingStringsAreRefusedBeforeAllocating) {
  // 4000 entries all naming the same 60 KB string: 240 MB of output from a
  // 140 KB file, refused before any of it is copied.
  std::vector<MoString> strings(4000, MoString{"a", "b"});
  std::string bytes = build_mo(strings, false);
  const auto big_at = static_cast<uint32_t>(bytes.size());
  bytes += std::string(60'000, 'x') + '\0';
  for (uint32_t i = 0; i < 4000; ++i) {
    put_u32(bytes, 28 + 8 * i, 60'000, false);
    put_u32(bytes, 28 + 8 * i + 4, big_at, false);
  }
  expect_mo_refused(bytes, {"entries add up to", "more than the whole file", "overlap"});
}

TEST_F(CatalogMo, MagicNumberIsChecked) {
  std::string bytes = build_mo(kMoStrings, false);
  bytes[0] = 'X';
  expect_mo_refused(bytes, {"not a .mo file", "magic number", "byte 0"});
}

TEST_F(CatalogMo, ReadCatalogTellsMoFromPoByContent) {
  EXPECT_EQ(read_catalog(write("named.po", build_mo(kMoStrings, false))), kMoEntries);
  EXPECT_EQ(read_catalog(write("named.mo", kPo)), parse_po(kPo, "fr.po"));
  const fs::path junk = write("junk.bin", "\x1f\x8b\x08\0\0\0"s);
  test::expect_refused([&] { read_catalog(junk); }, {junk.string() + ":1: a NUL byte", "read as .po text"});
  const fs::path prose = write("prose.txt", "Hello world\n");
  test::expect_refused([&] { read_catalog(prose); },
                       {prose.string() + ":1: unknown keyword 'Hello'", "does not start with the .mo magic"});
  test::expect_refused([&] { read_catalog(dir_ / "missing.mo"); }, {"missing.mo"});
}

// ---------------------------------------------------------------- msgfmt

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string_view dirs = path;
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const fs::path dir = dirs.substr(0, colon);
    std::error_code ec;
    if (!dir.empty() && fs::exists(dir / program, ec)) return true;
    dirs.remove_prefix(colon == std::string_view::npos ? dirs.size() : colon + 1);
  }
  return false;
}

bool entry_less(const CatalogEntry& a, const CatalogEntry& b) {
  return std::tie(a.context, a.msgid) < std::tie(b.context, b.msgid);
}

TEST_F(CatalogMo, MsgfmtOutputReadsBackAsThePoEntries) {
  if (!on_path("msgfmt")) GTEST_SKIP() << "msgfmt (Debian package gettext) is not on PATH";
  // kPo without its NUL escape, which msgfmt refuses.
  std::string po = kPo;
  po.replace(po.find("\\0 "), 3, " ");
  const fs::path po_path = write("fr.po", po);
  // msgfmt leaves out fuzzy, obsolete and untranslated entries.
  std::vector<CatalogEntry> expected;
  for (const CatalogEntry& e : parse_po(po, "fr.po"))
    if (!e.fuzzy && !e.obsolete && !e.msgstr[0].empty()) expected.push_back(e);
  std::sort(expected.begin(), expected.end(), entry_less);
  for (const std::string order : {"little", "big"}) {
    SCOPED_TRACE(order);
    const fs::path mo = dir_ / (order + ".mo");
    const std::string cmd = "msgfmt --endianness=" + order + " -o '" + mo.string() + "' '" + po_path.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::vector<CatalogEntry> got = read_mo(mo);
    std::sort(got.begin(), got.end(), entry_less);
    EXPECT_EQ(got, expected);
  }
}

}  // namespace
}  // namespace gpt2lab
