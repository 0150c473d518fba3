#include <stddef.h>
#include <stdint.h>

typedef struct {
  int32_t a_zero_point, b_zero_point;
  int32_t a_multiplier, b_multiplier;
  uint32_t shift;
  int32_t output_zero_point, output_min, output_max;
} qs8_add_params;

void qs8_add(size_t n, const int8_t *a, const int8_t *b, int8_t *out, const qs8_add_params *p);
