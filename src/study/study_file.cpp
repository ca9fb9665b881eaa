#include "study/study_file.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <utility>

#include "core/file.h"
#include "core/json.h"
#include "core/lock.h"
#include "core/python_tool.h"
#include "gpt2lab/core/error.h"
#include "train/run_dir.h"

namespace gpt2lab {

void check_study_folder(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  check(fs::is_directory(out, ec), "--out '" + out.string() + "' exists and is not a folder");
  if (fs::exists(out / kStudyFile, ec)) return;
  // A committed study (docs/study/v3) keeps study.json gzipped in git.
  check(!fs::exists(out / (std::string(kStudyFile) + ".gz"), ec) &&
            !fs::exists(out / (std::string(kStudyFile) + ".gz.1"), ec),
        "--out '" + out.string() +
            "' holds study.json.gz (or its parts) and no study.json: a study committed packed; run "
            "'python3 tools/study_pack.py --unpack " +
            out.string() + "' first, then this command again");
  auto only = [&](const fs::path& dir, std::initializer_list<const char*> names) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string n = e.path().filename().string();
      bool ok = false;
      for (const char* allowed : names) ok = ok || n == allowed || n.rfind(std::string(allowed) + ".tmp-", 0) == 0;
      if (!ok) return n;
    }
    return std::string();
  };
  // A .gitignore is what a study committed as it runs starts from
  // (docs/study/v3): it says which of the study's files enter git.
  // The rest is what a study writes before its first save of study.json
  // (after its first run): a study killed or stopped by an error before
  // then is rerun on its folder.
  std::string foreign = only(out, {"runs", "data", "translation-data", "judge.json", kLockFile, ".gitignore"});
  if (foreign.empty() && fs::is_directory(out / "data", ec))
    if (const std::string d = only(out / "data", {"source.json", "tokenizer", "dataset", "files.json", "shards.json"});
        !d.empty())
      foreign = "data/" + d;
  if (foreign.empty() && fs::is_directory(out / "translation-data", ec))
    if (const std::string d =
            only(out / "translation-data", {"source.json", "tokenizer", "pairs", "corpus", "files.json"});
        !d.empty())
      foreign = "translation-data/" + d;
  if (!foreign.empty())
    throw Error("--out '" + out.string() + "' holds '" + foreign +
                "' and no study.json: it is not a study folder; the study would write its runs, data and report "
                "there, so choose a new or empty folder");
}

std::string plan_differs_note(const StudyJson& rec, const std::string& preset, const nlohmann::json& variables,
                              const char* status) {
  std::string what;
  if (rec.contains("preset") && rec["preset"] != preset) what = "preset " + rec["preset"].dump();
  if (what.empty() && status && rec.contains("status") && rec["status"] != status)
    what = "status " + rec["status"].dump();
  if (what.empty() && rec.contains("variables") && rec["variables"].is_object())
    for (const auto& [key, value] : variables.items())
      if (rec["variables"].contains(key) && nlohmann::json(rec["variables"][key]) != value) {
        what = "variables." + key + " " + rec["variables"][key].dump();
        break;
      }
  return what.empty() ? "" : " (study.json said " + what + ", not the plan's, edited?: restored)";
}

std::string path_in_study(const fs::path& out, const std::string& path) {
  if (path.empty()) return path;
  const fs::path rel = fs::path(path).lexically_normal().lexically_relative(out);
  return !rel.empty() && *rel.begin() != ".." ? rel.string() : path;
}

namespace {
constexpr const char* kRunPaths[] = {"data", "tokenizer", "init_from"};
}

StudyJson planned_run_config(const nlohmann::json& train_options, const fs::path& out) {
  StudyJson cfg = StudyJson(train_options);
  cfg.erase("out");
  cfg.erase("threads");
  for (const char* path : kRunPaths)
    if (cfg.contains(path) && cfg[path].is_string()) cfg[path] = path_in_study(out, cfg[path].get<std::string>());
  return cfg;
}

StudyJson translation_data_record(const nlohmann::json& summary, const fs::path& out) {
  StudyJson rec(summary);
  for (const char* k : {"dir", "corpus_dir"})
    if (rec.contains(k) && rec[k].is_string()) rec[k] = path_in_study(out, rec[k].get<std::string>());
  return rec;
}

void relative_run_paths(StudyJson& study, const fs::path& out) {
  if (!study.contains("runs") || !study["runs"].is_array()) return;
  for (StudyJson& rec : study["runs"])
    if (rec.is_object() && rec.contains("config") && rec["config"].is_object())
      for (const char* path : kRunPaths)
        if (rec["config"].contains(path) && rec["config"][path].is_string())
          rec["config"][path] = path_in_study(out, rec["config"][path].get<std::string>());
}

void check_recorded_config(const StudyJson& study, const std::string& name, const StudyJson& planned,
                           const fs::path& file) {
  if (!study.contains("runs")) return;
  for (const StudyJson& rec : study["runs"]) {
    if (rec.value("name", "") != name || !rec.contains("config")) continue;
    StudyJson had = rec["config"], now = planned;
    for (const char* path : kRunPaths) {
      had.erase(path);
      now.erase(path);
    }
    if (had == now) return;
    std::string fields;
    for (const auto& [key, value] : now.items())
      if (!had.contains(key) || had[key] != value) fields += (fields.empty() ? "" : ", ") + key;
    throw Error(file.string() + ": run '" + name + "' was recorded with other settings (" +
                (fields.empty() ? "fields removed" : fields) +
                ") than this budget plans; use another --out, or remove the run to redo it");
  }
}

void remove_study_temp_files(const fs::path& out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out, ec))
    if (e.path().filename().string().rfind(std::string(kStudyFile) + ".tmp-", 0) == 0 && !e.is_symlink(ec) &&
        e.is_regular_file(ec))
      fs::remove(e.path(), ec);
}

void check_folder_config(const fs::path& run_dir, const StudyJson& planned) {
  const fs::path file = run_dir / run_dir::kConfig;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return;
  const nlohmann::json cfg = read_json_file(file);
  nlohmann::json want = nlohmann::json::object(), have = nlohmann::json::object();
  for (const auto& [key, value] : planned.items()) {
    if (std::find(std::begin(kRunPaths), std::end(kRunPaths), key) != std::end(kRunPaths)) continue;
    want[key] = nlohmann::json(value);
    have[key] = cfg.is_object() ? cfg.value(key, nlohmann::json()) : nlohmann::json();
  }
  const std::string d = run_dir::first_difference(have, want);
  if (d.empty()) return;
  const nlohmann::json::json_pointer at(d);
  auto text = [&](const nlohmann::json& j) { return j.contains(at) ? j[at].dump() : std::string("missing"); };
  throw Error(file.string() + ": field '" + d.substr(1) + "' is " + text(have) + " but the study plans " + text(want) +
              " for this run: the folder holds another run (copied, moved or edited?); remove the folder and "
              "rerun, the study trains the run again");
}

std::string register_rules(const fs::path& out, StudyJson& study) {
  if (study.contains("rules") || !study["runs"].empty()) return "";  // registered, or runs came first
  // (a name the next study's cleanup of killed temp files removes)
  const fs::path file = out / (std::string(kStudyFile) + ".tmp-rules");
  std::string message;
  std::optional<nlohmann::json> rules;
  if (run_python_tool(python_tool("report", "GPT2LAB_REPORT_SCRIPT"), {"--rules", file.string()}, &message))
    rules = read_json_if_exists(file);
  std::error_code ec;
  fs::remove(file, ec);
  if (rules && rules->is_object() && !rules->empty()) {
    study["rules"] = *rules;
    return "";
  }
  study["rules"] = nullptr;
  study["rules_note"] = "the report tool (tools/report --rules) could not run when the study was created";
  return "study: the verdict rules were not registered in " + std::string(kStudyFile) + " (" +
         (message.empty() ? "the report tool wrote no rules" : message) + ")";
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<nlohmann::json> read_json_if_exists(const fs::path& p, size_t max_bytes) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  try {
    return read_json_file(p, max_bytes);
  } catch (const Error&) {
    return std::nullopt;  // torn by a crash mid-write elsewhere: redo
  }
}

namespace {

// An integer in [lo, hi]: stored unsigned (what a parse of a non-negative
// number gives) or signed; 2^64 - 1 once read back as -1.
bool integer_in(const nlohmann::json& x, int64_t lo, int64_t hi) {
  if (x.is_number_unsigned()) {
    const uint64_t v = x.get<uint64_t>();
    return v <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v) >= lo;  // cast once v <= hi
  }
  return x.is_number_integer() && x.get<int64_t>() >= lo && x.get<int64_t>() <= hi;
}

// Names the field that is not what gpt2lab wrote.
struct FieldCheck {
  const fs::path& p;
  void operator()(bool ok, const std::string& field, const char* what) const {
    check(ok, p.string() + ": field '" + field + "' must be " + what +
                  "; it was edited or damaged: repair it, or use another --out");
  }
};

void validate_budget_and_data(const nlohmann::json& j, const FieldCheck& need) {
  if (j.contains("budget")) {
    const auto& b = j["budget"];
    need(b.is_object(), "budget", "an object");
    need(!b.contains("name") || b["name"].is_string(), "budget.name", "a string");
    need(!b.contains("bf16") || b["bf16"].is_boolean(), "budget.bf16", "true or false");
    need(!b.contains("seed_count") || integer_in(b["seed_count"], kMinSeedCount, kMaxSeedCount), "budget.seed_count",
         "an integer of 3 to 1000, as --seeds takes");
  }
  if (j.contains("data")) {
    need(j["data"].is_object(), "data", "an object");
    const auto& d = j["data"];
    need(!d.contains("tokenizer_identity") || d["tokenizer_identity"].is_string(), "data.tokenizer_identity",
         "a string");
  }
  if (j.contains("presets")) {
    need(j["presets"].is_array(), "presets", "an array");
    for (const auto& x : j["presets"]) need(x.is_string(), "presets", "an array of strings");
  }
}

// A seed index a study can plan (--seeds up to kMaxSeedCount): a huge one
// asked for a --seeds the CLI refuses, and 2^63 - 1 overflowed on + 1.
bool seed_index_ok(const nlohmann::json& holder) {
  if (!holder.is_object() || !holder.contains("seed_index")) return true;
  return integer_in(holder["seed_index"], 0, kMaxSeedCount - 1);
}

void validate_runs(const nlohmann::json& runs, const FieldCheck& need) {
  size_t i = 0;
  std::set<std::string> names;
  for (const auto& r : runs) {
    const std::string f = "runs[" + std::to_string(i++) + "]";
    need(r.is_object(), f, "an object");
    need(r.contains("name") && r["name"].is_string(), f + ".name", "a string");
    need(names.insert(r["name"].get<std::string>()).second, f + ".name", "unique (another run has this name)");
    need(!r.contains("variables") || seed_index_ok(r["variables"]), f + ".variables.seed_index",
         "an integer of 0 to 999");
    need(!r.contains("status") || r["status"].is_string(), f + ".status", "a string");
    need(!r.contains("seconds") || r["seconds"].is_number(), f + ".seconds", "a number");
    for (const char* k : {"outcome", "result", "config", "variables"})
      need(!r.contains(k) || r[k].is_object(), f + "." + k, "an object");
    if (r.contains("outcome"))
      need(!r["outcome"].contains("trains") || r["outcome"]["trains"].is_boolean(), f + ".outcome.trains",
           "true or false");
  }
}

// The lr-edge searches (their probes order the runs) and the second
// stages' selections (a grown study keeps their lr: study/followup.h).
void validate_edges_and_selections(const nlohmann::json& j, const FieldCheck& need) {
  static const nlohmann::json kNone = nlohmann::json::array();
  size_t i = 0;
  for (const auto& e : j.contains("edges") ? j["edges"] : kNone) {
    const std::string f = "edges[" + std::to_string(i++) + "]";
    need(e.is_object() && e.contains("name") && e["name"].is_string(), f, "an object with a string name");
    need(!e.contains("setting") || seed_index_ok(e["setting"]), f + ".setting.seed_index", "an integer of 0 to 999");
    need(!e.contains("probes") || e["probes"].is_array(), f + ".probes", "an array");
    for (const auto& pr : e.contains("probes") ? e["probes"] : kNone)
      need(pr.is_object() && (!pr.contains("run") || pr["run"].is_string()), f + ".probes",
           "an array of objects with a string run");
  }
  if (!j.contains("selections")) return;
  need(j["selections"].is_object(), "selections", "an object");
  for (const auto& [key, sel] : j["selections"].items()) {
    const std::string f = "selections." + key;
    need(sel.is_object(), f, "an object");
    need(!sel.contains("lr") || sel["lr"].is_number() || sel["lr"].is_null(), f + ".lr", "a number or null");
    need(!sel.contains("candidates") || sel["candidates"].is_array(), f + ".candidates", "an array");
    for (const auto& c : sel.contains("candidates") ? sel["candidates"] : kNone)
      need(c.is_object(), f + ".candidates", "an array of objects");
  }
}

}  // namespace

// study.json is ours, but it sits in the user's folder and is read back on
// every rerun, so an edited or damaged one must be an Error naming the field,
// not a JSON type exception from deep inside the study.
void validate_study_file(const nlohmann::json& j, const fs::path& p) {
  const FieldCheck need{p};
  check(j.is_object(), p.string() + ": not a JSON object; it was edited or damaged: repair it, or use another --out");
  need(j.contains("runs") && j["runs"].is_array(), "runs", "an array");
  need(!j.contains("version") || integer_in(j["version"], 0, 999), "version", "an integer of 0 to 999");
  need(!j.contains("edges") || j["edges"].is_array(), "edges", "an array");
  need(!j.contains("rules") || j["rules"].is_object() || j["rules"].is_null(), "rules", "an object or null");
  validate_budget_and_data(j, need);
  validate_runs(j["runs"], need);
  validate_edges_and_selections(j, need);
}

namespace {

// How many seeds the study's runs and lr-edge searches span: the highest
// seed index + 1.
long seeds_held(const nlohmann::json& j) {
  long n = 0;
  const auto scan = [&n](const nlohmann::json& items, const char* key) {
    for (const auto& x : items) {
      if (!x.is_object() || !x.contains(key) || !x[key].is_object()) continue;
      const auto i = x[key].find("seed_index");
      if (i != x[key].end() && i->is_number_integer()) n = std::max(n, i->get<long>() + 1);
    }
  };
  scan(j["runs"], "variables");
  if (j.contains("edges")) scan(j["edges"], "setting");
  return n;
}

// Without --seeds each preset plans the budget's own seeds: a study whose
// preset holds more (its recorded seed_count removed by hand, or a budget
// that planned fewer since) would leave runs out of the plan.
void check_preset_seeds(const nlohmann::json& j, const fs::path& p, const Budget& b) {
  std::map<std::string, long> held;
  const auto scan = [&held](const nlohmann::json& items, const char* key) {
    for (const auto& x : items) {
      if (!x.is_object() || !x.contains("preset") || !x["preset"].is_string() || !x.contains(key) ||
          !x[key].is_object())
        continue;
      const auto i = x[key].find("seed_index");
      if (i != x[key].end() && i->is_number_integer()) {
        long& n = held[x["preset"].get<std::string>()];
        n = std::max(n, i->get<long>() + 1);
      }
    }
  };
  scan(j["runs"], "variables");
  if (j.contains("edges")) scan(j["edges"], "setting");
  for (const auto& [preset, n] : held) {
    const auto plan = static_cast<long>(planned_seeds(b, preset));
    check(n <= plan, p.string() + " holds " + preset + " runs of " + std::to_string(n) + " seeds; without --seeds " +
                         "budget '" + b.name + "' plans " + std::to_string(plan) + "; pass --seeds " +
                         std::to_string(n) + " or more to continue it, or another --out");
  }
}

// --seeds may grow a study (its finished runs keep their seeds), never
// leave runs it holds out of the plan, nor be dropped once given.
void check_seed_count(const nlohmann::json& j, const fs::path& p, const Budget& b) {
  const int count = b.seed_count;
  const long had = j["budget"].value("seed_count", 0L), held = seeds_held(j);
  check(had == 0 || count >= had, p.string() + " holds a study run with --seeds " + std::to_string(had) +
                                      "; pass --seeds " + std::to_string(had) +
                                      " (or more, to add seeds) to continue it, or another --out");
  if (count == 0) check_preset_seeds(j, p, b);
  check(count == 0 || count >= held, p.string() + " holds runs of " + std::to_string(held) + " seeds; --seeds " +
                                         std::to_string(count) + " would plan fewer than it holds; pass --seeds " +
                                         std::to_string(held) + " or more, or another --out");
}

}  // namespace

void check_study_compatible(const fs::path& out, const Budget& b) {
  const fs::path p = out / kStudyFile;
  const auto j = read_json_if_exists(p, kMaxStudyFileBytes);
  if (!j) return;
  validate_study_file(*j, p);
  const long version = j->contains("version") ? (*j)["version"].get<long>() : 1;
  check(version == kStudyVersion, p.string() + " holds a study of format version " + std::to_string(version) +
                                      " (this gpt2lab writes " + std::to_string(kStudyVersion) +
                                      ": seeds, lr-edge); its runs do not mix with new ones, so use another --out");
  if (!j->contains("budget")) return;
  const std::string had = (*j)["budget"].value("name", "");
  check(had == b.name, p.string() + " holds a study with budget '" + had + "', not '" + b.name +
                           "'; use another --out (runs of different sizes do not mix)");
  const bool had_bf16 = (*j)["budget"].value("bf16", false);
  const auto name = [](bool x) { return x ? std::string("bf16 (--bf16)") : std::string("fp32"); };
  check(had_bf16 == b.bf16, p.string() + " holds a study whose runs train in " + name(had_bf16) + ", not " +
                                name(b.bf16) + "; use the same precision to continue it, or another --out");
  check_seed_count(*j, p, b);
}

void check_study_size(size_t planned) {
  constexpr size_t kBytesPerPlanned = size_t{32} << 10;
  check(planned <= kMaxStudyFileBytes / kBytesPerPlanned,
        "this study plans " + std::to_string(planned) + " runs and searches, whose records could pass study.json's " +
            "limit of " + std::to_string(kMaxStudyFileBytes >> 20) + " MiB (at most " +
            std::to_string(kMaxStudyFileBytes / kBytesPerPlanned) + "); use fewer --seeds, or split the presets " +
            "between --out folders");
}

StudyJson open_study_file(const fs::path& out, const std::string& budget, const std::string& tokenizer_identity) {
  const fs::path p = out / kStudyFile;
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    StudyJson study = StudyJson::object();
    study["format"] = "gpt2lab study";
    study["version"] = kStudyVersion;
    study["created"] = now_utc();
    // Every key a save writes exists from the start: adding one to an
    // ordered_json copies its members, and a reference to a run record
    // held across save_study_file read freed memory (ASan, stop 62).
    study["updated"] = study["created"];
    study["runs"] = StudyJson::array();
    return study;
  }
  StudyJson study;
  const std::string text = read_file(p, kMaxStudyFileBytes);  // too large: say so, not "not a study file"
  try {
    check_json_depth(text, p.string());
    study = StudyJson::parse(text, nullptr, false);
  } catch (const Error&) {
    study = StudyJson(nullptr);
  }
  check(!study.is_discarded() && study.is_object() && study.contains("runs"),
        p.string() + " is not a study file; use another --out");
  validate_study_file(study, p);
  const std::string had = study.contains("budget") ? study["budget"].value("name", "") : "";
  check(had == budget, p.string() + " holds a study with budget '" + had + "', not '" + budget +
                           "'; use another --out (runs of different sizes do not mix)");
  const std::string ident = study.contains("data") ? study["data"].value("tokenizer_identity", "") : "";
  check(ident == tokenizer_identity, p.string() + " holds a study on other data (" + ident + ", not " +
                                         tokenizer_identity + "); use another --out, or, if its data/ folder was " +
                                         "edited or damaged, delete that folder and rerun (the study rebuilds it)");
  return study;
}

void save_study_file(const fs::path& out, StudyJson& study) {
  study["updated"] = now_utc();
  write_file_atomic(out / kStudyFile, study.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

StudyJson& run_record(StudyJson& study, const std::string& name) {
  for (auto& rec : study["runs"])
    if (rec.value("name", "") == name) return rec;
  StudyJson rec = StudyJson::object();
  rec["name"] = name;
  study["runs"].push_back(rec);
  return study["runs"].back();
}

std::optional<bool> probe_outcome(const StudyJson& study, const std::string& run) {
  for (const auto& rec : study["runs"])
    if (rec.value("name", "") == run) {
      const std::string status = rec.value("status", "");
      if (status != "completed" && status != "diverged") return std::nullopt;
      return rec.contains("outcome") && rec["outcome"].value("trains", false);
    }
  return std::nullopt;
}

void put_edge_record(StudyJson& study, StudyJson rec) {
  if (!study.contains("edges") || !study["edges"].is_array()) study["edges"] = StudyJson::array();
  for (auto& old : study["edges"])
    if (old.is_object() && old.value("name", "") == rec.value("name", "")) {
      old = std::move(rec);
      return;
    }
  study["edges"].push_back(std::move(rec));
}

void order_records(StudyJson& study, const std::vector<std::string>& items) {
  std::map<std::string, std::pair<size_t, size_t>> rank;
  for (size_t i = 0; i < items.size(); ++i) {
    rank[items[i]] = {i, 0};
    if (!study.contains("edges")) continue;
    for (const auto& e : study["edges"])
      if (e.value("name", "") == items[i] && e.contains("probes"))
        for (size_t k = 0; k < e["probes"].size(); ++k) rank[e["probes"][k].value("run", "")] = {i, k + 1};
  }
  auto sort = [&](StudyJson& list) {
    if (!list.is_array()) return;
    auto& v = list.get_ref<StudyJson::array_t&>();
    std::stable_sort(v.begin(), v.end(), [&](const StudyJson& a, const StudyJson& b) {
      const auto ra = rank.find(a.value("name", "")), rb = rank.find(b.value("name", ""));
      if (ra == rank.end() || rb == rank.end()) return ra == rank.end() && rb != rank.end();
      return ra->second < rb->second;
    });
  };
  sort(study["runs"]);
  if (study.contains("edges")) sort(study["edges"]);
}

}  // namespace gpt2lab
