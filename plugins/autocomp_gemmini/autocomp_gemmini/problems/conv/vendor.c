// Vendor-library version: the software library's tiled_conv_auto (LOOP_CONV_WS state machine).
void solution(const elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH],
              const elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH],
              const acc_t bias[CONV_OUT_CH],
              elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH]) {
  tiled_conv_auto(CONV_BATCH, CONV_IN_DIM, CONV_IN_CH, CONV_OUT_CH, CONV_OUT_DIM, CONV_STRIDE, CONV_PAD,
                  CONV_KDIM, &input[0][0][0][0], &weights[0][0][0][0], bias, &output[0][0][0][0], CONV_ACT,
                  CONV_SCALE, WS);
}
