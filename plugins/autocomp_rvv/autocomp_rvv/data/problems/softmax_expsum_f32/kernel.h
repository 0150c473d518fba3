#include <stddef.h>
float softmax_expsum_f32(const float *x, float *y, size_t n, float max);
