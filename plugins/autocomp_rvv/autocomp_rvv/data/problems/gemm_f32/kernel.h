#include <stddef.h>
void gemm_f32(size_t M, size_t N, size_t K, const float *A, const float *B, float *C);
