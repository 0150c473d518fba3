/* Convolution harness (NHWC): output = act(scale * (conv(input, weights) + bias)).
 * Compiled with -DCONV_BATCH, CONV_IN_DIM, CONV_IN_CH, CONV_OUT_CH, CONV_KDIM, CONV_STRIDE,
 * CONV_PAD, CONV_OUT_DIM, CONV_ACT, CONV_SCALE, SEED. */
#include "harness.h"
#include "runtime.h"

static elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH] __attribute__((aligned(64)));
static elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH] __attribute__((aligned(64)));
static acc_t bias[CONV_OUT_CH] __attribute__((aligned(64)));
static elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH] __attribute__((aligned(64)));
static harness_outputs_t outputs;
#ifndef GEMMINI_MODEL
static elem_t gold[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH] __attribute__((aligned(64)));
#endif

void solution(const elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH],
              const elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH],
              const acc_t bias[CONV_OUT_CH],
              elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH]);

int main(void) {
  harness_fill_elem(&input[0][0][0][0], sizeof(input) / sizeof(elem_t), SEED * 4 + 1);
  harness_fill_elem(&weights[0][0][0][0], sizeof(weights) / sizeof(elem_t), SEED * 4 + 2);
  harness_fill_acc(bias, CONV_OUT_CH, SEED * 4 + 3);
  harness_fill_bytes(output, sizeof(output), 0x5A);
  outputs.count = 1;
  outputs.out[0].addr = (uint64_t)(uintptr_t)output;
  outputs.out[0].bytes = sizeof(output);
  harness_roi_begin();
  solution(input, weights, bias, output);
  harness_roi_end(&outputs);
#ifndef GEMMINI_MODEL
  conv_cpu(CONV_BATCH, CONV_IN_DIM, CONV_IN_CH, CONV_OUT_CH, CONV_OUT_DIM, CONV_STRIDE, CONV_PAD, CONV_KDIM,
           &input[0][0][0][0], &weights[0][0][0][0], bias, &gold[0][0][0][0], CONV_ACT, CONV_SCALE);
  return harness_report("conv", &output[0][0][0][0], &gold[0][0][0][0], sizeof(output) / sizeof(elem_t), 0.0);
#else
  return 0;
#endif
}
