// One place that decides how many threads the kernels and BLAS use.
#pragma once

namespace gpt2lab {

// n <= 0 means "all cores". Sets OpenMP's and OpenBLAS's thread counts.
void set_threads(int n);
int num_threads();
int hardware_threads();

}  // namespace gpt2lab
