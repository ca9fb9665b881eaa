// Typed reads of one field of a JSON request body, checked before anything
// is converted (nlohmann's get<int> of 1e300 is undefined behaviour): an
// absent or null field gives the default, a wrong type or a value out of
// range an Error that names the field and says what it must be.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpt2lab::serve {

int64_t field_int(const nlohmann::json& body, const char* key, int64_t lo, int64_t hi, int64_t fallback);
uint64_t field_uint64(const nlohmann::json& body, const char* key, uint64_t fallback);
double field_real(const nlohmann::json& body, const char* key, double lo, double hi, double fallback);
bool field_bool(const nlohmann::json& body, const char* key, bool fallback);

// A list of token ids, each in [0, vocab_size); `what` names it in errors.
std::vector<int> token_ids(const nlohmann::json& value, const std::string& what, int vocab_size);

// "key must be ..., got VALUE" with the value shown short.
std::string shown(const nlohmann::json& value);

}  // namespace gpt2lab::serve
