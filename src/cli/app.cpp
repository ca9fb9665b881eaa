// The command-line program as a library: the command tree and cli::run.
#include "cli/app.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <sstream>
#include <vector>

#include "cli/command.h"
#include "cli/output.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/core/thread_count.h"
#include "gpt2lab/version.h"

namespace gpt2lab::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

void add_threads_flag(CLI::App* sub, int& threads) {
  sub->add_option("--threads", threads, "Threads for kernels and BLAS (0 = all cores)")
      ->check(CLI::Range(0, kMaxThreads))
      ->capture_default_str();
}

void add_weights_flag(CLI::App* sub, WeightType& weights) {
  auto* w = sub->add_option_function<std::string>(
                   "--weights", [&weights](const std::string& s) { weights = parse_weight_type(s); },
                   "Weights decoding reads: f32 (exact), bf16 (half the bytes; bf16 activations, fp32 sums), int8 "
                   "(about a quarter; per-32 scales like ggml's q8_0). bf16 and int8 also cache keys and values in "
                   "bf16. Default f32")
                ->check(CLI::IsMember({"f32", "bf16", "int8"}));
  sub->add_flag_callback(
         "--bf16", [&weights] { weights = WeightType::bf16; },
         "Same as --weights bf16 (about 2x faster decoding; logits differ by bf16 rounding)")
      ->excludes(w);
}

namespace {

// CLI11 converts numbers leniently: hex (0x10), and 64-bit values that
// saturate silently (--steps 2^63 became 2^63 - 1). Every numeric option
// gets a strict check of the text first: plain decimal (with a fraction and
// exponent for reals), within the 64-bit range; the option's own range
// check (and the library's validation) then applies as before.
std::string strict_number(const std::string& s, const std::string& type) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  bool ok = false;
  if (type == "UINT") {
    uint64_t v;
    const auto r = std::from_chars(b, e, v);
    ok = r.ec == std::errc() && r.ptr == e;
  } else if (type == "INT") {
    int64_t v;
    const auto r = std::from_chars(b, e, v);
    ok = r.ec == std::errc() && r.ptr == e;
  } else {
    double v;
    const auto r = std::from_chars(b, e, v, std::chars_format::general);
    ok = r.ec == std::errc() && r.ptr == e;
  }
  if (ok && !s.empty()) return "";
  return "'" + s + "' is not a " + (type == "FLOAT" ? std::string("decimal number") : "decimal integer") +
         (type == "FLOAT" ? "" : " within 64 bits");
}

// A range check makes the type name "INT:INT in [3 - 1000]": the number's
// type is the part before the colon. The check goes first (transform puts
// it at the front), so "abc" is "not a decimal integer", not "not in range".
void add_strict_number_checks(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    const std::string name = opt->get_type_name();
    const std::string type = name.substr(0, name.find(':'));
    if (type != "INT" && type != "UINT" && type != "FLOAT") continue;
    opt->transform(CLI::Validator([type](std::string& s) { return strict_number(s, type); }, ""));
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) add_strict_number_checks(sub);
}

int report_lost_output() {
  std::fprintf(stderr, "gpt2lab: error: cannot write standard output: %s (disk full, or the reader went away?)\n",
               errno ? std::strerror(errno) : "write failed");
  return 1;
}

// Edit distance (insertions, deletions, substitutions) for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The names an unexpected word may have meant: the flags of the subcommand
// being parsed, or the subcommands themselves.
std::vector<std::string> known_names(const CLI::App* app) {
  std::vector<std::string> names;
  const auto chosen = app->get_subcommands();
  const CLI::App* where = chosen.empty() ? app : chosen.front();
  for (const CLI::App* sub = where; sub != nullptr;) {
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    const auto deeper = sub->get_subcommands();
    sub = deeper.empty() ? nullptr : deeper.front();
  }
  if (chosen.empty())
    // CLI11 2.1 lists all subcommands only through the non-const overload.
    for (const CLI::App* sub : const_cast<CLI::App*>(app)->get_subcommands([](CLI::App*) { return true; }))
      names.push_back(sub->get_name());
  return names;
}

// " (did you mean --lr?)" for each unexpected word close to a known name.
std::string did_you_mean(const CLI::App* app, const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos) return "";
  std::istringstream words(message.substr(colon + 2));
  const std::vector<std::string> names = known_names(app);
  std::string out;
  for (std::string w; words >> w;) {
    const std::string bare = w.substr(0, w.find('='));
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const auto& n : names) {
      const size_t d = edit_distance(bare, n);
      if (d < best_d) best_d = d, best = n;
    }
    if (!best.empty() && best_d <= std::max<size_t>(2, bare.size() / 4))
      out += "; did you mean " + best + " instead of " + bare + "?";
  }
  return out;
}

// CLI11's errors in the program's voice: "gpt2lab: error: ...".
std::string failure_message(const CLI::App* app, const CLI::Error& e) {
  std::string text = std::string("gpt2lab: error: ") + e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) text += did_you_mean(app, e.what());
  return text + "\nRun with --help for more information.\n";
}

}  // namespace

CLI::Validator uint64_text() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          return "'" + s + "' is not an integer in [0, 18446744073709551615]";
        return "";
      },
      "UINT64");
}

void build_app(CLI::App& app) {
  app.require_subcommand(1);
  // A repeated flag takes its last value, as most command lines do (a
  // script appends an override); list options still collect every value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", GPT2LAB_VERSION);
  auto& commands = registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.order < b.order; });
  for (auto& c : commands) c.add(app);
  add_strict_number_checks(&app);
  app.failure_message(failure_message);
}

int run(int argc, char** argv) {
  CLI::App app{"gpt2lab " GPT2LAB_VERSION ": train, sample and study GPT-2 models (Pre-LN/Post-LN, init schemes)",
               "gpt2lab"};
  build_app(app);
  // An unknown command name: CLI11 would only say that one is required.
  const auto subs = app.get_subcommands([](CLI::App*) { return true; });
  const bool known =
      argc > 1 && std::any_of(subs.begin(), subs.end(), [&](const CLI::App* c) { return c->get_name() == argv[1]; });
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "gpt2lab: error: '%s' is not a gpt2lab command%s\nRun with --help for the list.\n", argv[1],
                 did_you_mean(&app, std::string("unknown: ") + argv[1]).c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (!close_stdout() && code == 0) return report_lost_output();
    return code;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "gpt2lab: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpt2lab: error: out of memory\n");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path that cannot be resolved or listed (the working directory was
    // deleted, a permission): the user's environment, not our bug.
    std::fflush(stdout);
    std::fprintf(stderr, "gpt2lab: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // A nlohmann exception here is a field no reader checked: still a bug,
    // but shown without the library's "[json.exception...]" tag.
    std::fprintf(stderr, "gpt2lab: internal error: %s\n", json_error_text(e).c_str());
    return 3;
  }
  // Every command's output is checked here once more: printf's errors are
  // sticky on the stream, and the last buffer is only written at the flush.
  if (!close_stdout()) return report_lost_output();
  return 0;
}

}  // namespace gpt2lab::cli
