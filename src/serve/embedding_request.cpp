#include "serve/embedding_request.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "gpt2lab/core/error.h"
#include "serve/request_fields.h"

namespace gpt2lab::serve {

using nlohmann::json;

namespace {

constexpr const char* kEmbeddingFields[] = {"model", "input", "encoding_format", "dimensions", "user"};

[[noreturn]] void over_context(const ModelConfig& c, size_t i, const std::string& tokens, RequestProblem& problem) {
  problem = {"input", "context_length_exceeded"};
  throw Error("input " + std::to_string(i) + " has " + tokens + " tokens, more than this model's context of " +
              std::to_string(c.block_size) + "; shorten it or split it into several inputs");
}

// One input (a string or a list of ids), checked for size before it is
// tokenized: a token is at most the longest token's bytes of text.
std::vector<int> one_input(const json& p, size_t i, const ModelConfig& c, const Tokenizer& tok, size_t longest,
                           RequestProblem& problem) {
  const size_t room = static_cast<size_t>(c.block_size);
  std::vector<int> ids;
  if (p.is_string()) {
    const size_t bytes = p.get_ref<const std::string&>().size();
    if (bytes > room * longest)
      over_context(c, i, "at least " + std::to_string((bytes + longest - 1) / longest), problem);
    ids = tok.encode(p.get<std::string>(), /*allow_special=*/true);
  } else {
    if (p.is_array() && p.size() > room) over_context(c, i, std::to_string(p.size()), problem);
    ids = token_ids(p, "input " + std::to_string(i), tok.vocab_size());
  }
  check(!ids.empty(), "input " + std::to_string(i) + " is empty: an embedding needs at least one token");
  if (ids.size() > room) over_context(c, i, std::to_string(ids.size()), problem);
  return ids;
}

}  // namespace

EmbeddingRequest read_embedding_request(const json& body, const ModelConfig& c, const Tokenizer& tok,
                                        RequestProblem& problem) {
  problem = {};
  check(body.is_object(), "the request body must be a JSON object, got " + shown(body));
  refuse_unknown_fields(body, kEmbeddingFields, problem);
  problem.param = "model";
  const auto model = body.find("model");
  check(model == body.end() || model->is_string() || model->is_null(),
        "model must be a string, got " + (model == body.end() ? std::string() : shown(*model)));
  EmbeddingRequest r;
  problem.param = "encoding_format";
  const auto format = body.find("encoding_format");
  if (format != body.end() && !format->is_null()) {
    check(*format == "float" || *format == "base64",
          "encoding_format must be \"float\" or \"base64\", got " + shown(*format));
    r.base64 = *format == "base64";
  }
  problem.param = "dimensions";
  const int64_t dims = field_int(body, "dimensions", 1, INT32_MAX, c.n_embd);
  check(dims == c.n_embd, "dimensions " + std::to_string(dims) + " is not this model's: its embeddings have n_embd " +
                              std::to_string(c.n_embd) + " dimensions (send that, or leave dimensions out)");
  problem.param = "input";
  const auto it = body.find("input");
  check(it != body.end() && (it->is_string() || it->is_array()),
        "input must be a string, a list of strings, a list of token ids, or a list of lists of token ids, got " +
            (it == body.end() ? std::string("nothing") : shown(*it)));
  std::vector<const json*> list;
  if (it->is_string() || (!it->empty() && it->front().is_number()))
    list.push_back(&*it);
  else
    for (const json& p : *it) list.push_back(&p);
  check(!list.empty(), "input is an empty list: send at least one text or list of token ids");
  check(list.size() <= kMaxEmbeddingInputs, "input holds " + std::to_string(list.size()) +
                                                " inputs, more than one request takes (" +
                                                std::to_string(kMaxEmbeddingInputs) + "); send them in parts");
  for (size_t i = 0; i < list.size(); ++i)
    check(list[i]->is_string() || list[i]->is_array(),
          "input " + std::to_string(i) + " must be a string or a list of token ids, got " + shown(*list[i]));
  const size_t longest = longest_token_bytes(tok);
  for (size_t i = 0; i < list.size(); ++i) r.inputs.push_back(one_input(*list[i], i, c, tok, longest, problem));
  problem = {};
  return r;
}

std::vector<float> pool_embedding(const float* hidden, size_t tokens, int n_embd) {
  std::vector<double> sum(static_cast<size_t>(n_embd), 0.0);
  for (size_t t = 0; t < tokens; ++t)
    for (int j = 0; j < n_embd; ++j) sum[static_cast<size_t>(j)] += hidden[t * static_cast<size_t>(n_embd) + j];
  double norm = 0;
  for (double& x : sum) {
    x /= static_cast<double>(tokens);
    norm += x * x;
  }
  norm = std::sqrt(norm);
  std::vector<float> out(sum.size());
  for (size_t j = 0; j < sum.size(); ++j) out[j] = static_cast<float>(norm > 0 ? sum[j] / norm : 0.0);
  return out;
}

std::string base64_floats(const std::vector<float>& v) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const auto u = std::bit_cast<uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += digits[(n >> 18) & 63];
    out += digits[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[n & 63] : '=';
  }
  return out;
}

}  // namespace gpt2lab::serve
