#include <stddef.h>
void softmax_scale_f32(const float *x, float *y, size_t n, float scale);
