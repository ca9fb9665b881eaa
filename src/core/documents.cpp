#include "core/documents.h"

#include <algorithm>
#include <string>

#include "core/data_dir.h"
#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace fs = std::filesystem;

std::vector<fs::path> list_documents(const std::vector<fs::path>& inputs) {
  std::vector<fs::path> docs;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      auto it = fs::recursive_directory_iterator(input, ec);
      if (ec) throw Error("cannot list input folder '" + input.string() + "': " + ec.message());
      for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) throw Error("cannot list input folder '" + input.string() + "': " + ec.message());
        const std::string name = it->path().filename().string();
        if (!name.empty() && name[0] == '.') {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file()) docs.push_back(it->path().lexically_normal());
      }
    } else if (fs::exists(input, ec)) {
      docs.push_back(input.lexically_normal());
    } else {
      throw Error("input '" + input.string() + "' does not exist" +
                  (input == default_corpus_dir()
                       ? " (the default corpus: run scripts/setup.sh or scripts/fetch_data.sh)"
                       : ""));
    }
  }
  std::sort(docs.begin(), docs.end(), [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  return docs;
}

void check_output_apart(const fs::path& out, const std::vector<fs::path>& inputs) {
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(out, ec);
  auto within = [](const fs::path& a, const fs::path& b) {  // a equal to or inside b
    return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
  };
  for (const auto& in : inputs) {
    const fs::path i = fs::weakly_canonical(in, ec);
    if (within(o, i) || within(i, o))
      throw Error("--out '" + out.string() + "' overlaps the input '" + in.string() +
                  "'; a rerun would read the output as documents (or replace the input), so keep them apart");
  }
}

}  // namespace gpt2lab
