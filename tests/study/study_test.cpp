// Unit tests of the study harness pieces that need no training: text-quality
// measures, the hidden-unit symmetry measure, UTF-8 sanitizing, the plans.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <set>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/model/gpt2.h"
#include "study/analysis.h"
#include "study/budget.h"
#include "study/edge_search.h"
#include "study/plan.h"
#include "study/text_quality.h"

namespace gpt2lab {
namespace {

TEST(TextQuality, DistinctAndRepetition) {
  const auto w = split_words("The cat saw the CAT\n saw  the cat");
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[4], "cat");
  EXPECT_DOUBLE_EQ(distinct_n(w, 1), 3.0 / 8.0);  // the, cat, saw
  // bigrams: the-cat, cat-saw, saw-the, the-cat, cat-saw, saw-the, the-cat
  EXPECT_DOUBLE_EQ(distinct_n(w, 2), 3.0 / 7.0);
  const TextQuality q = text_quality("the cat saw the cat saw the cat");
  // 4-grams: 5, distinct: the-cat-saw-the, cat-saw-the-cat, saw-the-cat-saw -> 3
  EXPECT_DOUBLE_EQ(q.repeated_4gram_rate, 1.0 - 3.0 / 5.0);
  const TextQuality fresh = text_quality("one two three four five");
  EXPECT_DOUBLE_EQ(fresh.distinct_1, 1.0);
  EXPECT_DOUBLE_EQ(fresh.repeated_4gram_rate, 0.0);
  EXPECT_EQ(text_quality("").words, 0);
  EXPECT_DOUBLE_EQ(text_quality("a b").repeated_4gram_rate, 0.0);
}

TEST(HiddenUnitSpread, ZeroInitIsOneUnitAndNormalIsAllDistinct) {
  ModelConfig c = make_config(2, 2, 32, 16, 64, NormPlacement::pre, InitScheme::zero);
  GPT2<float> zero(c);
  zero.init_weights(1);
  const HiddenUnitSpread z = hidden_unit_spread(zero, 0);
  EXPECT_EQ(z.units, 128);
  EXPECT_EQ(z.distinct_units, 1);
  EXPECT_EQ(z.spread, 0.0);
  EXPECT_EQ(z.relative_spread, 0.0);

  c.init = InitScheme::normal;
  GPT2<float> normal(c);
  normal.init_weights(1);
  const HiddenUnitSpread n = hidden_unit_spread(normal, 1);
  EXPECT_EQ(n.distinct_units, 128);
  EXPECT_NEAR(n.weight_rms, 0.02, 0.002);
  EXPECT_NEAR(n.relative_spread, 1.0, 0.05);  // i.i.d. weights: spread ~ RMS

  // Two units made equal count once.
  const LayerOffsets& o = normal.layout().layers[0];
  float* W = normal.params() + o.c_fc_w;
  for (int r = 0; r < 32; ++r) W[r * 128 + 5] = W[r * 128 + 9];
  normal.params()[o.c_fc_b + 5] = normal.params()[o.c_fc_b + 9];
  EXPECT_EQ(hidden_unit_spread(normal, 0).distinct_units, 127);
  EXPECT_THROW(hidden_unit_spread(normal, 2), Error);
}

TEST(Utf8, InvalidSequencesBecomeReplacementCharacters) {
  EXPECT_EQ(sanitize_utf8("plain"), "plain");
  EXPECT_EQ(sanitize_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(sanitize_utf8("cut \xC3"), "cut \xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(sanitize_utf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(StudyPlan, EveryPresetPlansItsGridOncePerSeedUnderUniqueNames) {
  StudyData d;
  d.dir = "/data";
  d.tokenizer = "tok";
  d.vocab_size = 4096;
  for (const char* name : {"quick", "full", "tiny"}) {
    const Budget b = budget_by_name(name);
    ASSERT_GE(b.seeds.size(), 2u);
    std::set<std::string> names;
    size_t total = 0;
    for (const std::string& p : parse_presets("all")) {
      const auto runs = plan_preset(p, b, d, "/out/runs", 2);
      total += runs.size();
      std::map<std::string, std::set<uint64_t>> seeds_of;  // name without -s<i> -> seeds
      for (const auto& r : runs) {
        names.insert(r.name);
        EXPECT_EQ(r.preset, p);
        const uint64_t seed = r.kind == RunKind::train ? r.train.seed : r.gai.seed;
        EXPECT_EQ(r.variables.at("seed").get<uint64_t>(), seed);
        seeds_of[r.name.substr(0, r.name.rfind("-s"))].insert(seed);
        if (r.kind == RunKind::train) {
          EXPECT_EQ(r.train.out, "/out/runs/" + r.name);
          EXPECT_EQ(r.train.model.vocab_size, 4096);
          EXPECT_EQ(r.train.grad_clip, 0.0);
          EXPECT_GT(r.train.max_loss, std::log(4096.0)) << "divergence: above the initial loss";
          EXPECT_GE(r.train.max_loss_window, 10) << "divergence waits for recovery";
        }
      }
      const std::string preset = p;
      const int count = preset == "grad-at-init" ? b.gai_seed_count
                        : preset == "init"       ? b.init_seed_count
                        : preset == "depth"      ? b.depth_seed_count
                                                 : 0;
      const size_t S = gpt2lab::seeds_of(b, count).size();
      // init's Post-LN selection runs have the budget's seeds (the arms, init's).
      for (const auto& [setting, seeds] : seeds_of)
        EXPECT_EQ(seeds.size(), setting.rfind("init-postsel-", 0) == 0 ? b.seeds.size() : S) << setting;
      size_t expected = 0;
      if (preset == "grad-at-init") expected = b.gai_depths.size() * 2 * 4 * 3;
      if (preset == "norm") expected = 2 * b.norm_warmups.size() * norm_lrs_of(b).size();
      if (preset == "init") expected = 8 * b.init_norms.size();
      if (preset == "depth") expected = b.depths.size() * b.depth_norms.size() * 2;
      const size_t selection = preset == "init" ? b.init_post_sweep.size() * b.seeds.size() : 0;
      EXPECT_EQ(runs.size(), expected * S + selection) << preset;
    }
    EXPECT_EQ(names.size(), total) << "run names are unique in budget " << name;
    const auto edges = plan_edges(b, d, 2);
    EXPECT_EQ(edges.size(), 2 * 2 * b.edge.clips.size() * gpt2lab::seeds_of(b, b.edge.seed_count).size());
  }
  const Budget full = budget_by_name("full");
  EXPECT_EQ(full.seeds.size(), 3u);
  EXPECT_GE(full.norm.steps, 1500);
  const auto norm = plan_preset("norm", full, d, "/o", 0);
  std::set<long> warmups;
  for (const auto& r : norm) warmups.insert(r.train.schedule.warmup);
  EXPECT_EQ(warmups, (std::set<long>{0, full.norm.steps / 4}));
  std::set<double> lrs;
  for (const auto& r : norm) lrs.insert(r.train.schedule.lr);
  EXPECT_GE(lrs.size(), 5u) << "each placement's best lr from a sweep of at least 5 points";
  // Study v3's floors: grad-at-init at n_embd >= 256 with >= 10 seeds;
  // init and depth >= 6 seeds of >= 2,000 steps, depth to 48 layers
  // (Pre-LN); lr-edge probes of >= 1,000 steps on every point of a grid
  // from 2.5e-5.
  EXPECT_GE(full.gai.n_embd, 256);
  EXPECT_GE(gpt2lab::seeds_of(full, full.gai_seed_count).size(), 10u);
  const auto init = plan_preset("init", full, d, "/o", 0);
  EXPECT_EQ(init.size(), 8u * 6 + 4 * 3)
      << "Pre-LN's init schemes at 6 seeds, and Post-LN's selection sweep (its arms follow: StudyFollowup)";
  for (const auto& r : init) {
    EXPECT_GE(r.train.model.n_layer, 24) << "deep enough for the residual scale to matter";
    EXPECT_GE(r.train.steps, 2000);
    if (r.name.rfind("init-pre-gpt2-", 0) == 0) {
      EXPECT_TRUE(r.train.model.residual_scale);
    }
  }
  const auto depth = plan_preset("depth", full, d, "/o", 0);
  std::set<int> depths;
  for (const auto& r : depth) {
    depths.insert(r.train.model.n_layer);
    EXPECT_GE(r.train.steps, 2000);
    EXPECT_EQ(r.train.model.norm, NormPlacement::pre);
  }
  EXPECT_EQ(depths, (std::set<int>{2, 6, 12, 24, 48}));
  EXPECT_EQ(depth.size(), 5u * 2 * 6);
  std::set<std::pair<long, double>> wc;
  for (const EdgeSpec& e : plan_edges(full, d, 0)) {
    wc.insert({e.train.schedule.warmup, e.train.grad_clip});
    EXPECT_TRUE(e.exhaustive);
    EXPECT_GE(e.train.steps, 1000);
    EXPECT_DOUBLE_EQ(e.grid.front(), 2.5e-5);
    const RunSpec probe = edge_probe(e, 1.6e-3, "/o");
    EXPECT_EQ(probe.name, e.name + "-lr1.6e-3");
    EXPECT_EQ(probe.train.schedule.lr, 1.6e-3);
    EXPECT_EQ(probe.train.out, "/o/" + probe.name);
  }
  EXPECT_EQ(wc.size(), 2u) << "warmup {0, long}, no clipping";
  EXPECT_THROW(budget_by_name("huge"), Error);
  EXPECT_THROW(plan_preset("width", full, d, "/o", 0), Error);
}

TEST(StudyPlan, TranslationGrid) {
  StudyData pairs, corpus;
  pairs.dir = "/mt/pairs";
  corpus.dir = "/mt/corpus";
  pairs.vocab_size = corpus.vocab_size = 4096;
  for (const char* name : {"quick", "full", "tiny"}) {
    const Budget b = budget_by_name(name);
    const size_t S = b.seeds.size();
    const auto runs = plan_translation(b, pairs, corpus, "/out/runs", 2);
    const size_t inits = b.mt.scratch_inits.size();
    ASSERT_EQ(runs.size(), (2 + 2 * 2 + 2 * 2 * inits) * S) << name;
    std::set<std::string> names;
    size_t pretrained = 0;
    for (const auto& r : runs) {
      EXPECT_TRUE(names.insert(r.name).second) << r.name;
      EXPECT_EQ(r.preset, "translation");
      const std::string arm = r.variables.at("arm");
      EXPECT_EQ(r.train.out, "/out/runs/" + r.name);
      EXPECT_EQ(r.train.data, arm == "pretrain" ? "/mt/corpus" : "/mt/pairs") << r.name;
      if (arm == "pretrain") {
        ++pretrained;
        EXPECT_EQ(r.train.steps, b.mt.pretrain_steps);
      } else {
        EXPECT_EQ(pretrained, 2 * S) << "every pre-training comes before " << r.name;
      }
      if (arm == "finetune") {
        // From the pre-training of the same placement and seed.
        const std::string seed = r.name.substr(r.name.rfind("-s"));
        EXPECT_EQ(r.train.init_from, "/out/runs/mt-pretrain-" + r.variables.at("norm").get<std::string>() + seed);
        EXPECT_EQ(r.train.steps, b.mt.finetune_steps);
        EXPECT_EQ(r.train.max_loss, 0.0) << "a pre-trained model may start above ln V";
        if (std::string(name) != "tiny") {
          // "Pre-training narrows the gap" compares equal training on the pairs.
          EXPECT_GE(r.train.steps, b.mt.shape.steps) << name;
          EXPECT_EQ(r.train.schedule.lr, b.mt.lr) << name;
        }
      } else {
        EXPECT_TRUE(r.train.init_from.empty());
        EXPECT_GT(r.train.max_loss, std::log(4096.0));
      }
      if (arm == "scratch") {
        EXPECT_EQ(r.train.model.residual_scale, r.variables.at("init") == "gpt2");
      }
    }
  }
}

TEST(StudyPlan, AtlasSweepsEveryVariantAndSearchesItsEdge) {
  StudyData d;
  d.dir = "/data";
  d.vocab_size = 4096;
  for (const char* name : {"tiny", "quick"}) {  // full selects each variant's lr first: StudyFollowup
    const Budget b = budget_by_name(name);
    const auto runs = plan_preset("atlas", b, d, "/out/runs", 1);
    const size_t variants = atlas_variants().size();
    ASSERT_EQ(runs.size(), variants * b.atlas.depths.size() * b.seeds.size()) << name;
    std::set<std::string> names, models;
    for (const auto& r : runs) {
      names.insert(r.name);
      EXPECT_EQ(r.preset, "atlas");
      EXPECT_EQ(r.train.schedule.warmup, 0);  // fixed lr, no warmup
      EXPECT_EQ(r.train.schedule.lr, b.atlas.lr);
      EXPECT_EQ(r.train.model.n_layer, r.variables.at("depth").get<int>());
      EXPECT_EQ(r.variables.at("norm_type"), to_string(r.train.model.norm_type));
      models.insert(r.variables.at("variant").get<std::string>() + ":" + norm_label(r.train.model));
    }
    EXPECT_EQ(names.size(), runs.size()) << name;
    EXPECT_EQ(models.size(), variants) << name;  // one model family per variant
    const auto edges = plan_atlas_edges(b, d, 1);
    ASSERT_EQ(edges.size(), variants * b.seeds.size()) << name;
    for (const auto& e : edges) {
      EXPECT_EQ(e.preset, "atlas");
      EXPECT_EQ(e.train.model.n_layer, b.atlas.edge_depth);
      EXPECT_EQ(edge_probe(e, e.grid[0], "/out/runs").preset, "atlas");
    }
  }
}

TEST(StudyPlan, ParsePresets) {
  EXPECT_EQ(parse_presets("all").size(), 5u);  // atlas and translation are asked for by name
  EXPECT_EQ(parse_presets("atlas,all").back(), "atlas");
  EXPECT_EQ(parse_presets("translation,norm"), (std::vector<std::string>{"norm", "translation"}));
  EXPECT_EQ(parse_presets("depth,norm"), (std::vector<std::string>{"norm", "depth"}));
  EXPECT_EQ(parse_presets("lr-edge,grad-at-init"), (std::vector<std::string>{"grad-at-init", "lr-edge"}));
  EXPECT_THROW(parse_presets("norm,bogus"), Error);
  EXPECT_THROW(parse_presets(""), Error);
}

// One table says which presets exist: every name in it plans (or is
// planned elsewhere, lr-edge and translation), parses, and is offered by
// the error message, which is built from the table.
TEST(StudyPlan, OnePresetTable) {
  EXPECT_EQ(preset_choices(), "grad-at-init, lr-edge, norm, init, depth, all, translation or atlas");
  const Budget b = budget_by_name("tiny");
  StudyData d;
  d.dir = "/data";
  d.vocab_size = b.vocab_size;
  std::string all;
  for (const PresetInfo& p : study_presets()) {
    EXPECT_EQ(parse_presets(p.name), std::vector<std::string>{p.name});
    EXPECT_NO_THROW(plan_preset(p.name, b, d, "/out/runs", 1)) << p.name;
    if (p.in_all) all += std::string(all.empty() ? "" : ",") + p.name;
  }
  EXPECT_EQ(parse_presets("all"), parse_presets(all));
  try {
    plan_preset("width", b, d, "/o", 0);
    FAIL() << "an unknown preset was planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(preset_choices()), std::string::npos) << e.what();
  }
}

// A stub trainer whose runs train exactly in [low, edge]: above the edge
// they are unstable, below `low` too slow to leave the plateau.
std::function<std::optional<bool>(double)> stub(double low, double edge, std::vector<double>* runs) {
  return [=](double lr) -> std::optional<bool> {
    runs->push_back(lr);
    return lr >= low && lr <= edge;
  };
}

// Drives the search like the study: ask, run the probe, record, ask again.
EdgeSearch drive(const std::vector<double>& grid, size_t start, int refine, double low, double edge, int* trained) {
  std::map<double, bool> done;
  *trained = 0;
  for (;;) {
    EdgeSearch s = search_edge(grid, start, refine, [&](double lr) -> std::optional<bool> {
      const auto it = done.find(lr);
      if (it == done.end()) return std::nullopt;
      return it->second;
    });
    if (!s.next) return s;
    EXPECT_EQ(done.count(*s.next), 0u) << "a probe is never run twice";
    done[*s.next] = *s.next >= low && *s.next <= edge;
    ++*trained;
  }
}

TEST(EdgeSearch, FindsAKnownEdgeOnTheGridAndRefinesIt) {
  const std::vector<double> grid = {1e-4, 2e-4, 4e-4, 8e-4, 1.6e-3, 3.2e-3, 6.4e-3, 1.28e-2, 2.56e-2};
  const size_t start = 4;  // 1.6e-3
  for (size_t k = 0; k < grid.size(); ++k) {
    int trained = 0;
    const EdgeSearch s = drive(grid, start, 0, 0, grid[k] * 1.01, &trained);
    ASSERT_TRUE(s.edge);
    EXPECT_EQ(*s.edge, grid[k]);
    if (k + 1 < grid.size()) {
      EXPECT_EQ(*s.failed, grid[k + 1]);
    } else {
      EXPECT_FALSE(s.failed);
    }
    if (k >= start) {
      EXPECT_LE(trained, expected_probes(grid.size(), start, 0));
    } else {
      EXPECT_EQ(trained, static_cast<int>(start - k + 1)) << "below the start it steps down one point at a time";
    }
  }
  // Refined: the edge 2.5e-3 lies between 1.6e-3 and 3.2e-3; one geometric
  // bisection probes 2.26e-3 (trains), a second 2.69e-3 (fails).
  int trained = 0;
  EdgeSearch s = drive(grid, start, 2, 0, 2.5e-3, &trained);
  EXPECT_EQ(*s.edge, 2.26e-3);
  EXPECT_EQ(*s.failed, 2.69e-3);
  EXPECT_EQ(trained, 3 + 2);  // 1.6e-3, 6.4e-3, 3.2e-3, then the refinements
  // Too slow below 4e-4, unstable above 3.2e-3: the upper edge, whichever
  // side a plain bisection over the grid would have landed on.
  s = drive(grid, start, 0, 4e-4, 3.2e-3, &trained);
  EXPECT_EQ(*s.edge, 3.2e-3);
  EXPECT_EQ(*s.failed, 6.4e-3);
  // Nothing trains; everything trains.
  s = drive(grid, start, 1, 1, 1e-5, &trained);
  EXPECT_FALSE(s.edge);
  EXPECT_EQ(*s.failed, 1e-4);
  EXPECT_EQ(trained, static_cast<int>(start + 1));
  s = drive(grid, start, 1, 0, 1.0, &trained);
  EXPECT_EQ(*s.edge, 2.56e-2);
  EXPECT_FALSE(s.failed);
}

TEST(EdgeSearch, ReplayIsDeterministicAndResumes) {
  const std::vector<double> grid = {1e-3, 2e-3, 4e-3, 8e-3};
  std::vector<double> runs;
  const EdgeSearch all = search_edge(grid, 0, 1, stub(0, 3e-3, &runs));
  EXPECT_FALSE(all.next);
  EXPECT_EQ(*all.edge, 2.83e-3);  // refined between 2e-3 and 4e-3
  EXPECT_EQ(all.probed, runs);
  // The same outcomes known up to the second probe: it asks for the third.
  const EdgeSearch part = search_edge(grid, 0, 1, [&](double lr) -> std::optional<bool> {
    if (lr == runs[0] || lr == runs[1]) return lr <= 3e-3;
    return std::nullopt;
  });
  EXPECT_EQ(*part.next, runs[2]);
  EXPECT_THROW(search_edge({}, 0, 0, stub(0, 1, &runs)), Error);
  EXPECT_THROW(search_edge({2e-3, 1e-3}, 0, 0, stub(0, 1, &runs)), Error);
  EXPECT_THROW(search_edge({1e-3}, 1, 0, stub(0, 1, &runs)), Error);
}

// The exhaustive lr-edge scan probes every grid point in order, whatever
// the outcomes (not monotone here: 2e-3 fails, 4e-3 trains), resumes at the
// first point without an outcome, and reports the largest point that
// trained and the next above it.
TEST(EdgeSearch, ScanProbesEveryPointInOrder) {
  const std::vector<double> grid = {1e-3, 2e-3, 4e-3, 8e-3};
  const auto trains = [](double lr) -> std::optional<bool> { return lr != 2e-3 && lr < 8e-3; };
  const EdgeSearch all = scan_grid(grid, trains);
  EXPECT_FALSE(all.next);
  EXPECT_EQ(all.probed, grid);
  EXPECT_EQ(*all.edge, 4e-3);
  EXPECT_EQ(*all.failed, 8e-3);
  const EdgeSearch part = scan_grid(grid, [&](double lr) -> std::optional<bool> {
    if (lr < 4e-3) return trains(lr);
    return std::nullopt;
  });
  EXPECT_EQ(*part.next, 4e-3);
  EXPECT_EQ(part.probed.size(), 3u);
  const EdgeSearch none = scan_grid(grid, [](double) -> std::optional<bool> { return false; });
  EXPECT_FALSE(none.edge);
  EXPECT_FALSE(none.failed);
  EXPECT_THROW(scan_grid({}, trains), Error);
  EXPECT_THROW(scan_grid({2e-3, 1e-3}, trains), Error);
}

// The study's spike count on synthetic loss curves: excursions above the
// limit that came back are spikes; the last one of a diverged run (it never
// came back) is not.
TEST(Spikes, CountsExcursionsThatRecovered) {
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab_spikes_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto curve = [&](const std::vector<double>& loss, bool diverged) {
    std::string text;
    for (size_t i = 0; i < loss.size(); ++i)
      text += nlohmann::json({{"kind", "train"}, {"step", i}, {"loss", loss[i]}}).dump() + "\n";
    if (diverged)
      text += R"({"kind": "diverged", "step": 9, "diverged": true, "reason": "x", "loss": 12.0})"
              "\n";
    write_file_atomic(dir / "metrics.jsonl", text);
    return spikes_from_metrics(dir, 9.0);
  };
  nlohmann::json s = curve({8, 7, 9.5, 9.7, 6, 5, 10, 4, 3}, false);
  EXPECT_EQ(s["spikes"], 2);
  EXPECT_EQ(s["spike_steps"], nlohmann::json({2, 6}));
  s = curve({8, 7, 6, 5, 4}, false);
  EXPECT_EQ(s["spikes"], 0);
  s = curve({8, 9.5, 7, 10, 11, 12, 12, 12}, true);  // one spike, then divergence
  EXPECT_EQ(s["spikes"], 1);
  EXPECT_EQ(s["spike_steps"], nlohmann::json({1}));
  fs::remove_all(dir);
}

// A run's outcome read back from an edited metrics.jsonl (the study redoes
// it when study.json lacks the outcome): a step of 1e300 became INT64_MIN
// through an undefined conversion, and a string step half-applied its row
// (val_loss taken, its step lost). Such rows are skipped, like torn ones.
TEST(StudyOutcome, RowsWithAnEditedStepAreSkipped) {
  const fs::path dir = fs::temp_directory_path() / ("gpt2lab-outcome-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_file_atomic(dir / "metrics.jsonl",
                    "{\"step\": 0, \"loss\": 6.0}\n"
                    "{\"step\": 1, \"loss\": 5.0}\n"
                    "{\"step\": 1, \"val_loss\": 5.5}\n"
                    "{\"step\": 1e300, \"loss\": 1.0}\n"
                    "{\"step\": \"2\", \"val_loss\": 0.5}\n"
                    "{\"step\": 18446744073709551615, \"loss\": 0.1}\n"
                    "{\"step\": -3, \"loss\": 0.2}\n");
  const nlohmann::json o = outcome_from_metrics(dir, "completed");
  EXPECT_EQ(o["steps"], 2);
  EXPECT_EQ(o["last_loss"], 5.0);
  EXPECT_EQ(o["val_loss"], 5.5);
  EXPECT_EQ(o["val_step"], 1);
  EXPECT_EQ(o["val_curve"], nlohmann::json::parse("[[1, 5.5]]"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpt2lab
