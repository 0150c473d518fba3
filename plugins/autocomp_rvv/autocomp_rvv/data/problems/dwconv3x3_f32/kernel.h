#include <stddef.h>
void dwconv3x3_f32(size_t C, size_t H, size_t W, const float *in, const float *w, const float *bias,
                   float *out);
