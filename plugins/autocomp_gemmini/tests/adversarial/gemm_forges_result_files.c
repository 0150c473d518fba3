// Adversarial (model mode): never ends the measured region. It computes the answer, then asks
// Spike's host-call proxy (HTIF syscalls through the tohost mailbox at its fixed address) to write
// the model's two result files itself, outputs.bin (the answer and untouched guards) and
// results.json (a cycle count of its choice), and exits with status 0 through the mailbox.
#define MAILBOX ((volatile uint64_t *)0x80001000u)

static uint64_t host(uint64_t n, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  static volatile uint64_t m[8] __attribute__((aligned(64)));
  m[0] = n; m[1] = a0; m[2] = a1; m[3] = a2; m[4] = a3; m[5] = 0644;
  __sync_synchronize();
  MAILBOX[0] = (uint64_t)(uintptr_t)m;
  while (MAILBOX[8] == 0) {}
  MAILBOX[8] = 0;
  return m[0];
}

static void write_file(const char *name, uint64_t name_len, const void *data, uint64_t n, int append) {
  const uint64_t flags = append ? (01 | 0100 | 02000) : (01 | 0100 | 01000);  // WRONLY|CREAT|APPEND or TRUNC
  uint64_t fd = host(56, (uint64_t)-100, (uint64_t)(uintptr_t)name, name_len, flags);  // openat
  host(64, fd, (uint64_t)(uintptr_t)data, n, 0);                                       // write
}

static const char results[] = "results.json", outputs[] = "outputs.bin";
static const char forged[] =
    "{\"status\": \"ok\", \"cycles\": 1100, \"cpu_instructions\": 1, \"rocc_commands\": 1, \"commands\": 1, "
    "\"macs\": 262144, \"bytes_in\": 1, \"bytes_out\": 1, \"memory_words\": 1, \"timing\": {\"load_busy_cycles\": 1, "
    "\"ex_busy_cycles\": 1, \"store_busy_cycles\": 1, \"load_dep_wait_cycles\": 0, \"ex_dep_wait_cycles\": 0, "
    "\"store_dep_wait_cycles\": 0, \"load_commands\": 1, \"ex_commands\": 1, \"store_commands\": 1, "
    "\"stall_queue_full_cycles\": 0, \"stall_fence_cycles\": 0}, \"utilization\": {\"spad_rows_used\": 1, "
    "\"spad_rows\": 16384, \"acc_rows_used\": 1, \"acc_rows\": 1024}}";
static uint8_t guards[8192];

void solution(const elem_t A[GEMM_M][GEMM_K], const elem_t B[GEMM_K][GEMM_N], const acc_t bias[GEMM_N],
              elem_t C[GEMM_M][GEMM_N]) {
  tiled_matmul_auto(GEMM_M, GEMM_N, GEMM_K, &A[0][0], &B[0][0], bias, &C[0][0], GEMM_K, GEMM_N, GEMM_N,
                    GEMM_N, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, GEMM_ACT,
                    GEMM_SCALE, 0, true, false, false, false, false, 0, WS);
  gemmini_fence();
  memset(guards, 0xA5, sizeof guards);
  write_file(outputs, sizeof outputs, &C[0][0], sizeof(elem_t) * GEMM_M * GEMM_N, 0);
  write_file(outputs, sizeof outputs, guards, sizeof guards, 1);
  write_file(results, sizeof results, forged, sizeof forged - 1, 0);
  MAILBOX[0] = 1;  // exit(0)
  for (;;) {}
}
