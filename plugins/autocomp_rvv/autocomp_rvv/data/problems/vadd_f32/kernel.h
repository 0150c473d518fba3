#include <stddef.h>
void vadd_f32(const float *a, const float *b, float *c, size_t n);
