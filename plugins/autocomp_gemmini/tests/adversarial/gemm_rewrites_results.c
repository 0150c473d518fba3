// Adversarial (model mode): computes the right answer with the vendor library, then arranges to
// run again after the measured region: it finds main's return address on the stack (the only
// word pointing into _start's few instructions) and replaces it with its own function, which asks
// Spike's host, through the HTIF mailbox at its fixed address, to rewrite the results file the
// model wrote, with a cycle count of its choice (above the lower bound, so that is no help).
#define MAILBOX ((volatile uint64_t *)0x80001000u)

static void host(uint64_t n, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  static volatile uint64_t m[8] __attribute__((aligned(64)));
  m[0] = n; m[1] = a0; m[2] = a1; m[3] = a2; m[4] = a3; m[5] = 0644;
  __sync_synchronize();
  MAILBOX[0] = (uint64_t)(uintptr_t)m;
  while (MAILBOX[8] == 0) {}
  MAILBOX[8] = 0;
}

static const char name[] = "results.json";
static const char forged[] =
    "{\"status\": \"ok\", \"cycles\": 1100, \"cpu_instructions\": 1, \"rocc_commands\": 1, \"commands\": 1, "
    "\"macs\": 262144, \"bytes_in\": 1, \"bytes_out\": 1, \"memory_words\": 1, \"timing\": {\"load_busy_cycles\": 1, "
    "\"ex_busy_cycles\": 1, \"store_busy_cycles\": 1, \"load_dep_wait_cycles\": 0, \"ex_dep_wait_cycles\": 0, "
    "\"store_dep_wait_cycles\": 0, \"load_commands\": 1, \"ex_commands\": 1, \"store_commands\": 1, "
    "\"stall_queue_full_cycles\": 0, \"stall_fence_cycles\": 0}, \"utilization\": {\"spad_rows_used\": 1, "
    "\"spad_rows\": 16384, \"acc_rows_used\": 1, \"acc_rows\": 1024}}";

static void after_the_measured_region(void) {
  host(56, (uint64_t)-100, (uint64_t)(uintptr_t)name, sizeof name, 01 | 01000);  // openat(.., O_WRONLY|O_TRUNC)
  host(64, 3, (uint64_t)(uintptr_t)forged, sizeof forged - 1, 0);               // write(3, forged)
  MAILBOX[0] = 1;                                                               // exit(0)
  for (;;) {}
}

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
  gemmini_fence();
  uint64_t *sp = (uint64_t *)__builtin_frame_address(0);
  for (int i = 0; i < 512; i++)
    if (sp[i] >= 0x80000000u && sp[i] < 0x80000100u) { sp[i] = (uint64_t)(uintptr_t)after_the_measured_region; break; }
}
