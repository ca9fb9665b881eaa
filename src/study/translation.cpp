#include "study/translation.h"

#include "core/documents.h"
#include "core/file.h"
#include "core/json.h"
#include "data/prepare.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "study/dataset.h"
#include "tokenizer/sha256.h"
#include "tokenizer/trainer.h"
#include "translation/dataset.h"
#include "translation/translate.h"

namespace gpt2lab {

namespace {

// What the cache was built from; equal JSON = the same data.
nlohmann::json source_record(const std::vector<fs::path>& docs, const PreparedPairs& pp, const Budget& b) {
  Sha256 corpus;
  for (const auto& p : docs) corpus.update(p.string() + "\n" + sha256_file(p.string()) + "\n");
  Sha256 catalogs;
  for (const auto& c : pp.catalogs) catalogs.update(c.value("file", "") + "\n" + c.value("sha256", "") + "\n");
  return {{"corpus_documents", docs.size()}, {"corpus_sha256", corpus.hex_digest()},
          {"catalogs", pp.files.size()},     {"catalogs_sha256", catalogs.hex_digest()},
          {"vocab_size", b.vocab_size},      {"target", b.mt.target},
          {"valid_pairs", b.mt.valid_pairs}, {"test_pairs", b.mt.test_pairs},
          {"max_tokens", b.mt.max_tokens}};
}

// The BPE's training text: every corpus document, and the train split's
// sources and targets (one document per 1,000 pairs).
std::vector<std::string> bpe_documents(const std::vector<fs::path>& docs, const PairSplit& split) {
  std::vector<std::string> texts;
  texts.reserve(docs.size() + split.train.size() / 1000 + 1);
  for (const auto& p : docs) texts.push_back(read_file(p, kMaxTextFileBytes));
  std::string chunk;
  for (size_t i = 0; i < split.train.size(); ++i) {
    chunk += split.train[i].source + "\n" + split.train[i].target + "\n";
    if ((i + 1) % 1000 == 0 || i + 1 == split.train.size()) {
      texts.push_back(std::move(chunk));
      chunk.clear();
    }
  }
  return texts;
}

StudyData study_data(const fs::path& dir, const fs::path& tok_dir, const Tokenizer& tok) {
  StudyData d;
  d.dir = dir.string();
  d.tokenizer = tok_dir.string();
  d.tokenizer_identity = tok.identity();
  d.vocab_size = tok.vocab_size();
  return d;
}

void build(const std::vector<fs::path>& docs, const fs::path& corpus, const PreparedPairs& pp,
           const TranslationPrepareOptions& po, const fs::path& out_dir, const Budget& b, int threads,
           const std::function<void(const std::string&)>& log) {
  const fs::path tok_dir = out_dir / "tokenizer";
  log("study: translation: training a " + std::to_string(b.vocab_size) + "-token BPE on the corpus and " +
      std::to_string(pp.split.train.size()) + " train pairs");
  save_bpe(train_bpe(bpe_documents(docs, pp.split), b.vocab_size, threads), tok_dir, /*force=*/true);
  const Tokenizer tok = Tokenizer::load(tok_dir);
  TranslationPrepareOptions o = po;
  o.tokenizer = tok_dir.string();
  o.out = out_dir / "pairs";
  o.force = true;  // the study's own cache folder, redone after a crash
  const TranslationSummary s = write_translation_dataset(pp, o, tok);
  PrepareOptions p;
  p.inputs = {corpus};
  p.tokenizer = tok_dir.string();
  p.out = out_dir / "corpus";
  p.threads = threads;
  p.force = true;
  const PrepareSummary cs = prepare_dataset(p);
  log("study: translation: " + std::to_string(s.train_pairs) + " train / " + std::to_string(s.valid_pairs) +
      " valid / " + std::to_string(s.test_pairs) + " test pairs (" + std::to_string(s.train_tokens) +
      " train tokens); corpus " + std::to_string(cs.train_tokens) + " train tokens");
}

}  // namespace

TranslationStudyData ensure_translation_data(const fs::path& corpus_arg, const std::vector<fs::path>& catalogs,
                                             const fs::path& out_dir, const Budget& b, int threads,
                                             const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  const fs::path corpus = fs::absolute(corpus_arg).lexically_normal();
  check(!fs::exists(corpus / "train.bin", ec),
        "the translation preset pre-trains on a text corpus with its own tokenizer, and --data '" +
            corpus_arg.string() + "' is a prepared dataset; pass the text folder it came from (e.g. data/sotu)");
  const std::vector<fs::path> docs = list_documents({corpus});
  check(!docs.empty(), "the translation preset pre-trains on a text corpus, and --data '" + corpus_arg.string() +
                           "' holds no text files; pass a folder of text (the default corpus: data/sotu)");
  TranslationPrepareOptions po;
  po.catalogs = catalogs;
  po.target = b.mt.target;
  po.valid_pairs = b.mt.valid_pairs;
  po.test_pairs = b.mt.test_pairs;
  po.max_tokens = b.mt.max_tokens;
  // Lengths in GPT-2 tokens: the split must not depend on the BPE trained
  // from it.
  const PreparedPairs pp = collect_translation_pairs(po, Tokenizer::resolve("gpt2"));
  const nlohmann::json source = source_record(docs, pp, b);
  const fs::path source_file = out_dir / "source.json";
  const std::vector<std::string> parts = {"tokenizer", "pairs", "corpus"};
  // The pairs and the corpus as built (an edited corpus shard was taken
  // by a rerun); a cache from before the digests is built again, the same.
  if (!cache_holds(source_file, source, "another corpus, catalog set or budget") || !cache_digests_kept(out_dir)) {
    fs::create_directories(out_dir);
    build(docs, corpus, pp, po, out_dir, b, threads, log);
    keep_cache_digests(out_dir, parts);
    write_file_atomic(source_file, source.dump(2) + "\n");  // last: the cache is complete
  }
  check_cache_digests(out_dir, parts);
  const fs::path tok_dir = out_dir / "tokenizer";
  const Tokenizer tok = Tokenizer::load(tok_dir);
  TranslationStudyData d;
  d.pairs = study_data(out_dir / "pairs", tok_dir, tok);
  d.corpus = study_data(out_dir / "corpus", tok_dir, tok);
  const fs::path meta_file = out_dir / "pairs" / "meta.json";
  const nlohmann::json meta = read_json_file(meta_file);
  // Copied into study.json for the report: each field of the type prepare wrote.
  const auto field_is = [&](const char* key, bool array) {
    const bool ok = meta.is_object() && (!meta.contains(key) || (array ? meta[key].is_array() : meta[key].is_object()));
    check(ok, meta_file.string() + ": field '" + key + "' must be " + (array ? "an array" : "an object") +
                  " (edited or damaged?): delete '" + out_dir.string() + "' and rerun, the study rebuilds it");
  };
  for (const char* key : {"pairs", "tokens", "cleaning", "translation"}) field_is(key, false);
  field_is("packages", true);
  d.summary = {{"dir", d.pairs.dir},
               {"corpus_dir", d.corpus.dir},
               {"tokenizer", tok.identity()},
               {"pairs", meta.value("pairs", nlohmann::json::object())},
               {"tokens", meta.value("tokens", nlohmann::json::object())},
               {"cleaning", meta.value("cleaning", nlohmann::json::object())},
               {"catalogs", pp.files.size()},
               {"packages", meta.value("packages", nlohmann::json::array())},
               {"translation", meta.value("translation", nlohmann::json::object())}};
  return d;
}

nlohmann::json translation_outcome(const fs::path& checkpoint, const TranslationStudyData& data, const Budget& b,
                                   const fs::path& hyp_file) {
  TranslateOptions o;
  o.limit = b.mt.test_pairs;
  const TranslationEval e = evaluate_translation(checkpoint, data.pairs.dir, "test", o);
  const nlohmann::ordered_json all = to_json(e, checkpoint, data.pairs.dir);
  write_file_atomic(hyp_file, all.dump(2) + "\n");
  nlohmann::json examples = nlohmann::json::array();
  for (size_t i = 0; i < e.pairs.size() && i < 5; ++i)
    examples.push_back(
        {{"source", e.pairs[i].source}, {"reference", e.pairs[i].target}, {"hypothesis", e.hypotheses[i]}});
  nlohmann::json beam = nullptr;
  if (b.mt.beam > 1) {
    o.beam = b.mt.beam;
    const TranslationEval eb = evaluate_translation(checkpoint, data.pairs.dir, "test", o);
    for (size_t i = 0; i < examples.size(); ++i) examples[i]["hypothesis_beam"] = eb.hypotheses[i];
    beam = {{"width", o.beam},
            {"bleu", eb.bleu.score},
            {"chrf", eb.chrf.score},
            {"hit_length_cap", eb.hit_length_cap},
            {"seconds", eb.seconds}};
  }
  return {{"bleu", e.bleu.score},
          {"beam", beam},
          {"chrf", e.chrf.score},
          {"bleu_precisions", e.bleu.precisions},
          {"brevity_penalty", e.bleu.brevity_penalty},
          {"pairs", e.pairs.size()},
          {"hit_length_cap", e.hit_length_cap},
          {"seconds", e.seconds},
          {"hypotheses", hyp_file.filename().string()},
          {"examples", examples}};
}

}  // namespace gpt2lab
