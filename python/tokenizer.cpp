// gpt2lab.Tokenizer: GPT-2's byte-level BPE (or a trained one), as the CLI's
// `tokenize` runs it.
#include <memory>

#include "bindings.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab::python {
namespace {

py::object ids_out(std::vector<int>&& ids, bool numpy) {
  if (numpy) return ids_array(std::move(ids));
  return py::cast(ids);
}

// Text as Python gives it: str (encoded as UTF-8) or bytes (as they are).
std::string text_of(const py::handle& text) {
  if (py::isinstance<py::bytes>(text)) return text.cast<std::string>();
  if (!py::isinstance<py::str>(text)) throw Error("expected text (str or bytes)");
  return text.cast<std::string>();
}

}  // namespace

void add_tokenizer(py::module_& m) {
  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(m, "Tokenizer",
                                                    "GPT-2's byte-level BPE, bit-identical to tiktoken's gpt2")
      .def_static(
          "load", [](const std::string& spec) { return std::make_shared<Tokenizer>(Tokenizer::resolve(spec)); },
          py::arg("spec") = "gpt2",
          "\"gpt2\" (GPT-2's files) or a folder with encoder.json + vocab.bpe (or vocab.json + merges.txt)")
      .def(
          "encode",
          [](const Tokenizer& t, const py::handle& text, bool allow_special, bool numpy) {
            const std::string s = text_of(text);
            return ids_out(without_gil([&] { return t.encode(s, allow_special); }), numpy);
          },
          py::arg("text"), py::kw_only(), py::arg("allow_special") = false, py::arg("numpy") = false,
          "Token ids of text (str or bytes); <|endoftext|> is the special token only with allow_special")
      .def(
          "encode_batch",
          [](const Tokenizer& t, const py::sequence& texts, bool allow_special, int threads, bool numpy) {
            std::vector<std::string> s;
            s.reserve(texts.size());
            for (const py::handle x : texts) s.push_back(text_of(x));
            auto all = without_gil([&] { return t.encode_batch(s, allow_special, threads); });
            py::list out;
            for (auto& ids : all) out.append(ids_out(std::move(ids), numpy));
            return out;
          },
          py::arg("texts"), py::kw_only(), py::arg("allow_special") = false, py::arg("threads") = 0,
          py::arg("numpy") = false, "encode() of each text, on `threads` threads (0: all cores)")
      .def(
          "decode_bytes",
          [](const Tokenizer& t, const py::handle& ids) { return py::bytes(t.decode(ids_from(ids, "decode"))); },
          py::arg("ids"), "The raw bytes the ids stand for")
      .def(
          "decode",
          [](const Tokenizer& t, const py::handle& ids, const std::string& errors) {
            return py::bytes(t.decode(ids_from(ids, "decode"))).attr("decode")("utf-8", errors);
          },
          py::arg("ids"), py::arg("errors") = "replace",
          "The text the ids stand for (a character cut between tokens becomes U+FFFD unless errors says otherwise)")
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("eot_id", &Tokenizer::eot_id)
      .def_property_readonly("name", &Tokenizer::name)
      .def_property_readonly("identity", &Tokenizer::identity)
      .def("__repr__", [](const Tokenizer& t) {
        return "<gpt2lab.Tokenizer " + t.name() + ", " + std::to_string(t.vocab_size()) + " tokens>";
      });
}

}  // namespace gpt2lab::python
