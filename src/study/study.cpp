#include "study/study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/lock.h"
#include "core/python_tool.h"
#include "core/signals.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "gpt2lab/train/progress.h"
#include "gpt2lab/train/trainer.h"
#include "study/analysis.h"
#include "study/budget.h"
#include "study/dataset.h"
#include "study/edge_search.h"
#include "study/finished_run.h"
#include "study/followup.h"
#include "study/grad_at_init.h"
#include "study/jobs.h"
#include "study/ngram_judge.h"
#include "study/plan.h"
#include "study/study_file.h"
#include "study/translation.h"
#include "study/work_item.h"
#include "train/run_dir.h"

namespace gpt2lab {

namespace {

using Json = StudyJson;

constexpr const char* kGradFile = "grad_at_init.json";

std::string seconds_text(double s) {
  char buf[32];
  if (s >= 60)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

class Study {
 public:
  explicit Study(const StudyOptions& o)
      : o_(o), budget_(budget_by_name(o.budget)), jobs_(o.jobs), run_threads_(threads_per_job(o.threads, o.jobs)) {
    check(o.jobs >= 1, "--jobs must be at least 1");
    budget_ = with_seed_count(budget_, o.seeds);
    budget_.bf16 = o.bf16;
    // Whole lines, one at a time, whichever run's thread writes them.
    log_ = [this, log = o.log](const std::string& line) {
      const std::lock_guard lock(log_mutex_);
      if (log) log(line);
    };
  }

  StudySummary run() {
    std::error_code ec;
    out_ = fs::absolute(o_.out).lexically_normal();
    check_study_folder(out_);
    // Checked before anything is created: a refused study leaves no folder.
    check(fs::exists(o_.data, ec), "--data '" + o_.data.string() + "' does not exist");
    const fs::path data_abs = fs::weakly_canonical(o_.data, ec), out_abs = fs::weakly_canonical(out_, ec);
    auto under = [](const fs::path& a, const fs::path& b) {  // a inside (or equal to) b
      return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
    };
    check(!under(data_abs, out_abs) && !under(out_abs, data_abs),
          "--out '" + o_.out.string() + "' and --data '" + o_.data.string() +
              "' overlap; the study writes into --out, so keep them apart");
    fs::create_directories(out_ / "runs", ec);
    check(!ec, "cannot create '" + (out_ / "runs").string() + "': " + ec.message());
    // One study per OUT at a time: a second process would interleave runs
    // and overwrite study.json.
    const DirectoryLock lock(out_, "study");
    // SIGINT/SIGTERM stop the study between steps and phases, never in the
    // middle of a file it writes; a second signal ends it at once.
    set_graceful_stop(true);
    struct Restore {
      ~Restore() { set_graceful_stop(false); }
    } restore;
    remove_study_temp_files(out_);
    set_threads(o_.threads);

    check_study_compatible(out_, budget_);
    data_ = ensure_study_data(o_.data, out_ / "data", budget_.vocab_size, o_.threads, log_);
    unigram_ = unigram_baselines(data_.dir, data_.vocab_size);
    if (std::find(o_.presets.begin(), o_.presets.end(), "translation") != o_.presets.end())
      mt_ = ensure_translation_data(o_.data, o_.catalogs, out_ / "translation-data", budget_, o_.threads, log_);
    open_study_file();

    int searches = 0;
    const std::vector<WorkItem> items = plan_items(&searches);
    check_study_size(items.size());
    log_("study: budget " + budget_.name + ", " + std::to_string(items.size() - searches) + " runs" +
         (searches ? " and " + std::to_string(searches) + " stability-edge searches" : std::string()) + ", " +
         std::to_string(budget_.seeds.size()) + " seeds (" + join_presets() + ") into " + out_.string() +
         (jobs_ > 1 ? ", " + std::to_string(jobs_) + " at a time on " + std::to_string(effective_run_threads()) +
                          " thread(s) each"
                    : std::string()));
    if (!data_.tokenizer.empty()) tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::resolve(data_.tokenizer));
    open_judge();
    analysis_ = std::make_unique<FinishedRunAnalysis>(out_, budget_, data_, tokenizer_.get(), judge_.get(),
                                                      mt_ ? &*mt_ : nullptr,
                                                      unigram_ ? std::optional(unigram_->val) : std::nullopt, log_);

    if (!run_all(items) || !run_followups()) return summary_;  // interrupted
    save_study_file(out_, study_);
    log_("study: " + std::to_string(summary_.ran) + " runs done now, " + std::to_string(summary_.already_done) +
         " found done; " + std::to_string(summary_.diverged) + " diverged; results in " + (out_ / kStudyFile).string());
    if (o_.report) {
      log_("study: drawing the report (tools/report)");
      summary_.report_written = run_report(out_, &summary_.report_message);
      if (summary_.report_written)
        log_("study: report in " + (out_ / "report.md").string() + " and report.html");
      else
        log_("study: no report: " + summary_.report_message);
    }
    return summary_;
  }

  // Every preset's work items in preset order; *searches counts the lr-edge
  // searches among them.
  std::vector<WorkItem> plan_items(int* searches) {
    std::vector<WorkItem> items;
    for (const auto& p : o_.presets) {
      if (p == "lr-edge") {
        for (EdgeSpec& e : plan_edges(budget_, data_, run_threads_)) {
          items.emplace_back(std::move(e));
          ++*searches;
        }
      } else if (p == "translation") {
        for (RunSpec& r : plan_translation(budget_, mt_->pairs, mt_->corpus, (out_ / "runs").string(), run_threads_))
          items.emplace_back(std::move(r));
      } else {
        for (RunSpec& r : plan_preset(p, budget_, data_, (out_ / "runs").string(), run_threads_))
          items.emplace_back(std::move(r));
      }
      if (p == "atlas")
        for (EdgeSpec& e : plan_atlas_edges(budget_, data_, run_threads_)) {
          items.emplace_back(std::move(e));
          ++*searches;
        }
      summary_.planned = static_cast<int>(items.size());
    }
    return items;
  }

  // The runs planned from earlier results (study/followup.h), once those
  // are in; false when a signal interrupted them.
  bool run_followups() {
    std::vector<WorkItem> more;
    {
      const std::lock_guard lock(mutex_);
      for (RunSpec& r : plan_followups(o_.presets, budget_, data_, (out_ / "runs").string(), run_threads_, study_))
        more.emplace_back(std::move(r));
    }
    if (more.empty()) return true;
    log_("study: " + std::to_string(more.size()) + " runs planned from the study's own results");
    return run_all(more);
  }

  // Runs (or skips, when found done) every planned item, --jobs at a time,
  // logging an ETA for the whole study from the work measured so far; false
  // when a signal interrupted it.
  bool run_all(const std::vector<WorkItem>& items) {
    eta_ = Eta{};
    for (const WorkItem& w : items) eta_.cost_left += item_cost(w);
    // OpenBLAS's thread count is process-wide: set before the workers start,
    // which then set it again to the same number (and their own OpenMP one).
    set_threads(run_threads_);
    run_jobs(
        {items.size(), jobs_, prerequisites(items)}, [this] { set_threads(run_threads_); },
        [&](size_t i) { run_item(items, i); }, [] { return stop_requested(); });
    std::vector<std::string> names(items.size());
    std::transform(items.begin(), items.end(), names.begin(), item_name);
    order_records(study_, names);
    if (stop_requested()) summary_.interrupted = true;
    if (!summary_.interrupted) return true;
    save_study_file(out_, study_);
    log_("study: interrupted; rerun the same command to carry on (finished runs are kept)");
    return false;
  }

  // A fine-tuning waits for its pre-training run; everything else is
  // independent (an lr-edge search is one item, its probes in order).
  static std::vector<std::optional<size_t>> prerequisites(const std::vector<WorkItem>& items) {
    std::vector<std::optional<size_t>> after(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const auto* r = std::get_if<RunSpec>(&items[i]);
      if (!r || r->kind != RunKind::train || r->train.init_from.empty()) continue;
      const fs::path from = fs::path(r->train.init_from).lexically_normal();
      for (size_t j = 0; j < i; ++j)
        if (const auto* p = std::get_if<RunSpec>(&items[j]); p && fs::path(p->train.out).lexically_normal() == from)
          after[i] = j;
    }
    return after;
  }

  void run_item(const std::vector<WorkItem>& items, size_t i) {
    const std::string tag =
        "[" + std::to_string(i + 1) + "/" + std::to_string(items.size()) + "] " + item_name(items[i]);
    const auto t0 = std::chrono::steady_clock::now();
    double measured = 0;  // the cost of the work done now (not found done)
    if (const auto* e = std::get_if<EdgeSpec>(&items[i])) {
      RunSpec probe;
      probe.train = e->train;
      measured = run_cost(probe) * run_edge(*e, tag);
    } else if (const auto& r = std::get<RunSpec>(items[i]); r.kind == RunKind::grad_at_init) {
      measured = do_grad_at_init(r, tag) ? run_cost(r) : 0;
    } else {
      measured = do_train(r, tag) ? run_cost(r) : 0;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::lock_guard lock(mutex_);
    eta_.cost_left -= item_cost(items[i]);
    ++eta_.ended;
    if (measured <= 0) return;
    eta_.cost_done += measured;
    eta_.seconds_done += seconds;  // one run's time: jobs_ of them pass at once
    if (eta_.ended < items.size())
      log_("study: about " + seconds_text(eta_.seconds_done / eta_.cost_done * eta_.cost_left / jobs_) +
           " left for the study (" + std::to_string(items.size() - eta_.ended) + " items; lr-edge searches estimated)");
  }

  // One lr-edge search: replays the outcomes recorded so far, runs the next
  // probe, and repeats until the search is done (or a signal stops it).
  // Each probe the replay reads is read back from its folder first, once.
  // Returns the probes this call trained.
  int run_edge(const EdgeSpec& e, const std::string& tag) {
    const std::string runs_dir = (out_ / "runs").string();
    std::set<std::string> checked;
    int trained = 0;
    for (;;) {
      std::optional<double> next;
      std::vector<RunSpec> unchecked;
      {
        const std::lock_guard lock(mutex_);
        const auto outcome = [&](double lr) { return probe_outcome(study_, edge_probe(e, lr, runs_dir).name); };
        const EdgeSearch s =
            e.exhaustive ? scan_grid(e.grid, outcome) : search_edge(e.grid, e.start, e.refine, outcome);
        record_edge(e, s);
        next = s.next;
        for (double lr : s.probed)
          if (RunSpec r = edge_probe(e, lr, runs_dir); next != lr && checked.insert(r.name).second)
            unchecked.push_back(std::move(r));
      }
      for (const RunSpec& r : unchecked) recheck_probe(r, tag + " lr " + nlohmann::json(r.train.schedule.lr).dump());
      if (!unchecked.empty()) continue;  // replayed again from what the folders hold
      if (!next || stop_requested()) break;
      const RunSpec probe = edge_probe(e, *next, runs_dir);
      checked.insert(probe.name);
      trained += do_train(probe, tag + " lr " + nlohmann::json(*next).dump());
    }
    const std::lock_guard lock(mutex_);
    save_study_file(out_, study_);
    return trained;
  }

  // A probe study.json holds finished is read back like a fixed run found
  // done (its outcome from its metrics); one whose folder no longer holds
  // it runs again, where the search once trusted study.json alone.
  void recheck_probe(const RunSpec& r, const std::string& tag) {
    check_planned_config(r);
    const std::string status = run_state(out_ / "runs" / r.name).first;
    if (status == "completed" || status == "diverged") return kept_run(r, tag, status);
    const std::lock_guard lock(mutex_);
    Json& rec = run_record(study_, r.name);
    rec.erase("status");
    rec.erase("outcome");
    log_(tag + ": recorded as finished, but its folder holds no finished run: it runs again");
  }

  // The caller holds mutex_.
  void record_edge(const EdgeSpec& e, const EdgeSearch& s) {
    Json rec = Json::object();
    rec["name"] = e.name;
    rec["preset"] = e.preset;
    rec["setting"] = e.variables;
    rec["grid"] = e.grid;
    rec["start"] = e.grid[e.start];
    rec["refine"] = e.refine;
    rec["exhaustive"] = e.exhaustive;
    Json probes = Json::array();
    const std::string runs_dir = (out_ / "runs").string();
    for (double lr : s.probed) {
      if (s.next && lr == *s.next) break;
      const RunSpec r = edge_probe(e, lr, runs_dir);
      probes.push_back({{"lr", lr}, {"trains", probe_outcome(study_, r.name).value_or(false)}, {"run", r.name}});
    }
    rec["probes"] = probes;
    rec["edge"] = s.edge ? Json(*s.edge) : Json(nullptr);
    rec["failed"] = s.failed ? Json(*s.failed) : Json(nullptr);
    rec["complete"] = !s.next.has_value();
    put_edge_record(study_, std::move(rec));
  }

 private:
  std::string join_presets() const {
    std::string s;
    for (const auto& p : o_.presets) s += (s.empty() ? "" : ", ") + p;
    return s;
  }

  nlohmann::json data_json() const {
    return {{"dir", path_in_study(out_, data_.dir)},
            {"tokenizer", path_in_study(out_, data_.tokenizer)},
            {"tokenizer_identity", data_.tokenizer_identity},
            {"vocab_size", data_.vocab_size}};
  }

  // The fluency judge, built from the train split when the study samples
  // text, with its calibration on the val split in study.json and in
  // judge.json (the report checks the one against the other).
  void open_judge() {
    if (!tokenizer_ || budget_.fluency_samples <= 0) return;
    judge_ = std::make_unique<NgramJudge>(NgramJudge::from_dataset(data_.dir, data_.vocab_size));
    study_["judge"] = judge_->calibration(data_.dir, budget_.fluency_samples, budget_.fluency_tokens,
                                          budget_.sample_temperature, budget_.sample_top_k, budget_.seeds.front());
    write_file_atomic(out_ / "judge.json", study_["judge"].dump(2) + "\n");
  }

  // Loads OUT/study.json (or starts one) and stamps this session's settings.
  void open_study_file() {
    study_ = gpt2lab::open_study_file(out_, budget_.name, data_.tokenizer_identity);
    if (const std::string note = register_rules(out_, study_); !note.empty()) log_(note);
    study_["budget"] = to_json(budget_);
    study_["copies_kept"] = true;  // measures.json and judge.json: the report requires them (tools/report/checks.py)
    study_["data"] = data_json();
    relative_run_paths(study_, out_);
    study_["baselines"] = baselines_json(unigram_, data_.vocab_size);
    study_["threads"] = o_.threads > 0 ? o_.threads : hardware_threads();
    // This session's; each run records its own thread count.
    study_["jobs"] = jobs_;
    study_["threads_per_run"] = effective_run_threads();
    if (!o_.command.empty()) study_["command"] = o_.command;
    Json presets = study_.contains("presets") ? study_["presets"] : Json::array();
    for (const auto& p : o_.presets)
      if (std::find(presets.begin(), presets.end(), Json(p)) == presets.end()) presets.push_back(p);
    Json ordered = Json::array();
    for (const PresetInfo& p : study_presets())
      if (std::find(presets.begin(), presets.end(), Json(p.name)) != presets.end()) ordered.push_back(p.name);
    study_["presets"] = ordered;
    if (mt_) study_["translation_data"] = translation_data_record(mt_->summary, out_);
  }

  // Returns true when it measured now (false: found done).
  bool do_grad_at_init(const RunSpec& r, const std::string& tag) {
    const fs::path dir = out_ / "runs" / r.name;
    const fs::path file = dir / kGradFile;
    std::error_code ec;
    auto done = read_json_if_exists(file);
    std::string bad, restored;  // what an edited result lacks: measured again
    {
      const std::lock_guard lock(mutex_);
      Json& rec = run_record(study_, r.name);
      restored = plan_differs_note(rec, r.preset, r.variables, "completed");
      // A committed study (docs/study/v3) keeps the result in study.json only,
      // without the run's folder (one without its file measures again).
      if (!done && !fs::exists(dir, ec) && rec.value("status", "") == "completed" && rec.contains("result") &&
          rec["result"].is_object() && rec.value("config", Json()) == Json(to_json(r.gai)))
        done = nlohmann::json(rec["result"]);
      rec["preset"] = r.preset;
      rec["kind"] = "grad-at-init";
      rec["variables"] = r.variables;
      rec["config"] = to_json(r.gai);
      rec["dir"] = "runs/" + r.name;
      bad = done ? grad_result_problem(*done, r.gai.model.n_layer) : "";
      if (done && bad.empty()) {
        ++summary_.already_done;
        rec["status"] = "completed";
        rec["result"] = *done;
        log_(tag + ": done before, kept" + restored);
        return false;
      }
    }
    if (!bad.empty()) log_(tag + ": its recorded result is unusable (field '" + bad + "'): measured again");
    const auto t0 = std::chrono::steady_clock::now();
    const InitGradients g =
        measure_init_gradients(r.gai.model, data_.dir, r.gai.batch_size, r.gai.seq_len, r.gai.batches, r.gai.seed);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::json result = to_json(g);
    result["seconds"] = secs;
    fs::create_directories(dir);
    write_file_atomic(file, result.dump(2) + "\n");
    {
      const std::lock_guard lock(mutex_);
      Json& rec = run_record(study_, r.name);
      rec["status"] = "completed";
      rec["result"] = result;
      rec["threads"] = effective_run_threads();
      ++summary_.ran;
      save_study_file(out_, study_);
    }
    const int L = r.gai.model.n_layer;
    char buf[160];
    std::snprintf(buf, sizeof buf, ": loss %.3f, FFN grad norm layer 1 %.3g, layer %d %.3g (%s)", g.loss, g.ffn.front(),
                  L, g.ffn.back(), seconds_text(secs).c_str());
    log_(tag + buf);
    return true;
  }

  // The trainer's errors speak of its own flags (--out, --steps), which a
  // study's user never passed: they are said of the run and its folder.
  template <class F>
  auto run_in_study(const RunSpec& r, F&& f) {
    try {
      return f();
    } catch (const Error& e) {
      throw Error("study run '" + r.name + "' (" + (out_ / "runs" / r.name).string() + "): " + e.what() +
                  " [if the run's folder was edited or damaged, remove it and rerun: the study trains that run again]");
    }
  }

  // Returns true when it trained now (also when a signal cut the run short).
  bool do_train(const RunSpec& r, const std::string& tag) {
    const fs::path dir = out_ / "runs" / r.name;
    check_planned_config(r);
    const auto [status, resume] = run_state(dir);
    if (status == "completed" || status == "diverged") {
      kept_run(r, tag, status);
      return false;
    }
    {
      const std::lock_guard lock(mutex_);
      describe(r, run_record(study_, r.name));
    }
    if (!r.train.init_from.empty() && !resume && !pretrained(r, tag)) return false;
    TrainOptions t = r.train;
    t.resume = resume;
    t.force = !resume;  // a folder without config.json holds nothing to keep
    t.quiet = o_.quiet;
    const std::string init =
        t.init_from.empty() ? "init " + std::string(to_string(t.model.init)) + (t.model.residual_scale ? "+scale" : "")
                            : "from " + fs::path(t.init_from).filename().string();
    log_(tag + (resume ? ": resuming" : ": training") + " (L" + std::to_string(t.model.n_layer) + " C" +
         std::to_string(t.model.n_embd) + ", " + norm_label(t.model) + ", " + init + ", lr " +
         nlohmann::json(t.schedule.lr).dump() + ", warmup " + std::to_string(t.schedule.warmup) + ", " +
         std::to_string(t.steps) + " steps)");
    const auto t0 = std::chrono::steady_clock::now();
    // Per-step lines of runs side by side would interleave: --jobs > 1 shows
    // the study's own lines only.
    const bool steps_shown = !t.quiet && jobs_ == 1;
    TrainResult result =
        run_in_study(r, [&] { return train(t, steps_shown ? stderr_progress(t.log_every) : ProgressFn{}); });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Json analysis;
    if (result.status != "interrupted") analysis = analysis_->analyse(r, result.status);
    std::string what;
    {
      const std::lock_guard lock(mutex_);
      Json& rec = run_record(study_, r.name);
      rec["seconds"] = rec.value("seconds", 0.0) + secs;
      rec["threads"] = effective_run_threads();
      ++summary_.ran;
      if (result.status == "interrupted") {
        rec["status"] = "interrupted";
        rec["outcome"] = outcome_from_metrics(dir, "interrupted");
        summary_.interrupted = true;
        what = "interrupted at step " + std::to_string(result.steps_done);
      } else {
        if (result.status == "diverged") ++summary_.diverged;
        set_analysis(rec, analysis);
        what = result_text(result, rec["outcome"]) + " in " + seconds_text(secs);
        save_study_file(out_, study_);  // may add a key to study_, which moves the records: rec is done
      }
    }
    log_(tag + ": " + what);
    return true;
  }

  // A run found finished on disk: its record is read back from its folder
  // (FinishedRunAnalysis::reread).
  void kept_run(const RunSpec& r, const std::string& tag, const std::string& status) {
    Json recorded;
    std::string restored;
    {
      const std::lock_guard lock(mutex_);
      Json& rec = run_record(study_, r.name);
      restored = plan_differs_note(rec, r.preset, r.variables);
      describe(r, rec);
      ++summary_.already_done;
      if (status == "diverged") ++summary_.diverged;
      recorded = rec;
    }
    const FinishedRunAnalysis::Reread fix = analysis_->reread(r, status, recorded);
    if (!fix.fields.empty()) {
      const std::lock_guard lock(mutex_);
      set_analysis(run_record(study_, r.name), fix.fields);
    }
    log_(tag + ": " + status + " before, kept" + fix.note + restored);
  }

  void check_planned_config(const RunSpec& r) {
    const std::lock_guard lock(mutex_);
    check_recorded_config(study_, r.name, planned_config(r), out_ / kStudyFile);
  }

  Json planned_config(const RunSpec& r) const { return planned_run_config(to_json(r.train), out_); }

  void describe(const RunSpec& r, Json& rec) const {
    rec["preset"] = r.preset;
    rec["kind"] = "train";
    rec["variables"] = r.variables;
    rec["config"] = planned_config(r);
    rec["dir"] = "runs/" + r.name;
    rec["metrics"] = "runs/" + r.name + "/" + run_dir::kMetrics;
  }

  static std::string result_text(const TrainResult& result, const Json& oc) {
    std::string what = result.status;
    if (result.status == "diverged")
      what += " at step " + oc.value("diverged_at", nlohmann::json(-1)).dump() + " (" + result.reason + ")";
    char buf[96];
    if (result.status == "completed" && oc.contains("val_loss")) {
      std::snprintf(buf, sizeof buf, ", val loss %.3f (ppl %.1f)", oc["val_loss"].get<double>(),
                    oc["val_ppl"].get<double>());
      what += buf;
    }
    return what;
  }

  // A fine-tuning starts from a completed pre-training run only; otherwise
  // it is recorded as skipped (and retried when the study is rerun).
  bool pretrained(const RunSpec& r, const std::string& tag) {
    const auto res = run_dir::read_result(r.train.init_from);
    const std::string status = res && res->contains("status") && (*res)["status"].is_string()
                                   ? (*res)["status"].get<std::string>()
                                   : "missing";
    if (status == "completed") return true;
    const std::string note =
        "its pre-training run " + fs::path(r.train.init_from).filename().string() + " is " + status;
    {
      const std::lock_guard lock(mutex_);
      Json& rec = run_record(study_, r.name);
      rec["status"] = "skipped";
      rec["note"] = note;
      save_study_file(out_, study_);
    }
    log_(tag + ": skipped (" + note + ")");
    return false;
  }

  const StudyOptions& o_;
  Budget budget_;
  std::function<void(const std::string&)> log_;
  fs::path out_;
  StudyData data_;
  Json study_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<NgramJudge> judge_;
  std::optional<UnigramBaselines> unigram_;
  std::optional<TranslationStudyData> mt_;
  std::unique_ptr<FinishedRunAnalysis> analysis_;  // once the data is ready
  StudySummary summary_;
  int jobs_;
  int run_threads_;  // each run's, as planned (0: every core)
  // Guards study_, summary_ and eta_ while workers run; log_mutex_ is taken
  // inside it, never around it.
  std::mutex mutex_, log_mutex_;
  struct Eta {
    double cost_left = 0, cost_done = 0, seconds_done = 0;
    size_t ended = 0;
  } eta_;

  int effective_run_threads() const { return run_threads_ > 0 ? run_threads_ : hardware_threads(); }
};

}  // namespace

StudySummary run_study(const StudyOptions& options) {
  check(!options.out.empty(), "--out is required");
  check(!options.presets.empty(), "no preset given");
  Study s(options);
  return s.run();
}

// The report package, run as `python3 DIR OUT`.
bool run_report(const fs::path& out, std::string* message) {
  const fs::path script = python_tool("report", "GPT2LAB_REPORT_SCRIPT");
  if (run_python_tool(script, {out.string()}, message)) return true;
  // The runs are complete either way: say so with the tool's own message.
  *message = "the report was not drawn: " + *message;
  return false;
}

}  // namespace gpt2lab
