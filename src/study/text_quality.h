// Simple, model-free measures of a generated text's quality, computed on
// lower-cased whitespace-separated words:
//   distinct-n  unique n-grams / all n-grams (Li et al. 2016, "A Diversity-
//               Promoting Objective Function for Neural Conversation Models");
//               low means the text keeps reusing the same words.
//   rep-4       share of 4-grams that already occurred earlier in the text,
//               i.e. 1 - distinct-4 (Welleck et al. 2019, "Neural Text
//               Generation with Unlikelihood Training", seq-rep-4); high
//               means loops ("the the the", a sentence said twice).
// An n-gram measure of a text shorter than n words is 0.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpt2lab {

struct TextQuality {
  int words = 0;
  double distinct_1 = 0, distinct_2 = 0;
  double repeated_4gram_rate = 0;
};

std::vector<std::string> split_words(std::string_view text);
double distinct_n(const std::vector<std::string>& words, int n);
TextQuality text_quality(std::string_view text);

}  // namespace gpt2lab
