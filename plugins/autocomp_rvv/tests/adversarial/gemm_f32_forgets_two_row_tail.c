#include <riscv_vector.h>

/* Rows in blocks of four; a leftover of one or three rows is handled row by row, but a
 * leftover of two is forgotten. Every M of the old, fixed case list (1, 3, 4, 5, 7, 8) has
 * M % 4 in {0, 1, 3}: the wrong kernel was accepted. */
static void one_row(size_t N, size_t K, const float *a, const float *B, float *c) {
  for (size_t j = 0, vl; j < N; j += vl) {
    vl = __riscv_vsetvl_e32m4(N - j);
    vfloat32m4_t acc = __riscv_vfmv_v_f_f32m4(0.0f, vl);
    for (size_t k = 0; k < K; k++)
      acc = __riscv_vfmacc_vf_f32m4(acc, a[k], __riscv_vle32_v_f32m4(B + k * N + j, vl), vl);
    __riscv_vse32_v_f32m4(c + j, acc, vl);
  }
}

void gemm_f32(size_t M, size_t N, size_t K, const float *A, const float *B, float *C) {
  size_t blocks = M / 4 * 4, left = M - blocks;
  for (size_t i = 0; i < blocks; i++) one_row(N, K, A + i * K, B, C + i * N);
  if (left % 2 == 1)
    for (size_t i = blocks; i < M; i++) one_row(N, K, A + i * K, B, C + i * N);
}
