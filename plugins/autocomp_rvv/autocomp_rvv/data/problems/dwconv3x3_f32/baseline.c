#include <stddef.h>

/* Scalar baseline: nine multiply-adds per output element. */
void dwconv3x3_f32(size_t C, size_t H, size_t W, const float *in, const float *w, const float *bias,
                   float *out) {
  size_t OH = H - 2, OW = W - 2;
  for (size_t c = 0; c < C; c++)
    for (size_t y = 0; y < OH; y++)
      for (size_t x = 0; x < OW; x++) {
        float acc = bias[c];
        for (size_t i = 0; i < 3; i++)
          for (size_t j = 0; j < 3; j++)
            acc += in[(c * H + y + i) * W + x + j] * w[c * 9 + i * 3 + j];
        out[(c * OH + y) * OW + x] = acc;
      }
}
