// gpt2lab.Model: a GPT-2 in memory. Loading, saving, the forward pass, the
// loss, generation (whole or token by token) and the per-layer gradient
// norms of a batch, each the library's own.
#include <cstdio>
#include <limits>
#include <mutex>

#include "bindings.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/options.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "gpt2lab/train/grad_norms.h"

namespace gpt2lab::python {
namespace {

struct Model {
  explicit Model(GPT2<float>&& m, std::string dir = "") : model(std::move(m)), dir(std::move(dir)) {}
  GPT2<float> model;
  std::string dir;  // where it was loaded from: its tokenizer is there
  // forward and backward write the model's activations and gradients;
  // generation only reads the weights.
  std::mutex busy;
  std::shared_ptr<Tokenizer> tok;

  const Tokenizer& tokenizer() {
    if (!tok) {
      check(!dir.empty() || model.config().vocab_size == 50257,
            "this model has no tokenizer (made by Model.init with vocab_size " +
                std::to_string(model.config().vocab_size) + "): pass token ids, or save() it with a tokenizer");
      tok = std::make_shared<Tokenizer>(dir.empty() ? Tokenizer::resolve("gpt2") : checkpoint_tokenizer(dir));
    }
    return *tok;
  }
};

// B rows of T ids (a 1-D input is one row); T must be at least 1.
struct Batch {
  std::vector<int> ids;
  int B = 0, T = 0;
  bool one_row = false;
};

Batch batch_of(const py::handle& obj, const char* what) {
  Batch b;
  b.ids = ids_from(obj, what, &b.B);
  b.one_row = py::array::ensure(obj).ndim() == 1;
  check(b.B > 0 && !b.ids.empty(), std::string(what) + ": no tokens");
  b.T = static_cast<int>(b.ids.size() / static_cast<size_t>(b.B));
  return b;
}

// A (rows..., C) float32 array copied from the model's (B*T, C) buffer.
py::array_t<float> rows_copy(const float* src, const Batch& b, py::ssize_t width) {
  std::vector<py::ssize_t> shape = {b.B, b.T, width};
  if (b.one_row) shape.erase(shape.begin());
  py::array_t<float> out(shape);
  std::copy(src, src + static_cast<size_t>(b.B) * b.T * width, out.mutable_data());
  return out;
}

// Model.forward: the logits, and on request what the forward computed on
// the way (the model keeps every activation of its last forward; these are
// copies, read under the same lock).
py::object forward(Model& m, const py::handle& ids, const py::handle& hidden, const py::handle& attentions) {
  const Batch b = batch_of(ids, "forward");
  const bool want_hidden = bool_arg(hidden, "forward: return_hidden_states");
  const bool want_att = bool_arg(attentions, "forward: return_attentions");
  const ModelConfig& c = m.model.config();
  const int V = c.vocab_size, Vp = c.padded_vocab_size();
  std::vector<py::ssize_t> shape = {b.B, b.T, V};
  if (b.one_row) shape.erase(shape.begin());
  py::array_t<float> logits(shape);
  float* dst = logits.mutable_data();
  py::tuple hidden_states(want_hidden ? c.n_layer + 2 : 0), probs(want_att ? c.n_layer : 0);
  std::unique_lock lock(m.busy, std::defer_lock);
  without_gil([&] {
    lock.lock();
    m.model.forward(b.ids.data(), nullptr, b.B, b.T);
    // The model's rows are padded to Vp; the padding is not a logit.
    const float* src = m.model.logits();
    for (size_t row = 0; row < static_cast<size_t>(b.B) * b.T; ++row)
      std::copy(src + row * Vp, src + row * Vp + V, dst + row * V);
  });
  if (!want_hidden && !want_att) return logits;
  // Still under the lock (taken without the GIL, so no deadlock with a
  // thread that holds the lock and waits for the GIL: none does).
  for (int l = 0; want_hidden && l <= c.n_layer; ++l) hidden_states[l] = rows_copy(m.model.residual(l), b, c.n_embd);
  if (want_hidden) hidden_states[c.n_layer + 1] = rows_copy(m.model.head_input(), b, c.n_embd);
  for (int l = 0; want_att && l < c.n_layer; ++l) {
    std::vector<py::ssize_t> ashape = {b.B, c.n_head, b.T, b.T};
    if (b.one_row) ashape.erase(ashape.begin());
    py::array_t<float> a(ashape);
    const float* src = m.model.attention_probs(l);
    std::copy(src, src + static_cast<size_t>(b.B) * c.n_head * b.T * b.T, a.mutable_data());
    probs[l] = a;
  }
  lock.unlock();
  py::dict out;
  out["logits"] = logits;
  if (want_hidden) out["hidden_states"] = hidden_states;
  if (want_att) out["attentions"] = probs;
  return out;
}

double loss(Model& m, const py::handle& ids, const py::handle& targets) {
  const Batch b = batch_of(ids, "loss: ids"), t = batch_of(targets, "loss: targets");
  check(t.B == b.B && t.T == b.T, "loss: targets must have the shape of ids");
  return without_gil([&] {
    std::lock_guard lock(m.busy);
    return static_cast<double>(m.model.forward(b.ids.data(), t.ids.data(), b.B, b.T));
  });
}

py::dict grad_norms(Model& m, const py::handle& ids, const py::handle& targets) {
  const Batch b = batch_of(ids, "grad_norms: ids"), t = batch_of(targets, "grad_norms: targets");
  check(t.B == b.B && t.T == b.T, "grad_norms: targets must have the shape of ids");
  const LayerGradNorms g = without_gil([&] {
    std::lock_guard lock(m.busy);
    return layer_grad_norms(m.model, b.ids.data(), t.ids.data(), b.B, b.T);
  });
  auto arr = [](const std::vector<double>& v) {
    return py::array_t<double>(static_cast<py::ssize_t>(v.size()), v.data());
  };
  py::dict d;
  d["attn.c_attn"] = arr(g.attn_c_attn);
  d["attn.c_proj"] = arr(g.attn_c_proj);
  d["mlp.c_fc"] = arr(g.mlp_c_fc);
  d["mlp.c_proj"] = arr(g.mlp_c_proj);
  d["ffn"] = arr(g.ffn);
  d["total"] = arr(g.total);
  d["residual_rms"] = arr(g.residual_rms);
  d["wte"] = g.wte;
  d["loss"] = g.loss;
  return d;
}

// A prompt as ids: a list/array as is, a str through the model's tokenizer
// (the special token allowed, as `gpt2lab sample --prompt` does).
std::vector<int> prompt_ids(Model& m, const py::handle& prompt) {
  if (!py::isinstance<py::str>(prompt)) return ids_from(prompt, "prompt");
  const std::string text = utf8_of(prompt, "prompt");
  return m.tokenizer().encode(text, /*allow_special=*/true);
}

// The keywords of generate and stream other than the table's rows.
constexpr const char* kOtherSamplingKeys[] = {"seed", "stop_at_eot", "weights", "logit_bias"};

// OpenAI's logit_bias: {token id: bias in [-100, 100]} (None: none); ids are
// checked against the vocabulary with the prompt.
std::vector<std::pair<int, float>> logit_bias_arg(const py::handle& v) {
  std::vector<std::pair<int, float>> out;
  if (v.is_none()) return out;
  if (!py::isinstance<py::dict>(v))
    throw Error("logit_bias must be a dict of token ids to biases, got " + py::repr(v).cast<std::string>());
  for (const auto& [id, bias] : py::reinterpret_borrow<py::dict>(v)) {
    const int64_t i = int_arg(id, "logit_bias: a token id", 0, std::numeric_limits<int>::max());
    out.emplace_back(static_cast<int>(i), static_cast<float>(real_arg(bias, "logit_bias of token " + std::to_string(i),
                                                                      -kMaxLogitBias, kMaxLogitBias)));
  }
  return out;
}

std::string sampling_keys() {
  std::string keys;
  for (const SamplingOptionSpec& s : sampling_option_table()) keys += std::string(keys.empty() ? "" : ", ") + s.key;
  for (const char* k : kOtherSamplingKeys) keys += std::string(", ") + k;
  return keys;
}

// The sampling keywords: sampling_option_table()'s rows, each checked with
// its range (as `gpt2lab sample` checks its flag and the server its field),
// then seed, stop_at_eot and weights.
SamplingOptions sampling(Model& m, const py::kwargs& kw, const std::string& call) {
  SamplingOptions o;
  // Without a seed each call draws its own, as Hugging Face's generate does:
  // the same call twice gives two samples, not the same one.
  o.seed = fresh_seed();
  for (const auto& [k, v] : kw) {
    const std::string key = str_arg(k, call + ": a keyword");
    if (key == "seed") {
      if (!v.is_none()) o.seed = seed_arg(v, "seed");
    } else if (key == "stop_at_eot") {
      o.stop_at_eot = bool_arg(v, "stop_at_eot");
    } else if (key == "weights") {
      o.weights = parse_weight_type(str_arg(v, "weights"));
    } else if (key == "logit_bias") {
      o.logit_bias = logit_bias_arg(v);
    } else {
      const SamplingOptionSpec* spec = nullptr;
      for (const SamplingOptionSpec& s : sampling_option_table())
        if (key == s.key) spec = &s;
      check(spec != nullptr, call + ": unknown keyword '" + key + "' (known: " + sampling_keys() + ")");
      spec->set(o, spec->integer ? static_cast<double>(int_arg(v, key, static_cast<int64_t>(spec->min),
                                                               static_cast<int64_t>(spec->max)))
                                 : real_arg(v, key, spec->min, spec->max));
    }
  }
  if (o.stop_at_eot) o.eot_id = m.tokenizer().eot_id();
  validate(o);
  return o;
}

// The keywords as the docstring lists them: the table's help, range and
// default, the same text `gpt2lab sample --help` shows.
std::string sampling_doc(const std::string& head) {
  std::string doc = head + "\n\nKeywords (all optional):\n";
  const SamplingOptions defaults;
  for (const SamplingOptionSpec& s : sampling_option_table()) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", s.get(defaults));
    doc += "  " + std::string(s.key) + ": " + s.help + "; " + range_text(s) + " (default " + shown + ")\n";
  }
  doc +=
      "  seed: an integer in [0, 18446744073709551615]; the same seed, the same tokens (default None: a fresh "
      "one each call)\n"
      "  stop_at_eot: stop at <|endoftext|> (default False)\n"
      "  weights: what decode steps read, \"f32\", \"bf16\" or \"int8\" (default \"f32\")\n"
      "  logit_bias: OpenAI's, {token id: bias in [-100, 100]} added to those raw logits (default None)\n";
  return doc;
}

// Model.stream(): the tokens one at a time, as Generator draws them.
class Stream {
 public:
  Stream(Model& m, std::vector<int> prompt, const SamplingOptions& o)
      : gen_(without_gil([&] { return std::make_unique<Generator>(m.model, prompt, o); })) {}
  int next() {
    const std::optional<int> tok = without_gil([&] { return gen_->next(); });
    if (!tok) throw py::stop_iteration();
    return *tok;
  }

 private:
  std::unique_ptr<Generator> gen_;
};

// generate's keywords besides the sampling options: what it returns.
struct Returned {
  bool logprobs = false;
  int top = 0;  // top_logprobs: the most likely tokens per step, with logprobs
};

// A batch: a 2-D array, or a list/tuple of prompts (lists or arrays of ids,
// or str), rows of any length each.
bool is_batch(const py::handle& prompt) {
  if (py::isinstance<py::array>(prompt)) return py::array::ensure(prompt).ndim() == 2;
  if (!py::isinstance<py::list>(prompt) && !py::isinstance<py::tuple>(prompt)) return false;
  const auto seq = py::reinterpret_borrow<py::sequence>(prompt);
  if (py::len(seq) == 0) return false;
  const py::object first = seq[0];
  return py::isinstance<py::list>(first) || py::isinstance<py::tuple>(first) || py::isinstance<py::array>(first) ||
         py::isinstance<py::str>(first);
}

// One row's generation: its new ids and, on request, the log-probabilities
// (token_logprobs: the raw logits' log-softmax, OpenAI's `logprobs`) of
// each drawn token and of the most likely ones.
py::object generate_row(Model& m, const py::handle& prompt, const std::vector<int>& ids, const SamplingOptions& o,
                        const Returned& r) {
  std::vector<double> chosen;
  std::vector<std::vector<std::pair<int, double>>> top;
  const std::vector<int> out = without_gil([&] {
    if (!r.logprobs) return generate(m.model, ids, o, [](int) { return !stop_requested(); });
    return generate_steps(m.model, ids, o, [&](const GenerationStep& step) {
      TokenLogprobs t = token_logprobs(step.logits, step.id, r.top);
      chosen.push_back(t.chosen);
      if (r.top > 0) top.push_back(std::move(t.top));
      return !stop_requested();
    });
  });
  const bool text = py::isinstance<py::str>(prompt);
  const py::object tokens =
      text ? py::bytes(m.tokenizer().decode(out)).attr("decode")("utf-8", "replace") : py::cast(out);
  if (!r.logprobs) return tokens;
  py::dict d;
  d[text ? "text" : "tokens"] = tokens;
  if (text) d["tokens"] = py::cast(out);
  d["logprobs"] = py::cast(chosen);
  if (r.top > 0) d["top_logprobs"] = py::cast(top);
  return d;
}

// Row i's seed: seed + i for an int (so rows differ), seed[i] for a list,
// a fresh one each without.
std::vector<uint64_t> row_seeds(const py::handle& seed, size_t rows) {
  std::vector<uint64_t> seeds(rows);
  if (seed.is_none()) {
    for (auto& s : seeds) s = fresh_seed();
  } else if (py::isinstance<py::list>(seed) || py::isinstance<py::tuple>(seed)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(seed);
    check(py::len(seq) == rows, "generate: seed has " + std::to_string(py::len(seq)) + " entries but the batch has " +
                                    std::to_string(rows) + " rows (give one seed per row, or one int)");
    for (size_t i = 0; i < rows; ++i) seeds[i] = seed_arg(seq[i], "seed[" + std::to_string(i) + "]");
  } else {
    const uint64_t base = seed_arg(seed, "seed");
    for (size_t i = 0; i < rows; ++i) seeds[i] = base + i;  // wraps at 2**64, as documented
  }
  return seeds;
}

py::object generate_call(Model& m, const py::handle& prompt, const py::kwargs& kw) {
  Returned r;
  py::kwargs rest;
  py::object seed = py::none();
  for (const auto& [k, v] : kw) {
    const std::string key = str_arg(k, "Model.generate: a keyword");
    if (key == "return_logprobs")
      r.logprobs = bool_arg(v, "return_logprobs");
    else if (key == "top_logprobs")
      r.top = static_cast<int>(int_arg(v, "top_logprobs", 0, m.model.config().vocab_size));
    else if (key == "seed")
      seed = py::reinterpret_borrow<py::object>(v);
    else
      rest[k] = v;
  }
  r.logprobs = r.logprobs || r.top > 0;
  SamplingOptions o = sampling(m, rest, "Model.generate");
  if (!is_batch(prompt)) {
    if (!seed.is_none()) o.seed = seed_arg(seed, "seed");
    return generate_row(m, prompt, prompt_ids(m, prompt), o, r);
  }
  // Every row is checked before the first is generated.
  std::vector<py::object> rows;
  if (py::isinstance<py::array>(prompt)) {
    const auto a = py::array::ensure(prompt);
    for (py::ssize_t i = 0; i < a.shape(0); ++i) rows.push_back(a[py::int_(i)]);
  } else {
    for (const py::handle row : py::reinterpret_borrow<py::sequence>(prompt))
      rows.push_back(py::reinterpret_borrow<py::object>(row));
  }
  std::vector<std::vector<int>> ids;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string what = "prompt row " + std::to_string(i);
    if (!py::isinstance<py::str>(rows[i]))
      ids.push_back(ids_from(rows[i], what.c_str()));
    else
      ids.push_back(prompt_ids(m, rows[i]));
    try {
      check_generation(m.model.config(), ids.back(), o);
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
  }
  const std::vector<uint64_t> seeds = row_seeds(seed, rows.size());
  py::list out;
  for (size_t i = 0; i < rows.size(); ++i) {
    o.seed = seeds[i];
    out.append(generate_row(m, rows[i], ids[i], o, r));
  }
  return out;
}

void add_generation(py::class_<Model, std::shared_ptr<Model>>& c) {
  // pybind11 keeps a copy of each docstring.
  const std::string generate_doc = sampling_doc(
      "New token ids after the prompt (ids), or the new text (a str prompt); as `gpt2lab sample` draws them. "
      "A batch (a 2-D array, or a list of prompts of any lengths) gives a list, row i as generate(row i, "
      "seed=seed + i) (or seed[i] for a list of seeds). return_logprobs=True: a dict (per row) with 'tokens' "
      "(and 'text' for a str prompt), 'logprobs' of the drawn tokens, and with top_logprobs=N the N most "
      "likely per step as (id, logprob) pairs");
  const std::string stream_doc =
      sampling_doc("An iterator over the new token ids, each drawn when asked for (same tokens as generate)");
  c.def("generate", &generate_call, py::arg("prompt"), generate_doc.c_str());
  c.def(
      "stream",
      [](Model& m, const py::handle& prompt, const py::kwargs& kw) {
        const SamplingOptions o = sampling(m, kw, "Model.stream");
        return std::make_unique<Stream>(m, prompt_ids(m, prompt), o);
      },
      py::arg("prompt"), py::keep_alive<0, 1>(), stream_doc.c_str());
}

// Model.save: the weights and the tokenizer's files are staged together and
// published in one rename, so a tokenizer that cannot be copied leaves the
// old checkpoint as it was and no new folder behind.
void save(Model& m, const py::handle& path, const py::handle& overwrite, const py::handle& tokenizer) {
  const std::string dir = path_arg(path, "Model.save: dir");
  const bool replace = bool_arg(overwrite, "Model.save: overwrite");
  const std::string spec = tokenizer.is_none() ? "" : path_arg(tokenizer, "Model.save: tokenizer");
  const int vocab = m.model.config().vocab_size, block_size = m.model.config().block_size;
  without_gil([&] {
    // save_model says so too, in the CLI's words (--force).
    check(replace || !is_checkpoint_dir(dir),
          "Model.save: '" + dir + "' already holds a model checkpoint; pass overwrite=True to replace it");
    if (!spec.empty()) {
      // A checkpoint whose tokenizer does not fit it could never be sampled.
      const Tokenizer tok = Tokenizer::resolve(spec);
      check(tok.vocab_size() == vocab, "Model.save: tokenizer '" + spec + "' has " + std::to_string(tok.vocab_size()) +
                                           " tokens but the model's vocab_size is " + std::to_string(vocab) +
                                           "; pass the tokenizer it was made for");
    }
    std::function<void(const fs::path&)> with_tokenizer;
    if (!spec.empty())
      with_tokenizer = [&](const fs::path& staging) { write_tokenizer_files(staging, spec, block_size); };
    save_model(dir, m.model, replace, nlohmann::json::object(), with_tokenizer);
  });
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string t = "(";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

// Model.state_dict: every tensor by its Hugging Face name, a float32 copy.
py::dict state_dict(Model& m) {
  py::dict d;
  std::lock_guard lock(m.busy);
  for (const TensorInfo& t : m.model.layout().tensors()) {
    py::array_t<float> a(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
    std::copy(m.model.params() + t.offset, m.model.params() + t.offset + t.numel, a.mutable_data());
    d[py::str(t.name)] = a;
  }
  return d;
}

// Model.named_parameters: (name, read-only view) pairs; each view keeps the
// model alive and shows what load_state_dict writes later.
py::list named_parameters(const std::shared_ptr<Model>& m) {
  py::list out;
  const py::object owner = py::cast(m);
  for (const TensorInfo& t : m->model.layout().tensors()) {
    py::array_t<float> view(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()), m->model.params() + t.offset,
                            owner);
    py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    out.append(py::make_tuple(t.name, view));
  }
  return out;
}

// Model.load_state_dict: every key, shape and dtype is checked before one
// weight is written, so a refused dict leaves the model as it was.
py::dict load_state_dict(Model& m, const py::handle& obj, const py::handle& strict_arg) {
  const bool strict = bool_arg(strict_arg, "load_state_dict: strict");
  if (!py::isinstance<py::dict>(obj))
    throw Error("load_state_dict: expected a dict of name -> array, got " +
                py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  const ParamLayout& layout = m.model.layout();
  std::vector<std::pair<const TensorInfo*, py::array_t<float>>> given;
  py::list unexpected, missing;
  for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(obj)) {
    const std::string key = str_arg(k, "load_state_dict: a key");
    const TensorInfo* t = layout.find(key);
    if (!t) {
      unexpected.append(key);
      continue;
    }
    const py::array a = py::array::ensure(v);
    if (!a) throw Error("load_state_dict: '" + key + "' is not an array");
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (shape != t->shape)
      throw Error("load_state_dict: '" + key + "' has shape " + shape_text(shape) + ", expected " +
                  shape_text(t->shape));
    if (!a.dtype().is(py::dtype::of<float>()))
      throw Error("load_state_dict: '" + key + "' has dtype " + py::str(a.dtype()).cast<std::string>() +
                  ", expected float32 (convert with .astype(numpy.float32))");
    given.emplace_back(t, py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a));
  }
  for (const TensorInfo& t : layout.tensors()) {
    bool found = false;
    for (const auto& g : given) found = found || g.first == &t;
    if (!found) missing.append(t.name);
  }
  if (strict && (py::len(missing) > 0 || py::len(unexpected) > 0)) {
    auto names = [](const py::list& l) { return py::str(", ").attr("join")(l).cast<std::string>(); };
    std::string msg = "load_state_dict(strict=True):";
    if (py::len(missing) > 0) msg += " missing keys: " + names(missing) + ";";
    if (py::len(unexpected) > 0) msg += " unexpected keys: " + names(unexpected) + ";";
    throw Error(msg + " pass strict=False to load the keys that match");
  }
  {
    std::lock_guard lock(m.busy);
    for (const auto& [t, a] : given) std::copy(a.data(), a.data() + t->numel, m.model.params() + t->offset);
  }
  py::dict r;
  r["missing_keys"] = missing;
  r["unexpected_keys"] = unexpected;
  return r;
}

std::shared_ptr<Model> init(const py::kwargs& fields) {
  std::map<std::string, std::string> text;
  uint64_t seed = 1337;
  for (const auto& [k, v] : fields) {
    const std::string key = str_arg(k, "Model.init: a keyword");
    if (key == "seed") {
      seed = seed_arg(v, "Model.init: seed");
      continue;
    }
    const ModelField* f = find_model_field(key);
    check(f != nullptr, "Model.init: unknown field '" + key + "'");
    text[f->key] = model_field_text(*f, json_of(v, key.c_str()));
  }
  const ModelConfig c = config_from_fields(text);
  return without_gil([&] {
    GPT2<float> model(c);
    model.init_weights(seed);
    return std::make_shared<Model>(std::move(model));
  });
}

}  // namespace

void add_model(py::module_& m) {
  py::class_<Stream>(m, "Stream", "Model.stream(): iterate for the next token id")
      .def("__iter__", [](Stream& s) -> Stream& { return s; })
      .def("__next__", &Stream::next);
  py::class_<Model, std::shared_ptr<Model>> c(m, "Model", "A GPT-2 in memory (fp32 weights)");
  c.def_static(
       "load",
       [](const py::handle& path) {
         const std::string dir = path_arg(path, "Model.load: dir");
         return without_gil([&] { return std::make_shared<Model>(load_model(dir), model_directory(dir).string()); });
       },
       py::arg("dir"), "A checkpoint folder, a training run (its latest checkpoint) or a Hugging Face GPT-2 folder")
      .def_static("init", &init,
                  "A new model: the fields of `gpt2lab init` as keywords (n_layer, n_head, n_embd, block_size, "
                  "vocab_size, norm, init, residual_scale, final_norm, embedding_scale) and seed")
      .def_property_readonly("config", [](const Model& m) { return from_json(to_json(m.model.config())); })
      .def_property_readonly("tokenizer",
                             [](Model& m) {
                               m.tokenizer();
                               return m.tok;
                             })
      .def("save", &save, py::arg("dir"), py::kw_only(), py::arg("overwrite") = false,
           py::arg("tokenizer") = py::none(),
           "Writes a checkpoint folder (config.json + model.safetensors, published in one rename); with "
           "tokenizer (\"gpt2\" or a folder) its files go with it, in the same rename")
      .def("forward", &forward, py::arg("ids"), py::kw_only(), py::arg("return_hidden_states") = false,
           py::arg("return_attentions") = false,
           "Logits (float32) of every position: (T, V) for a 1-D input, (B, T, V) for 2-D. With "
           "return_hidden_states or return_attentions, a dict: 'logits'; 'hidden_states', n_layer + 2 arrays "
           "(B, T, C): the embeddings' output, each block's output, then what the LM head reads (ln_f's "
           "output; the last block's without a final norm); 'attentions', n_layer arrays (B, n_head, T, T) of "
           "attention probabilities")
      .def("state_dict", &state_dict,
           "Every parameter by its Hugging Face name (transformer.h.0.attn.c_attn.weight, ...; Conv1D weights "
           "(in, out)) as a float32 numpy copy; lm_head is tied to transformer.wte.weight")
      .def("named_parameters", &named_parameters,
           "(name, array) pairs of state_dict's names: read-only views of the model's weights (no copy)")
      .def("load_state_dict", &load_state_dict, py::arg("state_dict"), py::arg("strict") = true,
           "Copies float32 arrays of state_dict's names and shapes into the model; every key, shape and dtype "
           "is checked before anything is written. strict=True: missing or unexpected keys are an error. "
           "Returns {'missing_keys': [...], 'unexpected_keys': [...]}")
      .def("loss", &loss, py::arg("ids"), py::arg("targets"),
           "Mean next-token cross-entropy; a target of -1 is skipped")
      .def("grad_norms", &grad_norms, py::arg("ids"), py::arg("targets"),
           "Per-layer gradient norms of one batch (the grad-at-init study's measurement) as numpy arrays");
  add_generation(c);
}

}  // namespace gpt2lab::python
