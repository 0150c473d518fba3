/* Convolution harness (NHWC): output = act(scale * (conv(input, weights) + bias)).
 * Compiled with -DCONV_BATCH, CONV_IN_DIM, CONV_IN_CH, CONV_OUT_CH, CONV_KDIM, CONV_STRIDE,
 * CONV_PAD, CONV_OUT_DIM, CONV_ACT, CONV_SCALE. */
#include "harness.h"
#include "runtime.h"

static elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH] HARNESS_SHARED;
static elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH] HARNESS_SHARED;
static acc_t bias[CONV_OUT_CH] HARNESS_SHARED;
static struct {
  uint8_t pre[HARNESS_GUARD_BYTES];
  elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH];
  uint8_t post[HARNESS_GUARD_BYTES];
} out HARNESS_SHARED;
static harness_outputs_t outputs;
#ifndef GEMMINI_MODEL
static elem_t gold[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH] __attribute__((aligned(64)));
#endif

void solution(const elem_t input[CONV_BATCH][CONV_IN_DIM][CONV_IN_DIM][CONV_IN_CH],
              const elem_t weights[CONV_KDIM][CONV_KDIM][CONV_IN_CH][CONV_OUT_CH],
              const acc_t bias[CONV_OUT_CH],
              elem_t output[CONV_BATCH][CONV_OUT_DIM][CONV_OUT_DIM][CONV_OUT_CH]);

int main(void) {
  const uint32_t seed = harness_params.seed;
  harness_fill_elem(&input[0][0][0][0], sizeof(input) / sizeof(elem_t), seed * 4 + 1);
  harness_fill_elem(&weights[0][0][0][0], sizeof(weights) / sizeof(elem_t), seed * 4 + 2);
  harness_fill_acc(bias, CONV_OUT_CH, seed * 4 + 3);
  harness_fill_bytes(out.output, sizeof(out.output), 0x5A);
  harness_add_output(&outputs, out.output, sizeof(out.output));
  harness_add_guards(&outputs, out.pre, out.post);
  harness_roi_begin();
  {
    const uint64_t args[8] = {HARNESS_ARG(input), HARNESS_ARG(weights), HARNESS_ARG(bias), HARNESS_ARG(out.output)};
    harness_run_user((const void *)solution, args);
  }
  harness_roi_end(&outputs);
#ifndef GEMMINI_MODEL
  conv_cpu(CONV_BATCH, CONV_IN_DIM, CONV_IN_CH, CONV_OUT_CH, CONV_OUT_DIM, CONV_STRIDE, CONV_PAD, CONV_KDIM,
           &input[0][0][0][0], &weights[0][0][0][0], bias, &gold[0][0][0][0], CONV_ACT, CONV_SCALE);
  return harness_report("conv", &out.output[0][0][0][0], &gold[0][0][0][0], sizeof(out.output) / sizeof(elem_t), 0.0);
#else
  return 0;
#endif
}
