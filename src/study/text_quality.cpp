#include "study/text_quality.h"

#include <cctype>
#include <set>

namespace gpt2lab {

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      // Bytes >= 0x80 (UTF-8) pass through unchanged; tolower only on ASCII.
      cur.push_back(c < 0x80 ? static_cast<char>(std::tolower(c)) : ch);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

double distinct_n(const std::vector<std::string>& words, int n) {
  if (n <= 0 || static_cast<int>(words.size()) < n) return 0.0;
  std::set<std::vector<std::string>> seen;
  const size_t total = words.size() - static_cast<size_t>(n) + 1;
  for (size_t i = 0; i < total; ++i) seen.emplace(words.begin() + i, words.begin() + i + n);
  return static_cast<double>(seen.size()) / static_cast<double>(total);
}

TextQuality text_quality(std::string_view text) {
  TextQuality q;
  const auto w = split_words(text);
  q.words = static_cast<int>(w.size());
  q.distinct_1 = distinct_n(w, 1);
  q.distinct_2 = distinct_n(w, 2);
  q.repeated_4gram_rate = w.size() >= 4 ? 1.0 - distinct_n(w, 4) : 0.0;
  return q;
}

}  // namespace gpt2lab
