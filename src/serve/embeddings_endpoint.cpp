// POST /v1/embeddings: each input's final hidden states (the library's
// InferenceSession::append_hidden, ln_f's output), mean-pooled over its
// tokens and scaled to unit length (serve/embedding_request.h), computed
// on the worker like a completion.
#include <memory>
#include <string>
#include <vector>

#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/inference.h"
#include "serve/completion_job.h"
#include "serve/embedding_request.h"
#include "serve/endpoints.h"

namespace gpt2lab::serve {

using nlohmann::json;

namespace {

json embed_all(const ServerState& s, const EmbeddingRequest& r, const std::atomic<bool>& cancel) {
  const int C = s.model.model.config().n_embd;
  InferenceSession session(s.model.model, {s.base.weights, s.base.packed});
  json data = json::array();
  size_t tokens = 0;
  for (size_t i = 0; i < r.inputs.size() && !cancel; ++i) {
    session.reset();
    const float* hidden = session.append_hidden(r.inputs[i]);
    const std::vector<float> v = pool_embedding(hidden, r.inputs[i].size(), C);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", r.base64 ? json(base64_floats(v)) : json(v)}});
    tokens += r.inputs[i].size();
  }
  return {{"object", "list"},
          {"data", data},
          {"model", s.model.id},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

}  // namespace

void embeddings(ServerState& s, const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader& reader) {
  json body;
  if (!read_json_body(req, reader, s.options.max_body_bytes, res, body)) return;
  RequestProblem problem;
  std::shared_ptr<const EmbeddingRequest> r;
  try {
    r = std::make_shared<const EmbeddingRequest>(
        read_embedding_request(body, s.model.model.config(), s.model.tok, problem));
  } catch (const Error& e) {
    send_error(res, 400, "invalid_request_error", e.what(), problem.param, problem.code);
    return;
  }
  const ClientWatch watch(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  const auto job = [&s, r](Pending& p) {
    if (p.cancel) return;
    try {
      p.finish(200, embed_all(s, *r, p.cancel));
    } catch (const std::exception& e) {
      p.finish(500, error_json("server_error", std::string("embedding failed: ") + e.what()));
    }
  };
  if (!run_and_wait(s, watch, std::make_shared<Pending>(), job, res)) send_busy(s, res);
}

}  // namespace gpt2lab::serve
