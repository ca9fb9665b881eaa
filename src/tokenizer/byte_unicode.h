// GPT-2's reversible byte <-> printable-character mapping, the spelling of
// tokens in encoder.json and vocab.bpe: printable Latin-1 bytes stand for
// themselves, the other 68 bytes (controls, space, 0x7F-0xA0, 0xAD) are
// shifted to U+0100.. in byte order, so every token is visible text without
// spaces (vocab.bpe separates the two halves of a merge by a space).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpt2lab::tokenizer {

// Code point that stands for each byte.
const std::array<uint32_t, 256>& byte_to_code_point();

// The 256 bytes in GPT-2's id order (ids 0..255 of its encoder.json): the
// printable ones first, then the shifted ones.
const std::array<uint8_t, 256>& bytes_in_gpt2_order();

// Raw bytes -> GPT-2 spelling (UTF-8 of the mapped code points).
std::string bytes_to_spelling(std::string_view bytes);

// GPT-2 spelling -> raw bytes; nullopt if a character is not in the table.
std::optional<std::string> spelling_to_bytes(std::string_view spelling);

}  // namespace gpt2lab::tokenizer
