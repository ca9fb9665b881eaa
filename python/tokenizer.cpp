// gpt2lab.Tokenizer: GPT-2's byte-level BPE (or a trained one), as the CLI's
// `tokenize` runs it.
#include <memory>

#include "bindings.h"
#include "gpt2lab/core/thread_count.h"
#include "gpt2lab/tokenizer/tokenizer.h"

namespace gpt2lab::python {
namespace {

py::object ids_out(std::vector<int>&& ids, bool numpy) {
  if (numpy) return ids_array(std::move(ids));
  return py::cast(ids);
}

// Text as Python gives it: str (encoded as UTF-8) or bytes (as they are).
std::string text_of(const py::handle& text, const std::string& name) {
  if (py::isinstance<py::bytes>(text)) return text.cast<std::string>();
  if (!py::isinstance<py::str>(text))
    throw Error(name + ": expected text (str or bytes), got " +
                py::str(py::type::of(text).attr("__name__")).cast<std::string>());
  return utf8_of(text, name);
}

// A list (any iterable) of texts; one str or bytes is a text, not a list
// of one-character texts.
std::vector<std::string> texts_of(const py::handle& texts) {
  if (py::isinstance<py::str>(texts) || py::isinstance<py::bytes>(texts) || !py::hasattr(texts, "__iter__"))
    throw Error("encode_batch: texts must be a list of texts (str or bytes), got " +
                py::str(py::type::of(texts).attr("__name__")).cast<std::string>() + "; encode() takes one text");
  std::vector<std::string> s;
  for (const py::handle x : texts) s.push_back(text_of(x, "encode_batch: texts[" + std::to_string(s.size()) + "]"));
  return s;
}

// The name of one of Python's codec error handlers (what bytes.decode takes).
std::string error_handler(const py::handle& errors) {
  std::string name = str_arg(errors, "decode: errors");
  try {
    py::module_::import("codecs").attr("lookup_error")(name);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_LookupError)) throw;
    throw Error("decode: errors = '" + name +
                "' is not a codec error handler (strict, replace, ignore, backslashreplace, surrogateescape, ...)");
  }
  return name;
}

}  // namespace

void add_tokenizer(py::module_& m) {
  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(m, "Tokenizer",
                                                    "GPT-2's byte-level BPE, bit-identical to tiktoken's gpt2")
      .def_static(
          "load",
          [](const py::handle& spec) {
            return std::make_shared<Tokenizer>(Tokenizer::resolve(path_arg(spec, "Tokenizer.load: spec")));
          },
          py::arg("spec") = "gpt2",
          "\"gpt2\" (GPT-2's files) or a folder with encoder.json + vocab.bpe (or vocab.json + merges.txt)")
      .def(
          "encode",
          [](const Tokenizer& t, const py::handle& text, const py::handle& allow_special, const py::handle& numpy) {
            const std::string s = text_of(text, "encode: text");
            const bool special = bool_arg(allow_special, "encode: allow_special");
            const bool as_array = bool_arg(numpy, "encode: numpy");
            return ids_out(without_gil([&] { return t.encode(s, special); }), as_array);
          },
          py::arg("text"), py::kw_only(), py::arg("allow_special") = false, py::arg("numpy") = false,
          "Token ids of text (str or bytes); <|endoftext|> is the special token only with allow_special")
      .def(
          "encode_batch",
          [](const Tokenizer& t, const py::handle& texts, const py::handle& allow_special, const py::handle& threads,
             const py::handle& numpy) {
            const std::vector<std::string> s = texts_of(texts);
            const bool special = bool_arg(allow_special, "encode_batch: allow_special");
            const int n = static_cast<int>(int_arg(threads, "encode_batch: threads", 0, kMaxThreads));
            const bool as_array = bool_arg(numpy, "encode_batch: numpy");
            auto all = without_gil([&] { return t.encode_batch(s, special, n); });
            py::list out;
            for (auto& ids : all) out.append(ids_out(std::move(ids), as_array));
            return out;
          },
          py::arg("texts"), py::kw_only(), py::arg("allow_special") = false, py::arg("threads") = 0,
          py::arg("numpy") = false,
          "encode() of each text, on `threads` threads (0: all cores; at most 4096, as the CLI's --threads)")
      .def(
          "decode_bytes",
          [](const Tokenizer& t, const py::handle& ids) { return py::bytes(t.decode(ids_from(ids, "decode"))); },
          py::arg("ids"), "The raw bytes the ids stand for")
      .def(
          "decode",
          [](const Tokenizer& t, const py::handle& ids, const py::handle& errors) {
            const std::string handler = error_handler(errors);
            return py::bytes(t.decode(ids_from(ids, "decode"))).attr("decode")("utf-8", handler);
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
