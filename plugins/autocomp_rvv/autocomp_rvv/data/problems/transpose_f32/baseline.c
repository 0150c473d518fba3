#include <stddef.h>

/* Scalar baseline: element by element, writing out row by row. */
void transpose_f32(size_t rows, size_t cols, const float *in, float *out) {
  for (size_t j = 0; j < cols; j++)
    for (size_t i = 0; i < rows; i++) out[j * rows + i] = in[i * cols + j];
}
