// Hostile (model robustness): a LOOP_CONV_WS (a 1x1 convolution over a 4x4 image of 16 channels)
// whose input and weight row strides (8 elements) are shorter than the rows they hold (16). The
// model's loop expansion failed on a numpy shape error, reported as an infra error (the model's
// fault, a free retry); a command the program issued that cannot be executed is its crash.
void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(GEMM_N, NO_ACTIVATION, 1.0f);
  gemmini_loop_conv_ws(/*batch_size*/ 1, /*in_dim*/ 4, /*in_channels*/ 16, /*out_channels*/ 16,
                       /*out_dim*/ 4, /*pool_out_dim*/ 4, /*stride*/ 1, /*padding*/ 0, /*kernel_dim*/ 1,
                       /*kernel_dilation*/ 1, 0, 0, 0, /*batches*/ 1, /*porows*/ 4, /*pocols*/ 4,
                       /*pochs*/ 16, /*krows*/ 1, /*kcols*/ 1, /*kchs*/ 16, 0, 0, 0, 0, 0, 0, 0, 0,
                       /*orows*/ 4, /*ocols*/ 4, &B[0][0], &C[0][0], 0, &A[0][0], /*no_bias*/ 1,
                       /*no_pool*/ 1, 0, 0, 0, NO_ACTIVATION, 0, 0, 0, 0, 0, /*in_stride*/ 8,
                       /*weight_stride*/ 8, /*out_stride*/ GEMM_N, 0, 0, 0);
  gemmini_fence();
}
