// The type inference reads the matmul weights (and the tied LM head) in.
// A decode step reads every weight once, so its time is about the weight
// bytes over the memory bandwidth:
//   f32   exact (4 bytes per weight);
//   bf16  rounded to bf16 (2 bytes), the input vector too (bf16 products,
//         fp32 sums);
//   int8  per 32 input rows of each output column, a symmetric int8 code
//         and a bf16 scale (1.0625 bytes; ggml's q8_0 granularity), the
//         input vector taken to int16 per 32 entries.
#pragma once

#include <string>

namespace gpt2lab {

enum class WeightType { f32, bf16, int8 };

// "f32" / "bf16" / "int8" and back; parse throws Error naming the choices.
const char* weight_type_name(WeightType t);
WeightType parse_weight_type(const std::string& s);

}  // namespace gpt2lab
