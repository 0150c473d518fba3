#include <riscv_vector.h>

/* Register blocking: 4 rows x vl columns of C live in four LMUL=2 accumulators; each A
 * element is broadcast with vfmacc.vf against one row of B loaded once per k. */
void gemm_f32(size_t M, size_t N, size_t K, const float *A, const float *B, float *C) {
  for (size_t j = 0; j < N;) {
    size_t vl = __riscv_vsetvl_e32m2(N - j);
    size_t i = 0;
    for (; i + 4 <= M; i += 4) {
      vfloat32m2_t c0 = __riscv_vfmv_v_f_f32m2(0.0f, vl), c1 = c0, c2 = c0, c3 = c0;
      const float *a = A + i * K;
      for (size_t k = 0; k < K; k++) {
        vfloat32m2_t b = __riscv_vle32_v_f32m2(B + k * N + j, vl);
        c0 = __riscv_vfmacc_vf_f32m2(c0, a[k], b, vl);
        c1 = __riscv_vfmacc_vf_f32m2(c1, a[K + k], b, vl);
        c2 = __riscv_vfmacc_vf_f32m2(c2, a[2 * K + k], b, vl);
        c3 = __riscv_vfmacc_vf_f32m2(c3, a[3 * K + k], b, vl);
      }
      __riscv_vse32_v_f32m2(C + i * N + j, c0, vl);
      __riscv_vse32_v_f32m2(C + (i + 1) * N + j, c1, vl);
      __riscv_vse32_v_f32m2(C + (i + 2) * N + j, c2, vl);
      __riscv_vse32_v_f32m2(C + (i + 3) * N + j, c3, vl);
    }
    for (; i < M; i++) { /* leftover rows */
      vfloat32m2_t c0 = __riscv_vfmv_v_f_f32m2(0.0f, vl);
      for (size_t k = 0; k < K; k++)
        c0 = __riscv_vfmacc_vf_f32m2(c0, A[i * K + k], __riscv_vle32_v_f32m2(B + k * N + j, vl), vl);
      __riscv_vse32_v_f32m2(C + i * N + j, c0, vl);
    }
    j += vl;
  }
}
