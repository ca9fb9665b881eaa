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

py::array_t<float> forward(Model& m, const py::handle& ids) {
  const Batch b = batch_of(ids, "forward");
  const int V = m.model.config().vocab_size, Vp = m.model.config().padded_vocab_size();
  std::vector<py::ssize_t> shape = {b.B, b.T, V};
  if (b.one_row) shape.erase(shape.begin());
  py::array_t<float> out(shape);
  float* dst = out.mutable_data();
  without_gil([&] {
    std::lock_guard lock(m.busy);
    m.model.forward(b.ids.data(), nullptr, b.B, b.T);
    // The model's rows are padded to Vp; the padding is not a logit.
    const float* src = m.model.logits();
    for (size_t row = 0; row < static_cast<size_t>(b.B) * b.T; ++row)
      std::copy(src + row * Vp, src + row * Vp + V, dst + row * V);
  });
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

void add_generation(py::class_<Model, std::shared_ptr<Model>>& c) {
  // pybind11 keeps a copy of each docstring.
  const std::string generate_doc = sampling_doc(
      "New token ids after the prompt (ids), or the new text (a str prompt); as `gpt2lab sample` draws them");
  const std::string stream_doc =
      sampling_doc("An iterator over the new token ids, each drawn when asked for (same tokens as generate)");
  c.def(
      "generate",
      [](Model& m, const py::handle& prompt, const py::kwargs& kw) -> py::object {
        const SamplingOptions o = sampling(m, kw, "Model.generate");
        const std::vector<int> ids = prompt_ids(m, prompt);
        std::vector<int> out =
            without_gil([&] { return generate(m.model, ids, o, [](int) { return !stop_requested(); }); });
        if (!py::isinstance<py::str>(prompt)) return py::cast(out);
        return py::bytes(m.tokenizer().decode(out)).attr("decode")("utf-8", "replace");
      },
      py::arg("prompt"), generate_doc.c_str());
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
      .def("forward", &forward, py::arg("ids"),
           "Logits (float32) of every position: (T, V) for a 1-D input, (B, T, V) for 2-D")
      .def("loss", &loss, py::arg("ids"), py::arg("targets"),
           "Mean next-token cross-entropy; a target of -1 is skipped")
      .def("grad_norms", &grad_norms, py::arg("ids"), py::arg("targets"),
           "Per-layer gradient norms of one batch (the grad-at-init study's measurement) as numpy arrays");
  add_generation(c);
}

}  // namespace gpt2lab::python
