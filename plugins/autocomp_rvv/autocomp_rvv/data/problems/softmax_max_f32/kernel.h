#include <stddef.h>
float softmax_max_f32(const float *x, size_t n);
