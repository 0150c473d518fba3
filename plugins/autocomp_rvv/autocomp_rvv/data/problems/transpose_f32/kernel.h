#include <stddef.h>
void transpose_f32(size_t rows, size_t cols, const float *in, float *out);
