#include "core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/file.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

std::string json_error_text(const std::exception& e) {
  std::string s = e.what();
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  return s;
}

void check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw Error(where + ": JSON nested more than " + std::to_string(max_depth) + " levels deep at byte " +
                    std::to_string(i) + "; refusing it");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

nlohmann::json parse_json(std::string_view text, const std::string& where, int max_depth) {
  check_json_depth(text, where, max_depth);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON (" + json_error_text(e) + ")");
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path, size_t max_bytes) {
  return parse_json(read_file(path, max_bytes), path.string());
}

namespace {

// The line without its '\r', after its length and depth were checked.
nlohmann::json parse_checked_line(std::string_view line, const std::string& where, size_t max_line_bytes) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  check(line.size() <= max_line_bytes, where + ": a line of " + std::to_string(line.size()) + " bytes, more than the " +
                                           std::to_string(max_line_bytes) + " expected; refusing it");
  return parse_json(line, where);
}

}  // namespace

void for_each_json_line(std::string_view text, const std::string& where,
                        const std::function<void(int, const nlohmann::json&)>& fn, size_t max_line_bytes) {
  size_t pos = 0;
  for (int line = 1; pos < text.size(); ++line) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view row = text.substr(pos, end - pos);
    pos = end + 1;
    if (row.empty() || row == "\r") continue;
    fn(line, parse_checked_line(row, where + ":" + std::to_string(line), max_line_bytes));
  }
}

std::optional<nlohmann::json> try_parse_json_line(std::string_view line, size_t max_line_bytes) {
  try {
    return parse_checked_line(line, "", max_line_bytes);
  } catch (const Error&) {
    return std::nullopt;
  }
}

namespace {

std::string float_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

double float_as_decimal(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

int64_t json_int(const nlohmann::json& j, const char* key, const std::string& where, int64_t lo, int64_t hi) {
  const std::string name = where + ": field '" + key + "'";
  const auto it = j.find(key);
  check(it != j.end(), where + ": missing field '" + key + "'");
  check(it->is_number_integer(), name + " must be an integer (got " + it->dump() + ")");
  // Compared before converting: 2^63 read as int64 would look negative.
  const bool fits = it->is_number_unsigned() ? hi >= 0 && it->get<uint64_t>() <= static_cast<uint64_t>(hi)
                                             : it->get<int64_t>() >= lo && it->get<int64_t>() <= hi;
  check(fits && (!it->is_number_unsigned() || lo <= 0 || it->get<uint64_t>() >= static_cast<uint64_t>(lo)),
        name + " = " + it->dump() + " is out of range (" + std::to_string(lo) + " to " + std::to_string(hi) + ")");
  return it->get<int64_t>();
}

std::optional<double> json_real(const nlohmann::json& j, const char* key, const std::string& where, double lo,
                                double hi) {
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  const std::string name = where + ": field '" + key + "'";
  check(it->is_number(), name + " must be a number (got " + it->dump() + ")");
  const double v = it->get<double>();
  check(std::isfinite(v) && v >= lo && v <= hi,
        name + " = " + it->dump() + " must be a finite number in [" + float_text(lo) + ", " + float_text(hi) + "]");
  return v;
}

}  // namespace gpt2lab
