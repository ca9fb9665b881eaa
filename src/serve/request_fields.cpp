#include "serve/request_fields.h"

#include <cmath>
#include <cstdio>

#include "gpt2lab/core/error.h"

namespace gpt2lab::serve {

using nlohmann::json;

std::string shown(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

namespace {

const json* present(const json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

int64_t field_int(const json& body, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
  const json* v = present(body, key);
  if (!v) return fallback;
  const std::string want = std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + shown(*v);
  if (v->is_number_unsigned()) {  // how nlohmann reads every integer >= 0
    const uint64_t u = v->get<uint64_t>();
    check(u <= static_cast<uint64_t>(hi) && (lo <= 0 || u >= static_cast<uint64_t>(lo)), want);
    return static_cast<int64_t>(u);
  }
  check(v->is_number_integer(), want);
  const int64_t x = v->get<int64_t>();
  check(x >= lo && x <= hi, want);
  return x;
}

uint64_t field_uint64(const json& body, const char* key, uint64_t fallback) {
  const json* v = present(body, key);
  if (!v) return fallback;
  check(v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0),
        std::string(key) + " must be an integer in [0, 18446744073709551615], got " + shown(*v));
  return v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
}

double field_real(const json& body, const char* key, double lo, double hi, double fallback) {
  const json* v = present(body, key);
  if (!v) return fallback;
  const double x = v->is_number() ? v->get<double>() : NAN;
  char range[64];
  std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
  check(std::isfinite(x) && x >= lo && x <= hi,
        std::string(key) + " must be a number in " + range + ", got " + shown(*v));
  return x;
}

bool field_bool(const json& body, const char* key, bool fallback) {
  const json* v = present(body, key);
  if (!v) return fallback;
  check(v->is_boolean(), std::string(key) + " must be true or false, got " + shown(*v));
  return v->get<bool>();
}

std::vector<int> token_ids(const json& value, const std::string& what, int vocab_size) {
  check(value.is_array(), what + " must be a list of token ids, got " + shown(value));
  std::vector<int> ids;
  ids.reserve(value.size());
  for (const json& id : value) {
    const bool ok = id.is_number_unsigned()
                        ? id.get<uint64_t>() < static_cast<uint64_t>(vocab_size)
                        : id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size;
    check(ok, what + " holds " + shown(id) + " at index " + std::to_string(ids.size()) + ", not a token id in [0, " +
                  std::to_string(vocab_size) + ")");
    ids.push_back(static_cast<int>(id.get<int64_t>()));
  }
  return ids;
}

}  // namespace gpt2lab::serve
