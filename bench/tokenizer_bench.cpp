// Tokenizer benchmark: gpt2lab against tiktoken (npm, OpenAI's Rust
// tokenizer in WASM, run by node) on the default corpus, in the same run.
//
//   build/bench/tokenizer_bench [path/to/gpt2lab] [repeats]
//
// Reports the best of `repeats` runs of:
//  - the whole `gpt2lab tokenize` process (start, load GPT-2's files, read
//    stdin, encode, print ids), one thread and all cores;
//  - gpt2lab's encode alone, in this process;
//  - tiktoken's encode alone, and its whole node process printing ids;
//  - BPE training of an 8k vocabulary on the corpus.
// Needs scripts/fetch_data.sh's data and node. Not run by ctest.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/data_dir.h"
#include "core/file.h"
#include "core/threads.h"
#include "data/prepare.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "machine.h"
#include "tokenizer/trainer.h"

using namespace gpt2lab;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double children_cpu() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// Best wall and best CPU time (user + system, all threads) of a run. CPU time
// is the steadier figure on a machine shared with other work; for one thread
// it equals the wall time of an idle machine.
struct Timing {
  double wall = 1e30, cpu = 1e30;
  void add(double w, double c) {
    wall = std::min(wall, w);
    cpu = std::min(cpu, c);
  }
};

// Timing of a shell command; exits if it fails.
Timing time_command(const std::string& cmd, int repeats) {
  Timing t;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = now(), c0 = children_cpu();
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "tokenizer_bench: command failed: %s\n", cmd.c_str());
      std::exit(1);
    }
    t.add(now() - t0, children_cpu() - c0);
  }
  return t;
}

std::string command_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) {
    std::fprintf(stderr, "tokenizer_bench: command failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return out;
}

fs::path self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? fs::path(std::string(buf, static_cast<size_t>(n))).parent_path() : fs::path(".");
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path bin = argc > 1 ? fs::path(argv[1]) : self_dir().parent_path() / "gpt2lab";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const fs::path data = data_directory();
  const fs::path tiktoken = data / "node_modules" / "tiktoken";
  const fs::path helper = fs::path(GPT2LAB_SOURCE_DIR) / "tests" / "reference" / "tiktoken_encode.js";
  for (const auto& p : {bin, tiktoken, default_corpus_dir(), helper})
    if (!fs::exists(p)) {
      std::fprintf(stderr, "tokenizer_bench: %s is missing (build, and run scripts/setup.sh)\n", p.c_str());
      return 1;
    }

  // The corpus as one text: the 233 files concatenated in path order.
  std::string corpus;
  for (const auto& f : list_documents({default_corpus_dir()})) corpus += read_file(f, SIZE_MAX);
  const fs::path corpus_file =
      fs::temp_directory_path() / ("gpt2lab_bench_corpus_" + std::to_string(getpid()) + ".txt");
  write_file_atomic(corpus_file, corpus);
  const double mb = static_cast<double>(corpus.size()) / 1e6;
  const int cores = hardware_threads();

  bench::print_machine(1);
  std::printf("tokenizer_bench: default corpus, %.2f MB, best of %d, %d cores\n", mb, repeats, cores);

  // tiktoken first, as the reference for the ratios.
  const std::string tt = command_output("node " + quote(helper) + " " + quote(tiktoken) + " time " +
                                        quote(corpus_file) + " " + std::to_string(repeats));
  Timing tt_encode;
  long tt_tokens = 0;
  {
    double wall = 0, cpu = 0;
    std::sscanf(tt.c_str(), "%lf %ld %lf", &wall, &tt_tokens, &cpu);
    tt_encode.add(wall, cpu);
  }
  const Timing tt_process = time_command(
      "node " + quote(helper) + " " + quote(tiktoken) + " gpt2 ordinary " + quote(corpus_file) + " > /dev/null",
      repeats);

  const Timing p1 =
      time_command(quote(bin) + " tokenize --threads 1 < " + quote(corpus_file) + " > /dev/null", repeats);
  const Timing pn = time_command(
      quote(bin) + " tokenize --threads " + std::to_string(cores) + " < " + quote(corpus_file) + " > /dev/null",
      repeats);

  const Tokenizer tok = Tokenizer::resolve("gpt2");
  Timing e1, en;
  size_t n_tokens = 0;
  for (int r = 0; r < repeats; ++r) {
    double t0 = now(), c0 = cpu_now();
    n_tokens = tok.encode(corpus, false).size();
    e1.add(now() - t0, cpu_now() - c0);
    t0 = now();
    c0 = cpu_now();
    tok.encode_parallel(corpus, false, cores);
    en.add(now() - t0, cpu_now() - c0);
  }

  const std::vector<std::string> docs = [] {
    std::vector<std::string> d;
    for (const auto& f : list_documents({default_corpus_dir()})) d.push_back(read_file(f, SIZE_MAX));
    return d;
  }();
  Timing train;
  for (int r = 0; r < std::min(repeats, 3); ++r) {
    const double t0 = now(), c0 = cpu_now();
    train_bpe(docs, 8192, 1);
    train.add(now() - t0, cpu_now() - c0);
  }
  fs::remove(corpus_file);

  if (static_cast<long>(n_tokens) != tt_tokens)
    std::printf("WARNING: token counts differ: gpt2lab %zu, tiktoken %ld\n", n_tokens, tt_tokens);
  std::printf("tokens: %zu (gpt2lab) %ld (tiktoken)\n\n", n_tokens, tt_tokens);
  std::printf("%-46s %8s %8s %12s %8s %8s %12s\n", "", "wall s", "MB/s", "vs tiktoken", "CPU s", "MB/s", "vs tiktoken");
  auto row = [&](const char* what, const Timing& t, bool cpu_column = true) {
    std::printf("%-46s %8.3f %8.1f %11.2fx", what, t.wall, mb / t.wall, tt_encode.wall / t.wall);
    if (cpu_column) std::printf(" %8.3f %8.1f %11.2fx", t.cpu, mb / t.cpu, tt_encode.cpu / t.cpu);
    std::printf("\n");
  };
  row("tiktoken 1.0.22 encode (node, in process)", tt_encode);
  row("tiktoken whole node process (prints ids)", tt_process);
  row("gpt2lab tokenize, whole process, 1 thread", p1);
  char label[64];
  std::snprintf(label, sizeof label, "gpt2lab tokenize, whole process, %d threads", cores);
  row(label, pn, false);  // CPU time sums the threads: no speed figure
  row("gpt2lab encode (in process), 1 thread", e1);
  std::snprintf(label, sizeof label, "gpt2lab encode (in process), %d threads", cores);
  row(label, en, false);
  std::printf(
      "\nwhole gpt2lab process, 1 thread, vs tiktoken's encode alone: %.2fx (wall), "
      "%.2fx (CPU)\n",
      tt_encode.wall / p1.wall, tt_encode.cpu / p1.cpu);
  std::printf("BPE training, 8192 tokens, 1 thread: %.2f s wall, %.2f s CPU\n", train.wall, train.cpu);
  bench::print_load_after();
  return 0;
}
