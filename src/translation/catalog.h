// gettext message catalogs -> entries: the compiled .mo files Debian packages
// ship (usr/share/locale/LANG/LC_MESSAGES/*.mo) and the .po text they are
// compiled from. The entries are the raw material of the translation case
// study (pairs.h turns them into cleaned pairs).
//
// Nothing is converted or dropped here: the strings are the catalog's bytes
// (no charset conversion: the header's Content-Type names the charset, and
// pairs.h refuses pairs that are not UTF-8), the header entry
// (msgid "") is kept, and fuzzy and obsolete .po entries are returned with
// their flag set, so every drop happens, counted, in one place.
//
// .mo (GNU format): a 28-byte header (magic, revision, string count N,
// offsets of the original and translated string tables, hash table size and
// offset), then two tables of N (length, offset) pairs. Read in either byte
// order (magic 0x950412de as written by the machine, or 0xde120495 swapped),
// major revision 0 or 1 (GNU's loader accepts both; the minor revision only
// announces system-dependent strings, see below). An original string is
// "CONTEXT\x04MSGID" with a context, "MSGID\0PLURAL" for a plural entry; the
// translation holds the plural forms separated by NUL. Every offset and
// length is checked against the file size before it is used, and N against
// what the tables can hold before anything is allocated: a damaged file is an
// Error naming the file, the table index and the byte offset. Not read: the
// hash table (a lookup aid) and the system-dependent strings of revision 1
// (messages containing <PRIu64>-style macros, stored in separate tables that
// msgfmt keeps out of the static ones), and there is no fuzzy flag (msgfmt
// leaves fuzzy entries out unless --use-fuzzy).
//
// .po: GNU gettext's text format. Entries are [msgctxt] msgid [msgid_plural]
// then msgstr, or msgstr[0], msgstr[1], ... (consecutive) for a plural entry;
// each keyword takes a quoted string and continues over following lines that
// are just a quoted string ("..." concatenated). Strings use the C escapes
// GNU gettext accepts: \n \t \r \a \b \f \v \" \\, octal \o..\ooo and hex
// \xH.. up to 0xFF (not \' or \?, which msgfmt refuses too).
// Comments (#, #. #: #| and "#, FLAGS") may appear between entries; "fuzzy"
// among the comma-separated flags marks the next entry fuzzy. "#~" lines are
// an obsolete entry (its "#~|" lines are comments). Blank lines, CRLF line
// ends, surrounding spaces and a UTF-8 byte order mark are accepted.
// Anything else (unknown keyword, unterminated string, bad escape, msgstr
// without msgid, msgid without msgstr, a NUL byte) is an Error
// "FILE:LINE: what is wrong".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

struct CatalogEntry {
  std::string context;              // msgctxt, "" if none
  std::string msgid;                // source text (English), unescaped
  std::string msgid_plural;         // "" if the entry has no plural
  std::vector<std::string> msgstr;  // msgstr, or msgstr[0..n) for plurals
  bool fuzzy = false;               // "#, fuzzy" flag (only .po can carry it)
  bool obsolete = false;            // "#~" entries (.po)

  bool operator==(const CatalogEntry&) const = default;
};

inline constexpr uint32_t kMoMagic = 0x950412de;
inline constexpr uint32_t kMoMagicSwapped = 0xde120495;
// The largest catalog read: Debian's biggest .mo files are a few MB. The
// entries of a .mo take at most about ten times its size (each entry needs
// 16 bytes of tables and the strings may not add up to more than the file).
inline constexpr size_t kMaxCatalogBytes = size_t{64} << 20;

// A .mo file's entries, in the file's order (msgfmt sorts them by msgid).
std::vector<CatalogEntry> read_mo(const fs::path& path);
// The same from bytes in memory; `where` names them in errors.
std::vector<CatalogEntry> parse_mo(std::string_view bytes, const std::string& where);

// A .po text's entries in text order; `where` is the file name for errors
// ("FILE:LINE: ...").
std::vector<CatalogEntry> parse_po(std::string_view text, const std::string& where);

// .mo when the file starts with the .mo magic number (either byte order),
// otherwise .po text; a file that is neither is an Error.
std::vector<CatalogEntry> read_catalog(const fs::path& path);

}  // namespace gpt2lab
