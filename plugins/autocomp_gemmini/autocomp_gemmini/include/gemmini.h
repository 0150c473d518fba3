/* gemmini.h: the Gemmini programming interface, written for autocomp-gemmini from the
 * public Gemmini ISA description. Macro names, argument orders and instruction encodings
 * follow the Gemmini software library (gemmini-rocc-tests, v0.7-era), so a program written
 * against this header also runs on a real Spike-with-Gemmini or on FireSim.
 *
 * Sizes come from gemmini_params.h (generated per hardware config: DIM, scratchpad and
 * accumulator rows, elem_t / acc_t).
 *
 * Build flags:
 *   GEMMINI_MODEL  running on autocomp's model: read_cycles() returns the modelled cycle
 *                  count and gemmini_fence() also tells the model the CPU is waiting.
 *   (none)         real hardware / external simulator: read_cycles() is rdcycle.
 */
#ifndef AUTOCOMP_GEMMINI_H
#define AUTOCOMP_GEMMINI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmini_params.h"

/* ------------------------------------------------------------------ RoCC plumbing */
#define XCUSTOM_ACC 3

/* One RoCC command, opcode custom-3, rs1 and rs2 read, no result register (xd = 0). */
#ifdef GEMMINI_MODEL
/* On the model, the rd field (ignored by the hardware when xd = 0) names a register holding
 * minstret, read just before: that is how the model learns when the CPU issued the command. */
#define ROCC_INSTRUCTION_RS1_RS2(x, rs1, rs2, funct)                                     \
  do {                                                                                    \
    uint64_t rocc_instret_;                                                               \
    __asm__ volatile("csrr %0, instret\n\t.insn r CUSTOM_3, 3, %3, %0, %1, %2"            \
                     : "=&r"(rocc_instret_)                                               \
                     : "r"((uint64_t)(rs1)), "r"((uint64_t)(rs2)), "i"(funct) : "memory"); \
  } while (0)
#else
#define ROCC_INSTRUCTION_RS1_RS2(x, rs1, rs2, funct)                                     \
  __asm__ volatile(".insn r CUSTOM_3, 3, %2, x0, %0, %1"                                 \
                   :: "r"((uint64_t)(rs1)), "r"((uint64_t)(rs2)), "i"(funct) : "memory")
#endif

#define k_CONFIG 0
#define k_MVIN2 1
#define k_MVIN 2
#define k_MVOUT 3
#define k_COMPUTE_PRELOADED 4
#define k_COMPUTE_ACCUMULATE 5
#define k_PRELOAD 6
#define k_FLUSH 7
#define k_LOOP_WS 8
#define k_LOOP_WS_CONFIG_BOUNDS 9
#define k_LOOP_WS_CONFIG_ADDRS_AB 10
#define k_LOOP_WS_CONFIG_ADDRS_DC 11
#define k_LOOP_WS_CONFIG_STRIDES_AB 12
#define k_LOOP_WS_CONFIG_STRIDES_DC 13
#define k_MVIN3 14
#define k_LOOP_CONV_WS 15
#define k_LOOP_CONV_WS_CONFIG_1 16
#define k_LOOP_CONV_WS_CONFIG_2 17
#define k_LOOP_CONV_WS_CONFIG_3 18
#define k_LOOP_CONV_WS_CONFIG_4 19
#define k_LOOP_CONV_WS_CONFIG_5 20
#define k_LOOP_CONV_WS_CONFIG_6 21

#define CONFIG_EX 0
#define CONFIG_LD 1
#define CONFIG_ST 2

#define OUTPUT_STATIONARY 0
#define WEIGHT_STATIONARY 1

#define NO_ACTIVATION 0
#define RELU 1

/* Local (scratchpad / accumulator) addresses: 32 bits. Bit 31 selects the accumulator,
 * bit 30 accumulates instead of overwriting, bit 29 reads full-width acc_t on mvout. */
#define GARBAGE_ADDR ((uint32_t)(-1))
#define ACC_ADDR_BIT ((uint32_t)1 << 31)
#define ACC_ACCUMULATE_BIT ((uint32_t)1 << 30)
#define ACC_FULL_BIT ((uint32_t)1 << 29)

#define SPAD_ROWS (BANK_NUM * BANK_ROWS)

/* ------------------------------------------------------------------ scale bits */
static inline uint32_t scale_t_to_scale_t_bits(scale_t x) {
  union { scale_t f; uint32_t b; } u;
  u.f = x;
  return u.b;
}
static inline uint32_t acc_scale_t_to_acc_scale_t_bits(acc_scale_t x) {
  union { acc_scale_t f; uint32_t b; } u;
  u.f = x;
  return u.b;
}

/* ------------------------------------------------------------------ data movement */
#define gemmini_extended_mvin(dram_addr, spad_addr, cols, rows)                           \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, dram_addr,                                         \
      ((uint64_t)(rows) << (ADDR_LEN + 16)) | ((uint64_t)(cols) << ADDR_LEN) | (uint32_t)(spad_addr), \
      k_MVIN)
#define gemmini_extended_mvin2(dram_addr, spad_addr, cols, rows)                          \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, dram_addr,                                         \
      ((uint64_t)(rows) << (ADDR_LEN + 16)) | ((uint64_t)(cols) << ADDR_LEN) | (uint32_t)(spad_addr), \
      k_MVIN2)
#define gemmini_extended_mvin3(dram_addr, spad_addr, cols, rows)                          \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, dram_addr,                                         \
      ((uint64_t)(rows) << (ADDR_LEN + 16)) | ((uint64_t)(cols) << ADDR_LEN) | (uint32_t)(spad_addr), \
      k_MVIN3)
#define gemmini_block_mvin(dram_addr, spad_addr, len) \
  gemmini_extended_mvin(dram_addr, spad_addr, (len) * DIM, DIM)
#define gemmini_mvin(dram_addr, spad_addr) gemmini_extended_mvin(dram_addr, spad_addr, DIM, DIM)

#define gemmini_extended_mvout(dram_addr, spad_addr, cols, rows)                          \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, dram_addr,                                         \
      ((uint64_t)(rows) << (ADDR_LEN + 16)) | ((uint64_t)(cols) << ADDR_LEN) | (uint32_t)(spad_addr), \
      k_MVOUT)
#define gemmini_mvout(dram_addr, spad_addr) gemmini_extended_mvout(dram_addr, spad_addr, DIM, DIM)

/* ------------------------------------------------------------------ execute */
#define GEMMINI_OPERAND(addr, cols, rows) \
  (((uint64_t)(rows) << (ADDR_LEN + 16)) | ((uint64_t)(cols) << ADDR_LEN) | (uint32_t)(addr))

#define gemmini_extended_preload(BD, C, BD_cols, BD_rows, C_cols, C_rows)                 \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, GEMMINI_OPERAND(BD, BD_cols, BD_rows),              \
                           GEMMINI_OPERAND(C, C_cols, C_rows), k_PRELOAD)
#define gemmini_preload(BD, C) gemmini_extended_preload(BD, C, DIM, DIM, DIM, DIM)
#define gemmini_preload_zeros(C) gemmini_preload(GARBAGE_ADDR, C)

#define gemmini_extended_compute_preloaded(A, BD, A_cols, A_rows, BD_cols, BD_rows)       \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, GEMMINI_OPERAND(A, A_cols, A_rows),                 \
                           GEMMINI_OPERAND(BD, BD_cols, BD_rows), k_COMPUTE_PRELOADED)
#define gemmini_extended_compute_accumulated(A, BD, A_cols, A_rows, BD_cols, BD_rows)     \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, GEMMINI_OPERAND(A, A_cols, A_rows),                 \
                           GEMMINI_OPERAND(BD, BD_cols, BD_rows), k_COMPUTE_ACCUMULATE)
#define gemmini_compute_preloaded(A, BD) gemmini_extended_compute_preloaded(A, BD, DIM, DIM, DIM, DIM)
#define gemmini_compute_accumulated(A, BD) gemmini_extended_compute_accumulated(A, BD, DIM, DIM, DIM, DIM)

#define gemmini_flush(skip) ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, skip, 0, k_FLUSH)

/* ------------------------------------------------------------------ configuration */
/* config_ex: rs1 = acc_scale<<32 | A_stride<<16 | B_transpose<<9 | A_transpose<<8 |
 *                  set_only_strides<<7 | act<<3 | dataflow<<2 | CONFIG_EX
 *            rs2 = C_stride<<48 | sys_shift */
#define gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, sys_acc_scale, C_stride, A_stride, \
                                    A_transpose, B_transpose, set_only_strides)           \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                    \
      ((uint64_t)acc_scale_t_to_acc_scale_t_bits((acc_scale_t)(sys_acc_scale)) << 32) |    \
      ((uint64_t)(A_stride) << 16) | ((uint64_t)(B_transpose) << 9) |                      \
      ((uint64_t)(A_transpose) << 8) | ((uint64_t)(set_only_strides) << 7) |               \
      ((uint64_t)(sys_act) << 3) | ((uint64_t)(dataflow) << 2) | CONFIG_EX,                \
      ((uint64_t)(C_stride) << 48) | (uint32_t)(sys_shift), k_CONFIG)
#define gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose) \
  gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, ACC_SCALE_IDENTITY, 1, A_stride,     \
                              A_transpose, B_transpose, false)
#define gemmini_extended_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose) \
  gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose)
#define gemmini_config_ex(dataflow, sys_act, sys_shift) \
  gemmini_extended_config_ex(dataflow, sys_act, sys_shift, 1, 0, 0)

/* config_ld: rs1 = scale<<32 | block_mvin_stride<<16 | pixel_repeats<<8 | id<<3 | shrunk<<2 | CONFIG_LD
 *            rs2 = DRAM row stride in bytes. id 0/1/2 configures mvin/mvin2/mvin3. */
#define gemmini_extended3_config_ld(stride, scale, shrunk, block_mvin_stride, pixel_repeats, id) \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                    \
      ((uint64_t)scale_t_to_scale_t_bits((scale_t)(scale)) << 32) |                        \
      ((uint64_t)(block_mvin_stride) << 16) | ((uint64_t)(pixel_repeats) << 8) |           \
      ((uint64_t)(id) << 3) | ((uint64_t)(shrunk) << 2) | CONFIG_LD,                       \
      stride, k_CONFIG)
#define gemmini_extended2_config_ld(stride, scale, shrunk, pixel_repeats) \
  gemmini_extended3_config_ld(stride, scale, shrunk, DIM, pixel_repeats, 0)
#define gemmini_extended_config_ld(stride, scale) gemmini_extended2_config_ld(stride, scale, false, 1)
#define gemmini_config_ld(stride) gemmini_extended_config_ld(stride, MVIN_SCALE_IDENTITY)

/* config_st: rs1 = ocols<<56 | orows<<48 | pocols<<40 | porows<<32 | pool_out_dim<<24 |
 *                  lpad<<10 | upad<<8 | pool_size<<6 | pool_stride<<4 | act<<2 | CONFIG_ST
 *            rs2 = acc_scale<<32 | stride (bytes). mvout from the accumulator scales by
 *            acc_scale (round to nearest even), applies act, and saturates to elem_t. */
#define gemmini_extended2_config_st(stride, acc_act, acc_scale, pool_stride, pool_size, pool_out_dim, \
                                    porows, pocols, orows, ocols, upad, lpad)             \
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                    \
      ((uint64_t)(ocols) << 56) | ((uint64_t)(orows) << 48) | ((uint64_t)(pocols) << 40) | \
      ((uint64_t)(porows) << 32) | ((uint64_t)(pool_out_dim) << 24) |                      \
      ((uint64_t)(lpad) << 10) | ((uint64_t)(upad) << 8) | ((uint64_t)(pool_size) << 6) |  \
      ((uint64_t)(pool_stride) << 4) | ((uint64_t)(acc_act) << 2) | CONFIG_ST,             \
      ((uint64_t)acc_scale_t_to_acc_scale_t_bits((acc_scale_t)(acc_scale)) << 32) |        \
      (uint32_t)(stride), k_CONFIG)
#define gemmini_extended_config_st(stride, acc_act, acc_scale) \
  gemmini_extended2_config_st(stride, acc_act, acc_scale, 0, 0, 0, 0, 0, 0, 0, 0, 0)
#define gemmini_config_st(stride) gemmini_extended_config_st(stride, NO_ACTIVATION, ACC_SCALE_IDENTITY)

/* ------------------------------------------------------------------ fence and cycles */
#ifdef GEMMINI_MODEL
/* The model cannot see a RISC-V fence, so the fence is followed by a private notification. */
#define gemmini_fence()                                                                   \
  do { __asm__ volatile("fence" ::: "memory");                                            \
       ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, 0, 0, 123); } while (0)
static inline uint64_t read_cycles(void) {
  uint64_t c, t;
  __asm__ volatile("csrr %1, instret\n\t.insn r CUSTOM_3, 7, 120, %0, x0, %1" : "=r"(c), "=&r"(t) :: "memory");
  return c;
}
#else
#define gemmini_fence() __asm__ volatile("fence" ::: "memory")
static inline uint64_t read_cycles(void) {
  uint64_t c;
  __asm__ volatile("rdcycle %0" : "=r"(c));
  return c;
}
#endif

/* ------------------------------------------------------------------ hardware loops */
/* LOOP_WS: a hardware state machine runs a whole I x J x K (in DIM tiles) WS matmul:
 * C = act(scale(A*B + D)), A/B/D/C strides in elements. */
#define gemmini_loop_ws(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride, C_stride, \
                        A_transpose, B_transpose, full_C, low_D, ex_accumulate, act, a_spad_id, b_spad_id, \
                        is_resadd)                                                        \
  do {                                                                                    \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(pad_K) << 32) | ((uint64_t)(pad_J) << 16) | (uint64_t)(pad_I),        \
        ((uint64_t)(K) << 32) | ((uint64_t)(J) << 16) | (uint64_t)(I), k_LOOP_WS_CONFIG_BOUNDS); \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, A, B, k_LOOP_WS_CONFIG_ADDRS_AB);               \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, D, C, k_LOOP_WS_CONFIG_ADDRS_DC);               \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, A_stride, B_stride, k_LOOP_WS_CONFIG_STRIDES_AB); \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, D_stride, C_stride, k_LOOP_WS_CONFIG_STRIDES_DC); \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(a_spad_id) << 18) | ((uint64_t)(b_spad_id) << 16) | ((uint64_t)(act) << 8) | \
        ((uint64_t)(low_D) << 2) | ((uint64_t)(full_C) << 1) | (uint64_t)(ex_accumulate), \
        ((uint64_t)(is_resadd) << 2) | ((uint64_t)(B_transpose) << 1) | (uint64_t)(A_transpose), \
        k_LOOP_WS);                                                                       \
  } while (0)

/* LOOP_CONV_WS: a hardware state machine runs one convolution tile (NHWC input,
 * [kh][kw][in_ch][out_ch] weights, NHWC output). */
#define gemmini_loop_conv_ws(batch_size, in_dim, in_channels, out_channels, out_dim, pool_out_dim, stride, \
    padding, kernel_dim, kernel_dilation, pool_size, pool_stride, pool_padding, batches, porows, pocols, \
    pochs, krows, kcols, kchs, lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad, orows, ocols, weights, \
    output, bias, input, no_bias, no_pool, downsample, wrot180, input_dilated, act, trans_output_1203, \
    trans_weight_1203, trans_weight_0132, trans_input_3120, max_pixels_per_row, in_stride, weight_stride, \
    out_stride, dw, a_spad_id, b_spad_id)                                                \
  do {                                                                                    \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(out_channels) << 48) | ((uint64_t)(in_channels) << 32) |              \
        ((uint64_t)(in_dim) << 16) | (uint64_t)(batch_size),                              \
        ((uint64_t)(padding) << 48) | ((uint64_t)(stride) << 32) |                        \
        ((uint64_t)(pool_out_dim) << 16) | (uint64_t)(out_dim), k_LOOP_CONV_WS_CONFIG_1); \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(kernel_dim) << 48) | ((uint64_t)(pool_size) << 32) |                  \
        ((uint64_t)(pool_stride) << 16) | (uint64_t)(pool_padding),                       \
        ((uint64_t)(batches) << 48) | ((uint64_t)(porows) << 32) |                        \
        ((uint64_t)(pocols) << 16) | (uint64_t)(pochs), k_LOOP_CONV_WS_CONFIG_2);         \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(krows) << 48) | ((uint64_t)(kcols) << 32) | ((uint64_t)(kchs) << 16) | \
        (uint64_t)(lpad),                                                                 \
        ((uint64_t)(rpad) << 48) | ((uint64_t)(upad) << 32) | ((uint64_t)(dpad) << 16) |  \
        (uint64_t)(plpad), k_LOOP_CONV_WS_CONFIG_3);                                      \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(orows) << 48) | ((uint64_t)(prpad) << 32) | ((uint64_t)(pupad) << 21) | \
        ((uint64_t)(pdpad) << 10) | (uint64_t)(kernel_dilation),                          \
        ((uint64_t)(in_stride) << 48) | ((uint64_t)(weight_stride) << 32) |               \
        ((uint64_t)(out_stride) << 16) | (uint64_t)(ocols), k_LOOP_CONV_WS_CONFIG_4);     \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, weights, output, k_LOOP_CONV_WS_CONFIG_5);     \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, bias, input, k_LOOP_CONV_WS_CONFIG_6);         \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC,                                                 \
        ((uint64_t)(a_spad_id) << 18) | ((uint64_t)(b_spad_id) << 16) |                   \
        ((uint64_t)(max_pixels_per_row) << 8) | ((uint64_t)(dw) << 6) |                   \
        ((uint64_t)(trans_input_3120) << 5) | ((uint64_t)(trans_weight_0132) << 4) |      \
        ((uint64_t)(trans_weight_1203) << 3) | ((uint64_t)(trans_output_1203) << 2) |     \
        ((uint64_t)(wrot180) << 1) | (uint64_t)(no_bias),                                 \
        ((uint64_t)(act) << 3) | ((uint64_t)(input_dilated) << 2) |                       \
        ((uint64_t)(downsample) << 1) | (uint64_t)(no_pool), k_LOOP_CONV_WS);             \
  } while (0)

/* ------------------------------------------------------------------ CPU helpers */
static inline elem_t gemmini_saturate(acc_t x) {
#ifdef ELEM_T_IS_FLOAT
  return x;
#else
  return x > elem_t_max ? elem_t_max : (x < elem_t_min ? elem_t_min : (elem_t)x);
#endif
}

/* The store unit's arithmetic: acc * scale rounded to nearest even, activation, saturation. */
static inline elem_t gemmini_acc_to_elem(acc_t x, acc_scale_t scale, int act) {
#ifdef ELEM_T_IS_FLOAT
  acc_t y = x * scale;
  if (act == RELU && y < 0) y = 0;
  return y;
#else
  float f = (float)x * scale;
  /* round half to even without libm */
  double r = (double)(int64_t)f;
  double diff = (double)f - r;
  if (diff > 0.5 || (diff == 0.5 && ((int64_t)r & 1))) r += 1.0;
  else if (diff < -0.5 || (diff == -0.5 && ((int64_t)r & 1))) r -= 1.0;
  int64_t v = (int64_t)r;
  if (act == RELU && v < 0) v = 0;
  return v > elem_t_max ? elem_t_max : (v < elem_t_min ? elem_t_min : (elem_t)v);
#endif
}

/* ------------------------------------------------------------------ software library */
enum tiled_matmul_type_t { OS, WS, CPU };

/* C = act(scale(A*B + D)) on the CPU. D may be NULL; repeating_bias broadcasts D's first row. */
static void matmul_cpu(bool transA, bool transB, size_t DIM_I, size_t DIM_J, size_t DIM_K,
                       const elem_t *A, const elem_t *B, const acc_t *D, elem_t *C,
                       size_t stride_A, size_t stride_B, size_t stride_D, size_t stride_C,
                       scale_t A_scale_factor, scale_t B_scale_factor, acc_scale_t D_scale_factor,
                       int act, acc_scale_t scale, bool repeating_bias) {
  (void)A_scale_factor; (void)B_scale_factor; (void)D_scale_factor;
  for (size_t i = 0; i < DIM_I; i++) {
    for (size_t j = 0; j < DIM_J; j++) {
      acc_t sum = 0;
      if (D != NULL) sum = D[(repeating_bias ? 0 : i) * stride_D + j];
      for (size_t k = 0; k < DIM_K; k++) {
        elem_t a = transA ? A[k * stride_A + i] : A[i * stride_A + k];
        elem_t b = transB ? B[j * stride_B + k] : B[k * stride_B + j];
        sum += (acc_t)a * (acc_t)b;
      }
      C[i * stride_C + j] = gemmini_acc_to_elem(sum, scale, act);
    }
  }
}

/* The largest tiles (in DIM blocks) that fit: A and B each in half the scratchpad, C in the
 * accumulator. Grows the tile along the dimension with the most blocks left. */
static void tiled_matmul_tile_sizes(size_t dim_I, size_t dim_J, size_t dim_K,
                                    size_t *tile_I, size_t *tile_J, size_t *tile_K) {
  const size_t half_mats = SPAD_ROWS / 2 / DIM;
  const size_t acc_mats = ACC_ROWS / DIM;
  const size_t I = (dim_I + DIM - 1) / DIM, J = (dim_J + DIM - 1) / DIM, K = (dim_K + DIM - 1) / DIM;
  size_t ti = 1, tj = 1, tk = 1;
  bool grew = true;
  while (grew) {
    grew = false;
    if (tk < K && ti * (tk + 1) <= half_mats && (tk + 1) * tj <= half_mats) { tk++; grew = true; }
    if (tj < J && ti * (tj + 1) <= acc_mats && tk * (tj + 1) <= half_mats) { tj++; grew = true; }
    if (ti < I && (ti + 1) * tj <= acc_mats && (ti + 1) * tk <= half_mats) { ti++; grew = true; }
  }
  *tile_I = ti; *tile_J = tj; *tile_K = tk;
}

/* Weight-stationary with the LOOP_WS state machine, tile by tile. */
static void tiled_matmul_ws_loops(size_t dim_I, size_t dim_J, size_t dim_K,
                                  const elem_t *A, const elem_t *B, const void *D, void *C,
                                  size_t stride_A, size_t stride_B, size_t stride_D, size_t stride_C,
                                  int act, bool repeating_bias, size_t tile_I, size_t tile_J, size_t tile_K,
                                  bool transpose_A, bool transpose_B, bool full_C, bool low_D) {
  const size_t I = (dim_I + DIM - 1) / DIM, J = (dim_J + DIM - 1) / DIM, K = (dim_K + DIM - 1) / DIM;
  const size_t c_size = full_C ? sizeof(acc_t) : sizeof(elem_t);
  const size_t d_size = low_D ? sizeof(elem_t) : sizeof(acc_t);
  for (size_t i0 = 0; i0 < I; i0 += tile_I) {
    for (size_t j0 = 0; j0 < J; j0 += tile_J) {
      for (size_t k0 = 0; k0 < K; k0 += tile_K) {
        const size_t ti = I - i0 < tile_I ? I - i0 : tile_I;
        const size_t tj = J - j0 < tile_J ? J - j0 : tile_J;
        const size_t tk = K - k0 < tile_K ? K - k0 : tile_K;
        const size_t pad_I = (i0 + ti == I) ? I * DIM - dim_I : 0;
        const size_t pad_J = (j0 + tj == J) ? J * DIM - dim_J : 0;
        const size_t pad_K = (k0 + tk == K) ? K * DIM - dim_K : 0;
        const elem_t *a = transpose_A ? A + k0 * DIM * stride_A + i0 * DIM : A + i0 * DIM * stride_A + k0 * DIM;
        const elem_t *b = transpose_B ? B + j0 * DIM * stride_B + k0 * DIM : B + k0 * DIM * stride_B + j0 * DIM;
        const void *d = NULL;
        if (D != NULL && k0 == 0)
          d = (const char *)D + ((repeating_bias ? 0 : i0 * DIM * stride_D) + j0 * DIM) * d_size;
        void *c = (k0 + tk == K) ? (char *)C + (i0 * DIM * stride_C + j0 * DIM) * c_size : NULL;
        gemmini_loop_ws(ti, tj, tk, pad_I, pad_J, pad_K, a, b, d, c, stride_A, stride_B,
                        repeating_bias ? 0 : stride_D, stride_C, transpose_A, transpose_B, full_C, low_D,
                        k0 != 0, act, 0, 0, false);
      }
    }
  }
}

/* Output-stationary with primitive commands: one DIM x DIM output tile at a time. */
static void tiled_matmul_os(size_t dim_I, size_t dim_J, size_t dim_K,
                            const elem_t *A, const elem_t *B, const acc_t *D, elem_t *C,
                            size_t stride_A, size_t stride_B, size_t stride_D, size_t stride_C,
                            bool repeating_bias) {
  const uint32_t A_sp = 0, B_sp = SPAD_ROWS / 2, C_acc = ACC_ADDR_BIT;
  for (size_t i = 0; i < dim_I; i += DIM) {
    const size_t rows = dim_I - i < DIM ? dim_I - i : DIM;
    for (size_t j = 0; j < dim_J; j += DIM) {
      const size_t cols = dim_J - j < DIM ? dim_J - j : DIM;
      if (D != NULL)
        gemmini_extended_mvin3(D + (repeating_bias ? 0 : i * stride_D) + j, C_acc, cols, rows);
      for (size_t k = 0; k < dim_K; k += DIM) {
        const size_t ks = dim_K - k < DIM ? dim_K - k : DIM;
        const bool last = k + DIM >= dim_K;
        gemmini_extended_mvin(A + i * stride_A + k, A_sp, ks, rows);
        gemmini_extended_mvin2(B + k * stride_B + j, B_sp, cols, ks);
        const uint32_t out = last ? (C_acc | (D != NULL ? ACC_ACCUMULATE_BIT : 0)) : GARBAGE_ADDR;
        gemmini_extended_preload(GARBAGE_ADDR, out, DIM, DIM, cols, rows);
        if (k == 0) gemmini_extended_compute_preloaded(A_sp, B_sp, ks, rows, cols, ks);
        else gemmini_extended_compute_accumulated(A_sp, B_sp, ks, rows, cols, ks);
      }
      gemmini_extended_mvout(C + i * stride_C + j, C_acc, cols, rows);
    }
  }
}

static void tiled_matmul(size_t dim_I, size_t dim_J, size_t dim_K,
                         const elem_t *A, const elem_t *B, const void *D, void *C,
                         size_t stride_A, size_t stride_B, size_t stride_D, size_t stride_C,
                         scale_t A_scale_factor, scale_t B_scale_factor, acc_scale_t D_scale_factor,
                         int act, acc_scale_t scale, acc_scale_t bert_scale, bool repeating_bias,
                         size_t tile_I, size_t tile_J, size_t tile_K,
                         bool transpose_A, bool transpose_B, bool full_C, bool low_D,
                         uint8_t weightA, enum tiled_matmul_type_t tiled_matmul_type) {
  (void)bert_scale; (void)weightA;
  if (tiled_matmul_type == CPU) {
    matmul_cpu(transpose_A, transpose_B, dim_I, dim_J, dim_K, A, B, (const acc_t *)D, (elem_t *)C,
               stride_A, stride_B, stride_D, stride_C, A_scale_factor, B_scale_factor, D_scale_factor,
               act, scale, repeating_bias);
    return;
  }
  const size_t c_size = full_C ? sizeof(acc_t) : sizeof(elem_t);
  gemmini_extended_config_st(stride_C * c_size, act, scale);
  gemmini_extended3_config_ld(stride_A * sizeof(elem_t), A_scale_factor, false, DIM, 1, 0);
  gemmini_extended3_config_ld(stride_B * sizeof(elem_t), B_scale_factor, false, DIM, 1, 1);
  gemmini_extended3_config_ld((repeating_bias ? 0 : stride_D) * (low_D ? sizeof(elem_t) : sizeof(acc_t)),
                              D_scale_factor, low_D, DIM, 1, 2);
  if (tiled_matmul_type == OS) {
    gemmini_extended_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 0, 1, 0, 0);
    tiled_matmul_os(dim_I, dim_J, dim_K, A, B, (const acc_t *)D, (elem_t *)C, stride_A, stride_B,
                    stride_D, stride_C, repeating_bias);
  } else {
    gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, transpose_A, transpose_B);
    tiled_matmul_ws_loops(dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C,
                          act, repeating_bias, tile_I, tile_J, tile_K, transpose_A, transpose_B,
                          full_C, low_D);
  }
  gemmini_fence();
}

static void tiled_matmul_auto(size_t dim_I, size_t dim_J, size_t dim_K,
                              const elem_t *A, const elem_t *B, const void *D, void *C,
                              size_t stride_A, size_t stride_B, size_t stride_D, size_t stride_C,
                              scale_t A_scale_factor, scale_t B_scale_factor, acc_scale_t D_scale_factor,
                              int act, acc_scale_t scale, acc_scale_t bert_scale, bool repeating_bias,
                              bool transpose_A, bool transpose_B, bool full_C, bool low_D,
                              uint8_t weightA, enum tiled_matmul_type_t tiled_matmul_type) {
  size_t ti, tj, tk;
  tiled_matmul_tile_sizes(dim_I, dim_J, dim_K, &ti, &tj, &tk);
  tiled_matmul(dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C,
               A_scale_factor, B_scale_factor, D_scale_factor, act, scale, bert_scale, repeating_bias,
               ti, tj, tk, transpose_A, transpose_B, full_C, low_D, weightA, tiled_matmul_type);
}

/* ------------------------------------------------------------------ convolution */
/* NHWC input [batch][in_dim][in_dim][in_channels], weights [k][k][in_channels][out_channels],
 * bias [out_channels] (may be NULL), output [batch][out_dim][out_dim][out_channels]. */
static void conv_cpu(int batch_size, int in_dim, int in_channels, int out_channels, int out_dim,
                     int stride, int padding, int kernel_dim, const elem_t *input, const elem_t *weights,
                     const acc_t *bias, elem_t *output, int act, acc_scale_t scale) {
  for (int b = 0; b < batch_size; b++)
    for (int orow = 0; orow < out_dim; orow++)
      for (int ocol = 0; ocol < out_dim; ocol++)
        for (int och = 0; och < out_channels; och++) {
          acc_t sum = bias ? bias[och] : 0;
          for (int kr = 0; kr < kernel_dim; kr++)
            for (int kc = 0; kc < kernel_dim; kc++) {
              const int irow = orow * stride + kr - padding, icol = ocol * stride + kc - padding;
              if (irow < 0 || irow >= in_dim || icol < 0 || icol >= in_dim) continue;
              const elem_t *x = input + ((b * in_dim + irow) * in_dim + icol) * in_channels;
              const elem_t *w = weights + (kr * kernel_dim + kc) * in_channels * out_channels + och;
              for (int ich = 0; ich < in_channels; ich++) sum += (acc_t)x[ich] * (acc_t)w[ich * out_channels];
            }
          output[((b * out_dim + orow) * out_dim + ocol) * out_channels + och] =
              gemmini_acc_to_elem(sum, scale, act);
        }
}

/* One LOOP_CONV_WS call per tile of output rows x output channels. */
static void tiled_conv(int batch_size, int in_dim, int in_channels, int out_channels, int out_dim,
                       int stride, int padding, int kernel_dim, int batches, int porows, int pocols, int pochs,
                       const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output,
                       int act, acc_scale_t scale) {
  gemmini_extended_config_st(out_channels * sizeof(elem_t), act, scale);
  gemmini_extended3_config_ld(in_channels * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 0);
  gemmini_extended3_config_ld(out_channels * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, DIM, 1, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, DIM, 1, 2);
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, stride, 0, 0);
  for (int b = 0; b < batch_size; b += batches)
    for (int orow = 0; orow < out_dim; orow += porows)
      for (int ocol = 0; ocol < out_dim; ocol += pocols)
        for (int och = 0; och < out_channels; och += pochs) {
          const int nb = batch_size - b < batches ? batch_size - b : batches;
          const int nr = out_dim - orow < porows ? out_dim - orow : porows;
          const int nc = out_dim - ocol < pocols ? out_dim - ocol : pocols;
          const int nch = out_channels - och < pochs ? out_channels - och : pochs;
          const int irow0 = orow * stride - padding, icol0 = ocol * stride - padding;
          const int irows = (nr - 1) * stride + kernel_dim, icols = (nc - 1) * stride + kernel_dim;
          const int upad = irow0 < 0 ? -irow0 : 0, lpad = icol0 < 0 ? -icol0 : 0;
          const int dpad = irow0 + irows > in_dim ? irow0 + irows - in_dim : 0;
          const int rpad = icol0 + icols > in_dim ? icol0 + icols - in_dim : 0;
          const elem_t *in = input + ((b * in_dim + irow0 + upad) * in_dim + icol0 + lpad) * in_channels;
          const elem_t *w = weights + och;
          const acc_t *bi = bias ? bias + och : NULL;
          elem_t *out = output + ((b * out_dim + orow) * out_dim + ocol) * out_channels + och;
          gemmini_loop_conv_ws(batch_size, in_dim, in_channels, out_channels, out_dim, out_dim, stride,
                               padding, kernel_dim, 1, 1, 1, 0, nb, nr, nc, nch, kernel_dim, kernel_dim,
                               in_channels, lpad, rpad, upad, dpad, 0, 0, 0, 0, nr, nc, w, out, bi, in,
                               bias == NULL, 1, 0, 0, 0, act, 0, 0, 0, 0, 0, in_channels, out_channels,
                               out_channels, 0, 0, 0);
        }
  gemmini_fence();
}

/* Picks tiles that fit the scratchpad and accumulator, then runs tiled_conv. */
static void tiled_conv_auto(int batch_size, int in_dim, int in_channels, int out_channels, int out_dim,
                            int stride, int padding, int kernel_dim, const elem_t *input,
                            const elem_t *weights, const acc_t *bias, elem_t *output, int act,
                            acc_scale_t scale, enum tiled_matmul_type_t type) {
  if (type == CPU) {
    conv_cpu(batch_size, in_dim, in_channels, out_channels, out_dim, stride, padding, kernel_dim,
             input, weights, bias, output, act, scale);
    return;
  }
  const int half = SPAD_ROWS / 2;
  const int ich_blocks = (in_channels + DIM - 1) / DIM;
  int pochs = out_channels;
  while (kernel_dim * kernel_dim * in_channels * ((pochs + DIM - 1) / DIM) > half && pochs > DIM)
    pochs = (pochs / 2 + DIM - 1) / DIM * DIM;
  int porows = out_dim, pocols = out_dim;
  for (;;) {
    const int irows = (porows - 1) * stride + kernel_dim, icols = (pocols - 1) * stride + kernel_dim;
    const int pixels = porows * pocols;
    const int acc_rows = (pixels + DIM - 1) / DIM * DIM * ((pochs + DIM - 1) / DIM);
    if (irows * icols * ich_blocks <= half && acc_rows <= ACC_ROWS) break;
    if (porows > 1) porows = (porows + 1) / 2;
    else if (pocols > 1) pocols = (pocols + 1) / 2;
    else break;
  }
  tiled_conv(batch_size, in_dim, in_channels, out_channels, out_dim, stride, padding, kernel_dim, 1,
             porows, pocols, pochs, input, weights, bias, output, act, scale);
}

#endif /* AUTOCOMP_GEMMINI_H */
