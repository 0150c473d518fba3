// Unoptimized baseline: direct convolution with primitive commands. For every output pixel
// row, block of DIM output columns and block of DIM output channels, it walks the kernel
// and the input channels, reloading a DIM x DIM input block and weight block each time into
// the same scratchpad rows. CONV_* macros are #defined (NHWC layout).
void solution(const elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH],
              const elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH],
              const acc_t bias[CONV_OUT_CH],
              elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH]) {
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(CONV_OUT_CH * sizeof(elem_t), CONV_ACT, CONV_SCALE);
  // consecutive output columns read input pixels CONV_STRIDE pixels apart
  gemmini_extended3_config_ld(CONV_STRIDE * CONV_IN_CH * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 0);
  gemmini_extended3_config_ld(CONV_OUT_CH * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, DIM, 1, 2);  // bias row, repeated
  const uint32_t A_sp = 0;
  const uint32_t B_sp = DIM;
  const uint32_t C_acc = ACC_ADDR_BIT;
  for (int b = 0; b < CONV_BATCH; b++) {
    for (int orow = 0; orow < CONV_OUT_DIM; orow++) {
      for (int ocol0 = 0; ocol0 < CONV_OUT_DIM; ocol0 += DIM) {
        const int ncols = CONV_OUT_DIM - ocol0 < DIM ? CONV_OUT_DIM - ocol0 : DIM;
        for (int och = 0; och < CONV_OUT_CH; och += DIM) {
          gemmini_extended_mvin3(&bias[och], C_acc, DIM, ncols);
          for (int kr = 0; kr < CONV_KDIM; kr++) {
            const int irow = orow * CONV_STRIDE + kr - CONV_PAD;
            if (irow < 0 || irow >= CONV_IN_DIM) continue;
            for (int kc = 0; kc < CONV_KDIM; kc++) {
              // output columns [first, last) whose input column lies inside the image
              int first = ocol0, last = ocol0 + ncols;
              while (first < last && first * CONV_STRIDE + kc - CONV_PAD < 0) first++;
              while (last > first && (last - 1) * CONV_STRIDE + kc - CONV_PAD >= CONV_IN_DIM) last--;
              if (first >= last) continue;
              const int n = last - first;
              const int icol = first * CONV_STRIDE + kc - CONV_PAD;
              for (int ich = 0; ich < CONV_IN_CH; ich += DIM) {
                gemmini_extended_mvin(&input[b][irow][icol][ich], A_sp, DIM, n);
                gemmini_extended_mvin2(&weights[kr][kc][ich][och], B_sp, DIM, DIM);
                gemmini_extended_preload(B_sp, (C_acc + (first - ocol0)) | ACC_ACCUMULATE_BIT, DIM, DIM, DIM, n);
                gemmini_extended_compute_preloaded(A_sp, GARBAGE_ADDR, DIM, n, DIM, DIM);
              }
            }
          }
          gemmini_extended_mvout(&output[b][orow][ocol0][och], C_acc, DIM, ncols);
        }
      }
    }
  }
  gemmini_fence();
}
