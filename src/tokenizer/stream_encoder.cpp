#include "tokenizer/stream_encoder.h"

#include <omp.h>

#include <algorithm>
#include <string>

#include "gpt2lab/core/error.h"

namespace gpt2lab {

namespace {

bool ascii_letter(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
bool ascii_alnum(unsigned char c) { return ascii_letter(c) || (c >= '0' && c <= '9'); }
bool printable_non_space(unsigned char c) { return c > 0x20 && c < 0x7F; }

}  // namespace

StreamEncoder::StreamEncoder(const Tokenizer& tok, bool allow_special, int threads, size_t chunk_bytes)
    : tok_(tok), allow_special_(allow_special), threads_(threads), chunk_(std::max<size_t>(chunk_bytes, 64)) {
  for (int id = 0; id < tok.vocab_size(); ++id) {
    if (id == tok.eot_id()) continue;
    const std::string& t = tok.token_bytes(id);
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      const unsigned bit = static_cast<unsigned char>(t[i]) * 256u + static_cast<unsigned char>(t[i + 1]);
      pair_in_token_[bit / 64] |= uint64_t{1} << (bit % 64);
    }
  }
}

size_t StreamEncoder::find_cut(std::string_view text, size_t from) const {
  const size_t n = text.size();
  for (size_t p = std::max<size_t>(from, 2); p + 1 < n; ++p) {
    const auto before = static_cast<unsigned char>(text[p - 1]);
    const auto here = static_cast<unsigned char>(text[p]);
    if (!printable_non_space(before)) continue;
    if (here == '\n') return p;
    if (here == ' ') {
      if (ascii_alnum(static_cast<unsigned char>(text[p + 1]))) return p;
      continue;
    }
    if (!ascii_letter(here) || !ascii_letter(before) || !ascii_letter(static_cast<unsigned char>(text[p - 2])))
      continue;
    const unsigned bit = before * 256u + here;
    if (pair_in_token_[bit / 64] >> (bit % 64) & 1) continue;
    if (allow_special_) {
      // Never inside a special token's spelling (its letters are letters).
      const size_t lo = p >= Tokenizer::kEndOfText.size() ? p - Tokenizer::kEndOfText.size() + 1 : 0;
      const size_t at = text.substr(lo, 2 * Tokenizer::kEndOfText.size()).find(Tokenizer::kEndOfText);
      if (at != std::string_view::npos && lo + at < p) continue;
    }
    return p;
  }
  return n;
}

// The text is cut again, at exact cuts about kSegment apart, and the
// segments encoded in parallel: a long run without white space is one
// pre-tokenizer piece, and BPE over one piece takes memory in proportion to
// its length (tens of bytes per byte).
void StreamEncoder::encode_into(std::string_view text, std::vector<int>& out) const {
  constexpr size_t kSegment = size_t{64} << 10;
  std::vector<std::string_view> segments;
  for (size_t pos = 0; pos < text.size();) {
    const size_t cut = text.size() - pos > 2 * kSegment ? find_cut(text, pos + kSegment) : text.size();
    // BPE over a run without any exact cut takes memory in proportion to it
    // (about 47 bytes per byte): refused past kMaxRun instead.
    // [pos + kSegment, cut) holds no cut.
    if (cut - pos > kMaxRun + kSegment)
      throw Error("the input holds a run of more than " + std::to_string(kMaxRun >> 20) + " MiB (from byte " +
                  std::to_string(consumed_ + pos) +
                  ") with no point where it can be tokenized in parts with the same ids (e.g. one letter "
                  "repeated); gpt2lab refuses it rather than use memory in proportion to it");
    segments.push_back(text.substr(pos, cut - pos));
    pos = cut;
  }
  std::vector<std::vector<int>> parts(segments.size());
  const int threads = threads_ > 0 ? threads_ : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t i = 0; i < segments.size(); ++i) parts[i] = tok_.encode(segments[i], allow_special_);
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
}

void StreamEncoder::push(std::string_view text, std::vector<int>& out) {
  pending_.append(text);
  // Text is held until there is a chunk's worth; then everything before the
  // last exact cut past the chunk size goes. The search resumes where the
  // last one stopped, so a run without cuts is scanned once.
  size_t start = 0;
  while (pending_.size() - start >= 2 * chunk_) {
    const size_t cut = find_cut(pending_, std::max(start + chunk_, scanned_));
    if (cut >= pending_.size()) {
      scanned_ = pending_.size() - 1;  // the last byte's cut needs the next one
      // A run without a cut cannot be held for ever either.
      if (pending_.size() - start > 2 * chunk_ + kMaxRun)
        throw Error("the input holds a run of more than " + std::to_string(kMaxRun >> 20) + " MiB (after byte " +
                    std::to_string(consumed_ + start + chunk_) +
                    ") with no point where it can be tokenized in parts with the same ids (e.g. one letter "
                    "repeated); gpt2lab refuses it rather than use memory in proportion to it");
      break;
    }
    encode_into(std::string_view(pending_).substr(start, cut - start), out);
    start = cut;
  }
  if (start > 0) {
    consumed_ += start;
    pending_.erase(0, start);
    scanned_ = scanned_ > start ? scanned_ - start : 0;
  }
}

void StreamEncoder::finish(std::vector<int>& out) {
  if (!pending_.empty()) encode_into(pending_, out);
  pending_.clear();
  pending_.shrink_to_fit();
  scanned_ = 0;
}

}  // namespace gpt2lab
