// JSON from outside (config files, safetensors headers, state files) parsed
// at a bounded cost: the size is checked before the file is read and the
// nesting depth before the text is parsed (a 40M-deep header would otherwise
// cost gigabytes of parser stack before it is refused), and parse errors are
// Errors that name the file and the byte, without nlohmann's exception tag.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpt2lab {

inline constexpr size_t kMaxJsonFileBytes = size_t{16} << 20;  // configs are a few KB
inline constexpr int kMaxJsonDepth = 64;                       // ours nest 3 deep

// The text of a nlohmann exception without its "[json.exception.x.N] " tag.
std::string json_error_text(const std::exception& e);

// Parses `text`; `where` names it in errors ("FILE", "FILE: header").
nlohmann::json parse_json(std::string_view text, const std::string& where, int max_depth = kMaxJsonDepth);

// Reads (read_file: regular files only, at most max_bytes) and parses a
// JSON file.
nlohmann::json read_json_file(const std::filesystem::path& path, size_t max_bytes = kMaxJsonFileBytes);

// JSON Lines (metrics.jsonl, a translation dataset's pairs): each line's
// length and nesting depth are checked before it is parsed, so one hostile
// line costs no more than a config file would (a 10M-deep line would
// otherwise cost 800 MB of parser state). A line is one object or value;
// empty lines are skipped and a trailing '\r' is dropped.
inline constexpr size_t kMaxJsonLineBytes = size_t{16} << 20;

// Calls fn(line_number, value) for each non-empty line of `text` (counted
// from 1); a line that is too long, too deep or not JSON throws Error
// "WHERE:LINE: ...".
void for_each_json_line(std::string_view text, const std::string& where,
                        const std::function<void(int, const nlohmann::json&)>& fn,
                        size_t max_line_bytes = kMaxJsonLineBytes);

// One line of a file a crash may have torn (metrics.jsonl): nullopt where
// for_each_json_line would throw.
std::optional<nlohmann::json> try_parse_json_line(std::string_view line, size_t max_line_bytes = kMaxJsonLineBytes);

// The one reader for the numbers of gpt2lab's JSON files (configs, state,
// study files): the type and range are checked before the value is
// converted (nlohmann's get<int> of 1e300 is undefined behaviour), and an
// error names `where` and the field. A missing field is an Error for
// json_int; json_real returns nullopt for it (an optional field).
int64_t json_int(const nlohmann::json& j, const char* key, const std::string& where, int64_t lo, int64_t hi);
std::optional<double> json_real(const nlohmann::json& j, const char* key, const std::string& where, double lo,
                                double hi);

// A float as JSON should show it: its shortest decimal (0.9f -> 0.9, 1e-5f
// -> 1e-05) as a double, instead of the double expansion of its binary value
// (0.8999999761581421). Reading it back as a float gives the same float.
double float_as_decimal(float f);

// Throws Error unless `text` nests arrays/objects at most max_depth deep.
void check_json_depth(std::string_view text, const std::string& where, int max_depth = kMaxJsonDepth);

}  // namespace gpt2lab
