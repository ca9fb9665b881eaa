#include "serve/endpoints.h"

#include <chrono>

#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "serve/client_watch.h"
#include "serve/request_fields.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab::serve {

using nlohmann::json;

json error_json(const std::string& type, const std::string& message, const std::string& param,
                const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

std::string dumped(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, const json& body) { res.set_content(dumped(body), "application/json"); }

// The body as JSON, at most max_bytes of it (after any decompression);
// false when an error was sent instead.
void close_after_reply(const httplib::Request& req) {
  ClientWatch(req.local_addr, req.local_port, req.remote_addr, req.remote_port).stop_reading();
}

bool read_json_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes,
                    httplib::Response& res, json& out) {
  std::string body;
  size_t seen = 0;
  // Past the limit the body is read on and dropped, up to drain_limit(), so
  // that the 413 reaches the client (closing on unread data sends a reset
  // instead) and the connection stays in step for its next request.
  const bool read = reader([&](const char* data, size_t n) {
    seen += n;
    if (seen <= max_bytes) body.append(data, n);
    return seen <= drain_limit(max_bytes);
  });
  if (seen > max_bytes || res.status == 413) {
    if (!read) close_after_reply(req);  // too much to drop: hang up
    send_error(
        res, 413, "invalid_request_error",
        "the request body is larger than this server's limit of " + std::to_string(max_bytes) + " bytes (--max-body)");
    return false;
  }
  if (!read) {
    close_after_reply(req);
    send_error(res, 400, "invalid_request_error", "the request body could not be read (cut short, or a bad encoding)");
    return false;
  }
  try {
    out = parse_json(body, "the request body");
  } catch (const Error& e) {
    send_error(res, 400, "invalid_request_error", std::string(e.what()) + " (send a JSON object)");
    return false;
  }
  return true;
}

void send_error(httplib::Response& res, int status, const std::string& type, const std::string& message,
                const std::string& param, const std::string& code) {
  res.status = status;
  send_json(res, error_json(type, message, param, code));
}

namespace {

// POST /tokenize {"content": TEXT, "with_pieces": false} -> {"tokens": [ids]}
// (with_pieces: [{"id", "piece"}]), special tokens read as completions read them.
void tokenize(const ServerState& s, const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  bool pieces = false;
  try {
    check(body.is_object() && body.contains("content") && body["content"].is_string(),
          "content must be the text to tokenize, a string");
    pieces = field_bool(body, "with_pieces", false);
  } catch (const Error& e) {
    return send_error(res, 400, "invalid_request_error", e.what(), "content");
  }
  const std::vector<int> ids = s.model.tok.encode(body["content"].get<std::string>(), /*allow_special=*/true);
  json tokens = json::array();
  for (int id : ids) {
    Utf8StreamDecoder d;
    tokens.push_back(pieces ? json{{"id", id}, {"piece", d.push(s.model.tok.token_bytes(id)) + d.flush()}} : json(id));
  }
  send_json(res, {{"tokens", tokens}});
}

// POST /detokenize {"tokens": [ids]} -> {"content": TEXT}; bytes that do not
// form a character become U+FFFD.
void detokenize(const ServerState& s, const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  std::vector<int> ids;
  try {
    check(body.is_object() && body.contains("tokens"), "tokens must be a list of token ids");
    ids = token_ids(body["tokens"], "tokens", s.model.tok.vocab_size());
  } catch (const Error& e) {
    return send_error(res, 400, "invalid_request_error", e.what(), "tokens");
  }
  Utf8StreamDecoder d;
  send_json(res, {{"content", d.push(s.model.tok.decode(ids)) + d.flush()}});
}

json models(const ServerState& s, int64_t created) {
  const ModelConfig& c = s.model.model.config();
  json meta = {{"n_ctx", c.block_size},
               {"n_vocab", c.vocab_size},
               {"n_layer", c.n_layer},
               {"n_head", c.n_head},
               {"n_embd", c.n_embd}};
  json model = {{"id", s.model.id}, {"object", "model"}, {"created", created}, {"owned_by", "gpt2lab"}, {"meta", meta}};
  return {{"object", "list"}, {"data", json::array({model})}};
}

}  // namespace

void add_routes(httplib::Server& server, ServerState& s) {
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, {{"status", "ok"}}); });
  for (const char* path : {"/v1/models", "/models"})
    server.Get(path,
               [&s, created](const httplib::Request&, httplib::Response& res) { send_json(res, models(s, created)); });
  for (const char* path : {"/v1/completions", "/completions"})
    server.Post(path, [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
      completions(s, req, res, r);
    });
  server.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.stats.prometheus(), "text/plain; version=0.0.4");
  });
  server.Post("/tokenize", [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
    tokenize(s, req, res, r);
  });
  server.Post("/detokenize", [&s](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& r) { detokenize(s, req, res, r); });
}

}  // namespace gpt2lab::serve
