// The Gemmini model's hot path, compiled (built on first use by native.py).
//
// Spike calls into Python once per RoCC command; in pure Python each command then costs
// tens of numpy and interpreter calls on 16x16 tiles. This extension does the same work in
// C++: the timing model (Timing), the int8 primitive commands (Core: config, mvin, mvout,
// preload, compute, flush) and DMA through Spike's MMU (GuestMemory). The LOOP_WS and
// LOOP_CONV_WS state machines stay in loops.py, and fp32 configurations use the Python
// model, whose float32 matrix products come from numpy's BLAS.
//
// The Python model (functional.py, timing.py, memory.py) is the reference: this file
// follows it step by step, error messages included, and tests/test_gemmini_native.py checks
// that both give the same state after every command of random command streams.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <typeinfo>
#include <vector>

// Spike's MMU, as far as we use it: two exported member functions, found with dlsym when
// the extension runs inside Spike. Only its typeid is needed here (to ask pybind11 for the
// C++ pointer behind PySpike's `proc.mmu`).
class mmu_t {};

namespace {

// ------------------------------------------------------------------------- helpers
enum Unit { LOAD = 0, EX = 1, STORE = 2 };
enum Space { SPAD = 0, ACC = 1 };
const char* const UNIT_NAMES[3] = {"load", "ex", "store"};

constexpr uint64_t GARBAGE_ADDR = 0xFFFFFFFFull;
constexpr uint64_t ACC_BIT = 1ull << 31;
constexpr uint64_t ACCUMULATE_BIT = 1ull << 30;
constexpr uint64_t FULL_BIT = 1ull << 29;
constexpr uint64_t ROW_MASK = (1ull << 29) - 1;
constexpr int64_t INT32_MIN_ = -(1ll << 31), INT32_MAX_ = (1ll << 31) - 1;
constexpr int MAX_DIM = 32;

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string hex(uint64_t v) { return format("0x%llx", (unsigned long long)v); }  // Python's {:#x}

uint64_t bits(uint64_t v, int lo, int width) { return (v >> lo) & ((width >= 64) ? ~0ull : ((1ull << width) - 1)); }

float f32_from_bits(uint64_t b) {
  uint32_t u = (uint32_t)b;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int32_t wrap_int32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }
int8_t to_elem_int(int64_t x) { return (int8_t)std::min<int64_t>(127, std::max<int64_t>(-128, x)); }
int64_t activate(int64_t x, long act) { return act == 1 ? std::max<int64_t>(x, 0) : x; }

// numerics.scale_int: rint(float32(x) * float32(scale)), clamped to [lo, hi] (numpy turns NaN into INT64_MIN)
int64_t scale_int(int64_t x, float scale, int64_t lo, int64_t hi) {
  double y = (double)std::rint((float)x * scale);
  if (std::isnan(y)) return INT64_MIN;
  y = std::min<double>(std::max<double>(y, (double)lo), (double)hi);
  return (int64_t)y;
}

int64_t shift_right(int64_t x, uint64_t s) { return s >= 64 ? (x < 0 ? -1 : 0) : (x >> s); }

struct LocalAddr {
  uint64_t raw, row;
  bool garbage, is_acc, accumulate, full;
  explicit LocalAddr(uint64_t r = GARBAGE_ADDR)
      : raw(r), row(r & ROW_MASK), garbage(r == GARBAGE_ADDR), is_acc(r & ACC_BIT), accumulate(r & ACCUMULATE_BIT),
        full(r & FULL_BIT) {}
  int space() const { return is_acc ? ACC : SPAD; }
};

struct Operand {
  LocalAddr addr;
  long long cols, rows;
};

Operand operand(uint64_t v) { return {LocalAddr(v & 0xFFFFFFFFull), (long long)bits(v, 32, 16), (long long)bits(v, 48, 16)}; }

struct Rows {
  int space;
  long long row, n;
};

// A Python int for a + b * c (addresses may pass 2^64 in Python's arithmetic).
PyObject* py_address(uint64_t a, uint64_t b, uint64_t c) {
  unsigned __int128 v = (unsigned __int128)a + (unsigned __int128)b * c;
  if (v >> 64 == 0) return PyLong_FromUnsignedLongLong((uint64_t)v);
  PyObject* hi = PyLong_FromUnsignedLongLong((uint64_t)(v >> 64));
  PyObject* lo = PyLong_FromUnsignedLongLong((uint64_t)v);
  PyObject* sixty_four = PyLong_FromLong(64);
  PyObject* shifted = (hi && sixty_four) ? PyNumber_Lshift(hi, sixty_four) : nullptr;
  PyObject* out = (shifted && lo) ? PyNumber_Add(shifted, lo) : nullptr;
  Py_XDECREF(hi);
  Py_XDECREF(lo);
  Py_XDECREF(sixty_four);
  Py_XDECREF(shifted);
  return out;
}

bool get_double(PyObject* obj, const char* name, double* out) {
  PyObject* v = PyObject_GetAttrString(obj, name);
  if (!v) return false;
  *out = PyFloat_AsDouble(v);
  Py_DECREF(v);
  return !PyErr_Occurred();
}

// ------------------------------------------------------------------------- Timing
// timing.TimingModel, in C++.
struct TimingState {
  double cpi, rocc_issue, dma_latency, bus_bytes_per_cycle, dma_overhead, acc_read_latency, preload_per_row,
      preload_reuse, fill_drain_dims, compute_overhead, min_rows, config, flush_dims, loop_issue;
  long long depth[3];
  double unit_free[3] = {0, 0, 0};
  std::deque<double> pending[3];
  std::vector<double> written[2], read_done[2];
  double last_end = 0, stall = 0;
  long long instret = 0;
  double busy[3] = {0, 0, 0}, dep_wait[3] = {0, 0, 0};
  long long commands[3] = {0, 0, 0};
  double stall_queue_full = 0, stall_fence = 0;
  long long fences = 0;
  // the compute just scheduled on the execute unit, while the next execute command may still be a
  // preload that runs alongside it (timing.TimingModel._compute_tail)
  bool tail = false;
  double tail_start = 0, tail_occ = 0;
  std::vector<long long> tail_banks;  // the banks its reads start in (-1: the accumulator)
  long long bank_rows = 1;

  long long bank_of(const Rows& r) const { return r.space == ACC ? -1 : r.row / bank_rows; }

  double cpu_now() const { return (double)instret * cpi + stall; }

  // -1 with a Python exception set when the queue depth is zero (as Python's deque indexing)
  bool issue(int unit, double* t_out) {
    stall += rocc_issue;
    double t = (double)instret * cpi + stall;
    std::deque<double>& q = pending[unit];
    while (!q.empty() && q.front() <= t) q.pop_front();
    if ((long long)q.size() >= depth[unit]) {
      if (q.empty()) {
        PyErr_SetString(PyExc_IndexError, "deque index out of range");
        return false;
      }
      double wait = q.front() - t;
      stall += wait;
      stall_queue_full += wait;
      t += wait;
      while (!q.empty() && q.front() <= t) q.pop_front();
    }
    *t_out = t;
    return true;
  }

  void fence() {
    double t = cpu_now();
    fences += 1;
    if (last_end > t) {
      stall_fence += last_end - t;
      stall += last_end - t;
    }
  }

  bool run(int unit, double issued, double occupancy, double latency, const Rows* reads, int nreads, const Rows* writes,
           int nwrites, double* done_out) {
    if (unit == EX) tail = false;
    double free_ = unit_free[unit];
    double ready = issued >= free_ ? issued : free_;
    double dep = ready;
    for (int pass = 0; pass < 2; pass++) {
      const Rows* list = pass ? writes : reads;
      int n = pass ? nwrites : nreads;
      for (int i = 0; i < n; i++) {
        const Rows& r = list[i];
        if (r.n <= 0) continue;
        const std::vector<double>& w = written[r.space];
        if (r.row >= (long long)w.size()) {
          PyErr_SetString(PyExc_ValueError, "max() arg is an empty sequence");
          return false;
        }
        long long hi = std::min<long long>(r.row + r.n, (long long)w.size());
        double m = *std::max_element(w.begin() + r.row, w.begin() + hi);
        if (m > dep) dep = m;
        if (pass) {
          const std::vector<double>& rd = read_done[r.space];
          double m2 = *std::max_element(rd.begin() + r.row, rd.begin() + hi);
          if (m2 > dep) dep = m2;
        }
      }
    }
    double start = dep, end = start + occupancy, done = end + latency;
    unit_free[unit] = end;
    pending[unit].push_back(start);
    for (int i = 0; i < nreads; i++) {
      const Rows& r = reads[i];
      if (r.n <= 0) continue;
      std::vector<double>& rd = read_done[r.space];
      long long hi = std::min<long long>(r.row + r.n, (long long)rd.size());
      for (long long k = r.row; k < hi; k++)
        if (!(rd[k] > end)) rd[k] = end;
    }
    for (int i = 0; i < nwrites; i++) {
      const Rows& r = writes[i];
      if (r.n <= 0) continue;
      std::vector<double>& w = written[r.space];
      long long hi = std::min<long long>(r.row + r.n, (long long)w.size());
      for (long long k = r.row; k < hi; k++) w[k] = done;
    }
    if (done > last_end) last_end = done;
    busy[unit] += occupancy;
    dep_wait[unit] += start - ready;
    commands[unit] += 1;
    *done_out = done;
    return true;
  }

  bool run_compute(double issued, double occupancy, double latency, const Rows* reads, int nreads, const Rows* writes,
                   int nwrites, double* done_out) {
    if (!run(EX, issued, occupancy, latency, reads, nreads, writes, nwrites, done_out)) return false;
    tail = true;
    tail_start = unit_free[EX] - occupancy;
    tail_occ = occupancy;
    tail_banks.clear();
    for (int i = 0; i < nreads; i++)
      if (reads[i].n > 0) tail_banks.push_back(bank_of(reads[i]));
    return true;
  }

  // timing.TimingModel.run_preload
  bool run_preload(double issued, double occupancy, double overlapped, const Rows* reads, int nreads,
                   double* done_out) {
    bool paired = tail;
    tail = false;
    if (paired) {
      double ready = issued;
      for (int i = 0; i < nreads; i++) {
        const Rows& r = reads[i];
        if (r.n <= 0) continue;
        const std::vector<double>& w = written[r.space];
        if (r.row >= (long long)w.size()) {
          PyErr_SetString(PyExc_ValueError, "max() arg is an empty sequence");
          return false;
        }
        long long hi = std::min<long long>(r.row + r.n, (long long)w.size());
        double m = *std::max_element(w.begin() + r.row, w.begin() + hi);
        if (m > ready) ready = m;
      }
      if (ready <= tail_start) {
        // operands in one bank take turns: the pair lasts the sum of the two
        bool shared = false;
        for (int i = 0; i < nreads; i++)
          if (reads[i].n > 0)
            for (long long b : tail_banks) shared = shared || b == bank_of(reads[i]);
        double pair = shared ? tail_occ + overlapped : std::max(tail_occ, overlapped);
        double end = std::max(unit_free[EX], tail_start + pair);
        double extra = end - unit_free[EX];
        unit_free[EX] = end;
        pending[EX].push_back(tail_start);
        for (int i = 0; i < nreads; i++) {
          const Rows& r = reads[i];
          if (r.n <= 0) continue;
          std::vector<double>& rd = read_done[r.space];
          long long hi = std::min<long long>(r.row + r.n, (long long)rd.size());
          for (long long k = r.row; k < hi; k++)
            if (!(rd[k] > end)) rd[k] = end;
        }
        if (end > last_end) last_end = end;
        busy[EX] += extra;
        commands[EX] += 1;
        *done_out = end;
        return true;
      }
    }
    return run(EX, issued, occupancy, 0, reads, nreads, nullptr, 0, done_out);
  }

  void dma_cost(long long rows, long long row_bytes, double* occ, double* lat) const {
    double beats = std::ceil((double)(rows * row_bytes) / bus_bytes_per_cycle);
    *occ = dma_overhead + std::max<double>((double)rows, beats);
    *lat = dma_latency;
  }
  void compute_cost(long long rows, long long dim, double* occ, double* lat) const {
    *occ = compute_overhead + std::max((double)rows, min_rows);
    *lat = fill_drain_dims * (double)dim;
  }
  double preload_cost(long long rows, bool reuse) const {
    return reuse ? preload_reuse : std::max(1.0, (double)rows * preload_per_row);
  }
  double preload_overlapped(long long rows, bool reuse) const { return reuse ? 0.0 : (double)rows * preload_per_row; }
  void zero_fill_cost(long long rows, long long blocks, double* occ, double* lat) const {
    *occ = dma_overhead + (double)(rows * blocks);
    *lat = 0;
  }
  void reset_stats() {
    for (int u = 0; u < 3; u++) busy[u] = dep_wait[u] = 0, commands[u] = 0;
    stall_queue_full = stall_fence = 0;
    fences = 0;
  }
};

struct TimingObject {
  PyObject_HEAD
  TimingState* s;
  PyObject* params;
  PyObject* dict;
};

int unit_index(PyObject* unit) {
  const char* name = PyUnicode_AsUTF8(unit);
  if (!name) return -1;
  for (int u = 0; u < 3; u++)
    if (!std::strcmp(name, UNIT_NAMES[u])) return u;
  PyErr_Format(PyExc_KeyError, "%R", unit);
  return -1;
}

int space_index(PyObject* space) {
  const char* name = PyUnicode_AsUTF8(space);
  if (!name) return -1;
  if (!std::strcmp(name, "spad")) return SPAD;
  if (!std::strcmp(name, "acc")) return ACC;
  PyErr_Format(PyExc_KeyError, "%R", space);
  return -1;
}

bool parse_rows(PyObject* seq, std::vector<Rows>* out) {
  PyObject* fast = PySequence_Fast(seq, "reads / writes must be a sequence of (space, row, n)");
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
    PyObject *space, *row, *count;
    if (!PyArg_ParseTuple(item, "OOO", &space, &row, &count)) {
      Py_DECREF(fast);
      return false;
    }
    Rows r{space_index(space), PyLong_AsLongLong(row), PyLong_AsLongLong(count)};
    if (r.space < 0 || PyErr_Occurred()) {
      Py_DECREF(fast);
      return false;
    }
    out->push_back(r);
  }
  Py_DECREF(fast);
  return true;
}

int Timing_init(TimingObject* self, PyObject* args, PyObject* kwds) {
  PyObject* params;
  long long spad_rows, acc_rows, spad_banks = 4;
  static const char* kwlist[] = {"params", "spad_rows", "acc_rows", "spad_banks", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OLL|L", (char**)kwlist, &params, &spad_rows, &acc_rows,
                                   &spad_banks))
    return -1;
  delete self->s;
  self->s = new TimingState();
  TimingState& s = *self->s;
  struct {
    const char* name;
    double* field;
  } fields[] = {{"cpi", &s.cpi},
                {"rocc_issue", &s.rocc_issue},
                {"dma_latency", &s.dma_latency},
                {"bus_bytes_per_cycle", &s.bus_bytes_per_cycle},
                {"dma_overhead", &s.dma_overhead},
                {"acc_read_latency", &s.acc_read_latency},
                {"preload_per_row", &s.preload_per_row},
                {"preload_reuse", &s.preload_reuse},
                {"fill_drain_dims", &s.fill_drain_dims},
                {"compute_overhead", &s.compute_overhead},
                {"min_rows", &s.min_rows},
                {"config", &s.config},
                {"flush_dims", &s.flush_dims},
                {"loop_issue", &s.loop_issue}};
  for (auto& f : fields)
    if (!get_double(params, f.name, f.field)) return -1;
  const char* depths[3] = {"load_depth", "ex_depth", "store_depth"};
  for (int u = 0; u < 3; u++) {
    PyObject* v = PyObject_GetAttrString(params, depths[u]);
    if (!v) return -1;
    s.depth[u] = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (PyErr_Occurred()) return -1;
  }
  s.bank_rows = std::max(1LL, spad_rows / std::max(1LL, spad_banks));
  s.written[SPAD].assign(spad_rows, 0.0);
  s.read_done[SPAD].assign(spad_rows, 0.0);
  s.written[ACC].assign(acc_rows, 0.0);
  s.read_done[ACC].assign(acc_rows, 0.0);
  Py_INCREF(params);
  Py_XSETREF(self->params, params);
  return 0;
}

PyObject* Timing_new(PyTypeObject* type, PyObject*, PyObject*) {
  TimingObject* self = (TimingObject*)type->tp_alloc(type, 0);
  return (PyObject*)self;
}

int Timing_traverse(TimingObject* self, visitproc visit, void* arg) {
  Py_VISIT(self->params);
  Py_VISIT(self->dict);
  return 0;
}

int Timing_clear(TimingObject* self) {
  Py_CLEAR(self->params);
  Py_CLEAR(self->dict);
  return 0;
}

void Timing_dealloc(TimingObject* self) {
  PyObject_GC_UnTrack(self);
  Timing_clear(self);
  delete self->s;
  Py_TYPE(self)->tp_free((PyObject*)self);
}

bool timing_ready(TimingObject* self) {
  if (self->s) return true;
  PyErr_SetString(PyExc_RuntimeError, "Timing used before __init__");
  return false;
}

PyObject* Timing_issue(TimingObject* self, PyObject* unit) {
  if (!timing_ready(self)) return nullptr;
  int u = unit_index(unit);
  double t;
  if (u < 0 || !self->s->issue(u, &t)) return nullptr;
  return PyFloat_FromDouble(t);
}

PyObject* Timing_run(TimingObject* self, PyObject* args, PyObject* kwds) {
  if (!timing_ready(self)) return nullptr;
  PyObject *unit, *reads = nullptr, *writes = nullptr;
  double issued, occupancy, latency;
  static const char* kwlist[] = {"unit", "issued", "occupancy", "latency", "reads", "writes", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oddd|OO", (char**)kwlist, &unit, &issued, &occupancy, &latency, &reads,
                                   &writes))
    return nullptr;
  int u = unit_index(unit);
  if (u < 0) return nullptr;
  std::vector<Rows> r, w;
  if ((reads && !parse_rows(reads, &r)) || (writes && !parse_rows(writes, &w))) return nullptr;
  double done;
  if (!self->s->run(u, issued, occupancy, latency, r.data(), (int)r.size(), w.data(), (int)w.size(), &done))
    return nullptr;
  return PyFloat_FromDouble(done);
}

PyObject* Timing_run_compute(TimingObject* self, PyObject* args, PyObject* kwds) {
  if (!timing_ready(self)) return nullptr;
  PyObject *reads = nullptr, *writes = nullptr;
  double issued, occupancy, latency;
  static const char* kwlist[] = {"issued", "occupancy", "latency", "reads", "writes", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "ddd|OO", (char**)kwlist, &issued, &occupancy, &latency, &reads,
                                   &writes))
    return nullptr;
  std::vector<Rows> r, w;
  if ((reads && !parse_rows(reads, &r)) || (writes && !parse_rows(writes, &w))) return nullptr;
  double done;
  if (!self->s->run_compute(issued, occupancy, latency, r.data(), (int)r.size(), w.data(), (int)w.size(), &done))
    return nullptr;
  return PyFloat_FromDouble(done);
}

PyObject* Timing_run_preload(TimingObject* self, PyObject* args, PyObject* kwds) {
  if (!timing_ready(self)) return nullptr;
  PyObject* reads = nullptr;
  double issued, occupancy, overlapped;
  static const char* kwlist[] = {"issued", "occupancy", "overlapped", "reads", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "ddd|O", (char**)kwlist, &issued, &occupancy, &overlapped, &reads))
    return nullptr;
  std::vector<Rows> r;
  if (reads && !parse_rows(reads, &r)) return nullptr;
  double done;
  if (!self->s->run_preload(issued, occupancy, overlapped, r.data(), (int)r.size(), &done)) return nullptr;
  return PyFloat_FromDouble(done);
}

PyObject* Timing_fence(TimingObject* self, PyObject*) {
  if (!timing_ready(self)) return nullptr;
  self->s->fence();
  Py_RETURN_NONE;
}

PyObject* Timing_cpu_now(TimingObject* self, PyObject*) {
  if (!timing_ready(self)) return nullptr;
  return PyFloat_FromDouble(self->s->cpu_now());
}

PyObject* Timing_set_instret(TimingObject* self, PyObject* value) {
  if (!timing_ready(self)) return nullptr;
  long long v = PyLong_AsLongLong(value);
  if (v == -1 && PyErr_Occurred()) return nullptr;
  if (v > self->s->instret) self->s->instret = v;
  Py_RETURN_NONE;
}

PyObject* Timing_dma_cost(TimingObject* self, PyObject* args) {
  long long rows, row_bytes;
  if (!timing_ready(self) || !PyArg_ParseTuple(args, "LL", &rows, &row_bytes)) return nullptr;
  double occ, lat;
  self->s->dma_cost(rows, row_bytes, &occ, &lat);
  return Py_BuildValue("(dd)", occ, lat);
}

PyObject* Timing_compute_cost(TimingObject* self, PyObject* args) {
  long long rows, dim;
  if (!timing_ready(self) || !PyArg_ParseTuple(args, "LL", &rows, &dim)) return nullptr;
  double occ, lat;
  self->s->compute_cost(rows, dim, &occ, &lat);
  return Py_BuildValue("(dd)", occ, lat);
}

PyObject* Timing_preload_cost(TimingObject* self, PyObject* args, PyObject* kwds) {
  long long rows;
  int reuse;
  static const char* kwlist[] = {"rows", "reuse", nullptr};
  if (!timing_ready(self) || !PyArg_ParseTupleAndKeywords(args, kwds, "Lp", (char**)kwlist, &rows, &reuse))
    return nullptr;
  return PyFloat_FromDouble(self->s->preload_cost(rows, reuse));
}

PyObject* Timing_preload_overlapped(TimingObject* self, PyObject* args, PyObject* kwds) {
  long long rows;
  int reuse;
  static const char* kwlist[] = {"rows", "reuse", nullptr};
  if (!timing_ready(self) || !PyArg_ParseTupleAndKeywords(args, kwds, "Lp", (char**)kwlist, &rows, &reuse))
    return nullptr;
  return PyFloat_FromDouble(self->s->preload_overlapped(rows, reuse));
}

PyObject* Timing_zero_fill_cost(TimingObject* self, PyObject* args) {
  long long rows, blocks;
  if (!timing_ready(self) || !PyArg_ParseTuple(args, "LL", &rows, &blocks)) return nullptr;
  double occ, lat;
  self->s->zero_fill_cost(rows, blocks, &occ, &lat);
  return Py_BuildValue("(dd)", occ, lat);
}

PyObject* Timing_reset_stats(TimingObject* self, PyObject*) {
  if (!timing_ready(self)) return nullptr;
  self->s->reset_stats();
  Py_RETURN_NONE;
}

// (busy, dep_wait, commands) per unit, then stall_queue_full, stall_fence, fences
PyObject* Timing_stats_tuple(TimingObject* self, PyObject*) {
  if (!timing_ready(self)) return nullptr;
  TimingState& s = *self->s;
  return Py_BuildValue("((ddd)(ddd)(LLL)ddL)", s.busy[0], s.busy[1], s.busy[2], s.dep_wait[0], s.dep_wait[1],
                       s.dep_wait[2], s.commands[0], s.commands[1], s.commands[2], s.stall_queue_full, s.stall_fence,
                       s.fences);
}

PyObject* list_of(const std::vector<double>& v) {
  PyObject* out = PyList_New((Py_ssize_t)v.size());
  for (size_t i = 0; out && i < v.size(); i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(v[i]));
  return out;
}

// Everything, for the tests that hold this model against the Python one.
PyObject* Timing_state(TimingObject* self, PyObject*) {
  if (!timing_ready(self)) return nullptr;
  TimingState& s = *self->s;
  PyObject* pending = PyDict_New();
  for (int u = 0; u < 3; u++) {
    std::vector<double> q(s.pending[u].begin(), s.pending[u].end());
    PyObject* l = list_of(q);
    PyDict_SetItemString(pending, UNIT_NAMES[u], l);
    Py_DECREF(l);
  }
  PyObject *ws = list_of(s.written[SPAD]), *wa = list_of(s.written[ACC]);
  PyObject *rs = list_of(s.read_done[SPAD]), *ra = list_of(s.read_done[ACC]);
  PyObject* out = Py_BuildValue("{s:{s:d,s:d,s:d},s:N,s:{s:N,s:N},s:{s:N,s:N},s:d,s:d,s:L}", "unit_free", "load",
                                s.unit_free[0], "ex", s.unit_free[1], "store", s.unit_free[2], "pending", pending,
                                "written", "spad", ws, "acc", wa, "read_done", "spad", rs, "acc", ra, "last_end",
                                s.last_end, "stall", s.stall, "instret", s.instret);
  return out;
}

PyObject* Timing_get_instret(TimingObject* self, void*) {
  if (!timing_ready(self)) return nullptr;
  return PyLong_FromLongLong(self->s->instret);
}

int Timing_set_instret_attr(TimingObject* self, PyObject* value, void*) {
  if (!timing_ready(self)) return -1;
  if (!value) {
    PyErr_SetString(PyExc_AttributeError, "cannot delete instret");
    return -1;
  }
  long long v = PyLong_AsLongLong(value);
  if (v == -1 && PyErr_Occurred()) return -1;
  self->s->instret = v;
  return 0;
}

PyObject* Timing_get_stall(TimingObject* self, void*) {
  return timing_ready(self) ? PyFloat_FromDouble(self->s->stall) : nullptr;
}

PyObject* Timing_get_last_end(TimingObject* self, void*) {
  return timing_ready(self) ? PyFloat_FromDouble(self->s->last_end) : nullptr;
}

PyMethodDef Timing_methods[] = {
    {"issue", (PyCFunction)Timing_issue, METH_O, "The CPU issues one command to `unit`: returns the issue time."},
    {"run", (PyCFunction)(void (*)(void))Timing_run, METH_VARARGS | METH_KEYWORDS,
     "Schedule one command; returns when its results land."},
    {"run_compute", (PyCFunction)(void (*)(void))Timing_run_compute, METH_VARARGS | METH_KEYWORDS,
     "Schedule a compute on the execute unit (the next preload may pair with it)."},
    {"run_preload", (PyCFunction)(void (*)(void))Timing_run_preload, METH_VARARGS | METH_KEYWORDS,
     "Schedule a preload, alongside the compute before it when it was queued behind it."},
    {"fence", (PyCFunction)Timing_fence, METH_NOARGS, "The CPU waits until every unit has drained."},
    {"cpu_now", (PyCFunction)Timing_cpu_now, METH_NOARGS, "CPU time: minstret * cpi + stalls."},
    {"set_instret", (PyCFunction)Timing_set_instret, METH_O, "Advance the CPU's retired-instruction count."},
    {"dma_cost", (PyCFunction)Timing_dma_cost, METH_VARARGS, "(occupancy, latency) of a DMA of rows x row_bytes."},
    {"compute_cost", (PyCFunction)Timing_compute_cost, METH_VARARGS, "(occupancy, latency) of a compute."},
    {"preload_cost", (PyCFunction)(void (*)(void))Timing_preload_cost, METH_VARARGS | METH_KEYWORDS,
     "Occupancy of a preload."},
    {"preload_overlapped", (PyCFunction)(void (*)(void))Timing_preload_overlapped, METH_VARARGS | METH_KEYWORDS,
     "Cycles of a preload streamed alongside a compute."},
    {"zero_fill_cost", (PyCFunction)Timing_zero_fill_cost, METH_VARARGS,
     "(occupancy, latency) of an mvin from DRAM address 0."},
    {"reset_stats", (PyCFunction)Timing_reset_stats, METH_NOARGS, "Start the statistics afresh."},
    {"_stats", (PyCFunction)Timing_stats_tuple, METH_NOARGS, "The statistics as a tuple."},
    {"_state", (PyCFunction)Timing_state, METH_NOARGS, "The whole state, for tests."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef Timing_getset[] = {
    {"instret", (getter)Timing_get_instret, (setter)Timing_set_instret_attr, "retired CPU instructions", nullptr},
    {"stall", (getter)Timing_get_stall, nullptr, "CPU stall cycles so far", nullptr},
    {"last_end", (getter)Timing_get_last_end, nullptr, "when the latest-finishing command completes", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef Timing_members[] = {{"p", T_OBJECT_EX, offsetof(TimingObject, params), READONLY, "the TimingParams"},
                                {nullptr, 0, 0, 0, nullptr}};

PyTypeObject TimingType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ------------------------------------------------------------------------- GuestMemory
// memory.SpikeMemory, through Spike's MMU in C++ instead of one Python call per 8-byte word.
// Addresses are checked against main memory first: the load-reserved accessors the Python
// class uses fail exactly outside it (devices are not reservable), so the same accesses
// fail here, with the same messages.
using load_slow_path_t = void (*)(void*, uint64_t, uint64_t, uint8_t*, uint8_t);
using store_slow_path_t = void (*)(void*, uint64_t, uint64_t, const uint8_t*, uint8_t, bool, bool);

struct GuestMemoryObject {
  PyObject_HEAD
  void* mmu;
  load_slow_path_t load;
  store_slow_path_t store;
  uint64_t base, size;
  long long words;
  PyObject* bad_address;
  PyObject* dict;
};

PyTypeObject GuestMemoryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Are the 8-byte words [lo, hi) (lo, hi multiples of 8, as 128-bit numbers) in main memory?
bool in_memory(const GuestMemoryObject* m, unsigned __int128 lo, unsigned __int128 hi) {
  return lo == hi || (lo >= m->base && hi <= (unsigned __int128)m->base + m->size && lo < hi);
}

void bad_address(const GuestMemoryObject* m, const std::string& message) {
  PyErr_SetString(m->bad_address, message.c_str());
}

bool load_words(GuestMemoryObject* m, uint64_t lo, uint64_t nwords, uint8_t* out) {
  try {
    for (uint64_t i = 0; i < nwords; i++) m->load(m->mmu, lo + 8 * i, 8, out + 8 * i, 0);
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "Spike's MMU refused a DMA read");
    return false;
  }
  m->words += nwords;
  return true;
}

// SpikeMemory._read: nbytes at addr (any alignment)
bool guest_read(GuestMemoryObject* m, uint64_t addr, uint64_t nbytes, uint8_t* out) {
  uint64_t lo = addr & ~7ull;
  unsigned __int128 hi = (((unsigned __int128)addr + nbytes + 7) >> 3) << 3;
  if (!in_memory(m, lo, hi)) {
    bad_address(m, format("DMA read of %llu bytes at %s is outside the program's data", (unsigned long long)nbytes,
                          hex(addr).c_str()));
    return false;
  }
  uint64_t nwords = (uint64_t)((hi - lo) / 8);
  std::vector<uint8_t> buf(nwords * 8);
  if (!load_words(m, lo, nwords, buf.data())) return false;
  if (nbytes) std::memcpy(out, buf.data() + (addr - lo), nbytes);
  return true;
}

// SpikeMemory._read_rows: rows of row_bytes, stride apart (stride a multiple of 8; 0 = one row repeated)
bool guest_read_rows(GuestMemoryObject* m, uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t stride,
                     uint8_t* out) {
  uint64_t off = addr & 7, first = addr - off, nwords = (off + row_bytes + 7) / 8;
  uint64_t reads = stride ? rows : 1;
  unsigned __int128 last = (unsigned __int128)first + (unsigned __int128)(reads - 1) * stride + nwords * 8;
  if (!in_memory(m, first, last)) {
    bad_address(m, format("DMA read of %llu rows at %s (stride %llu) is outside the program's data", (unsigned long long)rows,
                          hex(addr).c_str(), (unsigned long long)stride));
    return false;
  }
  std::vector<uint8_t> buf(nwords * 8);
  for (uint64_t r = 0; r < reads; r++) {
    if (!load_words(m, first + r * stride, nwords, buf.data())) return false;
    std::memcpy(out + r * row_bytes, buf.data() + off, row_bytes);
  }
  for (uint64_t r = reads; r < rows; r++) std::memcpy(out + r * row_bytes, out, row_bytes);
  return true;
}

// SpikeMemory._write: partial first / last words are merged with what is there
bool guest_write(GuestMemoryObject* m, uint64_t addr, const uint8_t* data, uint64_t n) {
  if (!n) return true;
  uint64_t lo = addr & ~7ull;
  unsigned __int128 hi = (((unsigned __int128)addr + n + 7) >> 3) << 3;
  if (!in_memory(m, lo, hi)) {
    bad_address(m, format("DMA write of %llu bytes at %s is outside the program's data", (unsigned long long)n,
                          hex(addr).c_str()));
    return false;
  }
  uint64_t nwords = (uint64_t)((hi - lo) / 8);
  std::vector<uint8_t> buf(nwords * 8);
  uint64_t head = addr - lo;
  if (head || (uint64_t)(hi - lo) != n) {
    if (!load_words(m, lo, nwords, buf.data())) return false;
  }
  std::memcpy(buf.data() + head, data, n);
  try {
    for (uint64_t i = 0; i < nwords; i++) m->store(m->mmu, lo + 8 * i, 8, buf.data() + 8 * i, 0, true, false);
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "Spike's MMU refused a DMA write");
    return false;
  }
  m->words += 2 * nwords;
  return true;
}

int GuestMemory_init(GuestMemoryObject* self, PyObject* args, PyObject* kwds) {
  PyObject *mmu, *bad;
  unsigned long long base, size;
  static const char* kwlist[] = {"mmu", "base", "size", "bad_address", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OKKO", (char**)kwlist, &mmu, &base, &size, &bad)) return -1;
  self->mmu = PyCapsule_GetPointer(mmu, typeid(mmu_t).name());
  if (!self->mmu) return -1;
  self->load = (load_slow_path_t)dlsym(RTLD_DEFAULT, "_ZN5mmu_t14load_slow_pathEmmPh13xlate_flags_t");
  self->store = (store_slow_path_t)dlsym(RTLD_DEFAULT, "_ZN5mmu_t15store_slow_pathEmmPKh13xlate_flags_tbb");
  if (!self->load || !self->store) {
    PyErr_SetString(PyExc_RuntimeError, "Spike's MMU accessors are not in this process (not running inside Spike?)");
    return -1;
  }
  self->base = base;
  self->size = size;
  Py_INCREF(bad);
  Py_XSETREF(self->bad_address, bad);
  return 0;
}

int GuestMemory_traverse(GuestMemoryObject* self, visitproc visit, void* arg) {
  Py_VISIT(self->bad_address);
  Py_VISIT(self->dict);
  return 0;
}

int GuestMemory_clear(GuestMemoryObject* self) {
  Py_CLEAR(self->bad_address);
  Py_CLEAR(self->dict);
  return 0;
}

void GuestMemory_dealloc(GuestMemoryObject* self) {
  PyObject_GC_UnTrack(self);
  GuestMemory_clear(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

bool memory_ready(GuestMemoryObject* self) {
  if (self->mmu) return true;
  PyErr_SetString(PyExc_RuntimeError, "GuestMemory used before __init__");
  return false;
}

// Python ints that do not fit 64 bits fail as PySpike's accessors do (an internal error).
bool parse_u64(PyObject* v, uint64_t* out) {
  *out = PyLong_AsUnsignedLongLong(v);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "incompatible function arguments: address out of 64-bit range");
    return false;
  }
  return true;
}

PyObject* GuestMemory_read(GuestMemoryObject* self, PyObject* args) {
  PyObject* a;
  unsigned long long n;
  uint64_t addr;
  if (!memory_ready(self) || !PyArg_ParseTuple(args, "OK", &a, &n) || !parse_u64(a, &addr)) return nullptr;
  PyObject* out = PyBytes_FromStringAndSize(nullptr, (Py_ssize_t)n);
  if (!out) return nullptr;
  if (!guest_read(self, addr, n, (uint8_t*)PyBytes_AS_STRING(out))) {
    Py_DECREF(out);
    return nullptr;
  }
  return out;
}

PyObject* GuestMemory_read_rows(GuestMemoryObject* self, PyObject* args) {
  PyObject* a;
  unsigned long long rows, row_bytes, stride;
  uint64_t addr;
  if (!memory_ready(self) || !PyArg_ParseTuple(args, "OKKK", &a, &rows, &row_bytes, &stride) || !parse_u64(a, &addr))
    return nullptr;
  PyObject* out = PyBytes_FromStringAndSize(nullptr, (Py_ssize_t)(rows * row_bytes));
  if (!out) return nullptr;
  if (!guest_read_rows(self, addr, rows, row_bytes, stride, (uint8_t*)PyBytes_AS_STRING(out))) {
    Py_DECREF(out);
    return nullptr;
  }
  return out;
}

PyObject* GuestMemory_write(GuestMemoryObject* self, PyObject* args) {
  PyObject* a;
  Py_buffer data;
  uint64_t addr;
  if (!memory_ready(self) || !PyArg_ParseTuple(args, "Oy*", &a, &data)) return nullptr;
  bool ok = parse_u64(a, &addr) && guest_write(self, addr, (const uint8_t*)data.buf, (uint64_t)data.len);
  PyBuffer_Release(&data);
  if (!ok) return nullptr;
  Py_RETURN_NONE;
}

PyMethodDef GuestMemory_methods[] = {
    {"read", (PyCFunction)GuestMemory_read, METH_VARARGS, "nbytes of guest memory at addr, as bytes."},
    {"_read_rows", (PyCFunction)GuestMemory_read_rows, METH_VARARGS,
     "rows of row_bytes, stride apart (a multiple of 8), as bytes."},
    {"write", (PyCFunction)GuestMemory_write, METH_VARARGS, "Write bytes at addr."},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef GuestMemory_members[] = {
    {"words", T_LONGLONG, offsetof(GuestMemoryObject, words), 0, "64-bit accesses made, for statistics"},
    {"base", T_ULONGLONG, offsetof(GuestMemoryObject, base), READONLY, "first address of main memory"},
    {"size", T_ULONGLONG, offsetof(GuestMemoryObject, size), READONLY, "bytes of main memory"},
    {nullptr, 0, 0, 0, nullptr}};

// ------------------------------------------------------------------------- Core
// functional.Gemmini for int8 configurations: its primitive commands, in C++.
struct LoadConfig {
  uint64_t stride = 0;
  float scale = 1.0f;
  bool shrunk = false;
  long long block_stride = 0;
};

struct StoreConfig {
  uint64_t stride = 0;
  long long act = 0;
  float scale = 1.0f;
  long long pool_stride = 0;
};

struct Preload {
  LocalAddr bd;
  long long bd_cols, bd_rows;
  LocalAddr c;
  long long c_cols, c_rows;
};

struct CoreObject {
  PyObject_HEAD
  // Python objects shared with the Python side of the model
  PyObject *spad_obj, *acc_obj, *spad_used_obj, *acc_used_obj, *timing_obj, *mem, *read_rows, *counters,
      *pending_writes, *gemmini_error, *dict;
  Py_buffer spad_buf, acc_buf, spad_used_buf, acc_used_buf;
  int8_t* spad;
  int32_t* acc;
  uint8_t *spad_used, *acc_used;
  TimingState* tm;
  GuestMemoryObject* native;  // mem, when it is a GuestMemory
  long long dim, spad_rows, acc_rows, max_cols[2];
  bool delay_stores, bound;
  // execute configuration
  long long dataflow, sys_act, a_stride, c_stride;
  uint64_t sys_shift;
  bool a_transpose, b_transpose;
  LoadConfig ld[3];
  StoreConfig st;
  bool has_preload;
  Preload pre;
  int64_t weights[MAX_DIM * MAX_DIM], os_state[MAX_DIM * MAX_DIM];
  bool weights_small;  // the weights came from the scratchpad (or are zero): int8 values
};

PyTypeObject CoreType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject *S_commands, *S_macs, *S_bytes_in, *S_bytes_out, *S_tobytes, *S_write, *S_execute_other;
PyObject* COMMAND_NAMES[8];  // interned counter names, see name_of
enum Name { N_CONFIG, N_MVIN, N_MVIN2, N_MVIN3, N_MVOUT, N_PRELOAD, N_COMPUTE_PRELOADED, N_COMPUTE_ACCUMULATED };
PyObject *S_flush, *ONE;

bool error(CoreObject* self, const std::string& message) {
  PyErr_SetString(self->gemmini_error, message.c_str());
  return false;
}

// Counters.count(name)
bool count(CoreObject* self, PyObject* name) {
  PyObject* commands = PyObject_GetAttr(self->counters, S_commands);
  if (!commands) return false;
  PyObject* old = PyDict_GetItemWithError(commands, name);  // borrowed
  PyObject* now = nullptr;
  if (old)
    now = PyNumber_Add(old, ONE);
  else if (!PyErr_Occurred())
    now = Py_NewRef(ONE);
  bool ok = now && PyDict_SetItem(commands, name, now) == 0;
  Py_XDECREF(now);
  Py_DECREF(commands);
  return ok;
}

// counters.<attr> += n
bool add_counter(CoreObject* self, PyObject* attr, long long n) {
  PyObject* old = PyObject_GetAttr(self->counters, attr);
  if (!old) return false;
  PyObject* delta = PyLong_FromLongLong(n);
  PyObject* now = delta ? PyNumber_Add(old, delta) : nullptr;
  bool ok = now && PyObject_SetAttr(self->counters, attr, now) == 0;
  Py_DECREF(old);
  Py_XDECREF(delta);
  Py_XDECREF(now);
  return ok;
}

// Gemmini._spad_range
bool spad_range(CoreObject* self, const LocalAddr& addr, long long rows, const std::string& what,
                long long stride = 1) {
  long long limit = addr.is_acc ? self->acc_rows : self->spad_rows;
  long long last = rows ? (long long)addr.row + (rows - 1) * stride : (long long)addr.row;
  if (rows && last >= limit)
    return error(self, format("%s touches %s row %lld, past the end (%lld rows)", what.c_str(),
                              addr.is_acc ? "accumulator" : "scratchpad", last, limit));
  return true;
}

// memory.read_rows(mem, ...): rows x row_bytes bytes into out
bool read_rows(CoreObject* self, uint64_t addr, long long rows, long long row_bytes, uint64_t stride, uint8_t* out) {
  if (rows == 0 || row_bytes == 0) return true;
  GuestMemoryObject* m = self->native;
  if (!m) {
    PyObject* arr = PyObject_CallFunction(self->read_rows, "OKLLK", self->mem, (unsigned long long)addr, rows,
                                          row_bytes, (unsigned long long)stride);
    PyObject* data = arr ? PyObject_CallMethodNoArgs(arr, S_tobytes) : nullptr;
    Py_XDECREF(arr);
    if (!data) return false;
    std::memcpy(out, PyBytes_AS_STRING(data), (size_t)(rows * row_bytes));
    Py_DECREF(data);
    return true;
  }
  if (stride % 8 == 0 && stride != (uint64_t)row_bytes) return guest_read_rows(m, addr, rows, row_bytes, stride, out);
  if (stride == (uint64_t)row_bytes) return guest_read(m, addr, rows * row_bytes, out);
  unsigned __int128 span = (unsigned __int128)(rows - 1) * stride + row_bytes;
  if (span <= (unsigned __int128)(4 * rows * row_bytes)) {  // dense enough: one read, then slice
    std::vector<uint8_t> flat((size_t)span);
    if (!guest_read(m, addr, (uint64_t)span, flat.data())) return false;
    for (long long r = 0; r < rows; r++) std::memcpy(out + r * row_bytes, flat.data() + r * stride, row_bytes);
    return true;
  }
  for (long long r = 0; r < rows; r++) {
    unsigned __int128 a = (unsigned __int128)addr + (unsigned __int128)r * stride;
    if (a >> 64) {
      PyErr_SetString(PyExc_TypeError, "incompatible function arguments: address out of 64-bit range");
      return false;
    }
    if (!guest_read(m, (uint64_t)a, row_bytes, out + r * row_bytes)) return false;
  }
  return true;
}

bool memory_write(CoreObject* self, PyObject* addr, PyObject* data) {
  if (self->native) {
    uint64_t a;
    if (!parse_u64(addr, &a)) return false;
    return guest_write(self->native, a, (const uint8_t*)PyBytes_AS_STRING(data), (uint64_t)PyBytes_GET_SIZE(data));
  }
  PyObject* r = PyObject_CallMethodObjArgs(self->mem, S_write, addr, data, nullptr);
  Py_XDECREF(r);
  return r != nullptr;
}

// Gemmini.land_writes: results of stores that completed by `now` reach memory
bool land_writes(CoreObject* self, double now) {
  PyObject* pending = self->pending_writes;
  Py_ssize_t n = PyList_GET_SIZE(pending);
  if (!n) return true;
  PyObject* keep = PyList_New(0);
  if (!keep) return false;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pending); i++) {
    PyObject* item = PyList_GET_ITEM(pending, i);
    PyObject *lands, *addr, *data;
    if (!PyArg_ParseTuple(item, "OOS", &lands, &addr, &data)) {
      Py_DECREF(keep);
      return false;
    }
    double t = PyFloat_AsDouble(lands);
    if (t == -1.0 && PyErr_Occurred()) {
      Py_DECREF(keep);
      return false;
    }
    if (t <= now) {
      if (!memory_write(self, addr, data)) {
        Py_DECREF(keep);
        return false;
      }
    } else if (PyList_Append(keep, item) < 0) {
      Py_DECREF(keep);
      return false;
    }
  }
  int r = PyList_SetSlice(pending, 0, PyList_GET_SIZE(pending), keep);
  Py_DECREF(keep);
  return r == 0;
}

bool pend_write(CoreObject* self, double done, PyObject* addr, const uint8_t* data, Py_ssize_t n) {
  if (!addr) return false;
  PyObject* item = Py_BuildValue("(dOy#)", done, addr, (const char*)data, n);
  Py_DECREF(addr);
  if (!item) return false;
  int r = PyList_Append(self->pending_writes, item);
  Py_DECREF(item);
  return r == 0;
}

bool config(CoreObject* self, uint64_t rs1, uint64_t rs2) {
  uint64_t kind = rs1 & 3;
  TimingState& tm = *self->tm;
  if (!count(self, COMMAND_NAMES[N_CONFIG])) return false;
  double t, done;
  if (kind == 0) {  // CONFIG_EX
    if (!tm.issue(EX, &t)) return false;
    if (bits(rs1, 7, 1)) {  // set_only_strides
      self->a_stride = bits(rs1, 16, 16) ? (long long)bits(rs1, 16, 16) : 1;
      self->c_stride = bits(rs2, 48, 16) ? (long long)bits(rs2, 48, 16) : 1;
    } else {
      self->dataflow = (long long)bits(rs1, 2, 1);
      self->sys_act = (long long)bits(rs1, 3, 3);
      self->a_transpose = bits(rs1, 8, 1);
      self->b_transpose = bits(rs1, 9, 1);
      self->a_stride = bits(rs1, 16, 16) ? (long long)bits(rs1, 16, 16) : 1;
      self->sys_shift = bits(rs2, 0, 32);
      self->c_stride = bits(rs2, 48, 16) ? (long long)bits(rs2, 48, 16) : 1;
      if (self->sys_act > 1)
        return error(self, format("config_ex activation %lld is not modelled (only NO_ACTIVATION=0 and RELU=1)",
                                  self->sys_act));
    }
    return tm.run(EX, t, tm.config, 0, nullptr, 0, nullptr, 0, &done);
  }
  if (kind == 1) {  // CONFIG_LD
    if (!tm.issue(LOAD, &t)) return false;
    uint64_t state = bits(rs1, 3, 2);
    if (state > 2)
      return error(self, format("config_ld state id %llu is out of range (0..2)", (unsigned long long)state));
    LoadConfig& ld = self->ld[state];
    ld.stride = rs2 & 0xFFFFFFFFFFFFull;
    ld.scale = f32_from_bits(bits(rs1, 32, 32));
    ld.shrunk = bits(rs1, 2, 1);
    ld.block_stride = (long long)bits(rs1, 16, 16);
    return tm.run(LOAD, t, tm.config, 0, nullptr, 0, nullptr, 0, &done);
  }
  if (kind == 2) {  // CONFIG_ST
    if (!tm.issue(STORE, &t)) return false;
    long long act = (long long)bits(rs1, 2, 2);
    if (act > 1)
      return error(self, format("config_st activation %lld is not modelled (only NO_ACTIVATION and RELU)", act));
    self->st.stride = bits(rs2, 0, 32);
    self->st.act = act;
    self->st.scale = f32_from_bits(bits(rs2, 32, 32));
    self->st.pool_stride = (long long)bits(rs1, 4, 2);
    return tm.run(STORE, t, tm.config, 0, nullptr, 0, nullptr, 0, &done);
  }
  return error(self, "config kind 3 (im2col / norm configuration) is not modelled");
}

bool mvin(CoreObject* self, uint64_t dram, uint64_t rs2, int state, double issued) {
  static const char* const names[3] = {"mvin", "mvin2", "mvin3"};
  const char* name = names[state];
  Operand op = operand(rs2);
  const LocalAddr& addr = op.addr;
  long long cols = op.cols, rows = op.rows, dim = self->dim;
  if (!count(self, COMMAND_NAMES[N_MVIN + state])) return false;
  if (addr.garbage || rows == 0 || cols == 0) return true;
  const LoadConfig& cfg = self->ld[state];
  if (rows > dim) return error(self, format("%s of %lld rows: at most DIM=%lld rows per mvin", name, rows, dim));
  bool to_acc = addr.is_acc;
  long long max_cols = self->max_cols[to_acc];
  if (cols > max_cols)
    return error(self, format("%s of %lld columns to the %s: at most %lld", name, cols,
                              to_acc ? "accumulator" : "scratchpad", max_cols));
  long long blocks = (cols + dim - 1) / dim;
  long long block_stride = cfg.block_stride ? cfg.block_stride : dim;
  for (long long b = 0; b < blocks; b++)
    if (!spad_range(self, b ? LocalAddr(addr.raw + b * block_stride) : addr, rows, name)) return false;
  bool src_acc = to_acc && !cfg.shrunk;
  long long itemsize = src_acc ? 4 : 1;
  long long row_bytes = cols * itemsize;
  std::vector<uint8_t> raw((size_t)(rows * row_bytes));  // zeros
  double occ, lat, done;
  if (dram == 0) {
    // "fill with zeros": no memory request (LoadController.scala: all_zeros = vaddr === 0)
    self->tm->zero_fill_cost(rows, blocks, &occ, &lat);
  } else {
    if (!read_rows(self, dram, rows, row_bytes, cfg.stride, raw.data())) return false;
    if (!add_counter(self, S_bytes_in, rows * row_bytes)) return false;
    self->tm->dma_cost(rows, row_bytes, &occ, &lat);
  }
  // the values, widened (and scaled when the load scale is not 1)
  std::vector<int64_t> data((size_t)(rows * cols));
  for (long long i = 0; i < rows * cols; i++) {
    int64_t v;
    if (src_acc) {
      int32_t x;
      std::memcpy(&x, raw.data() + 4 * i, 4);
      v = x;
    } else {
      v = (int8_t)raw[i];
    }
    data[i] = v;
  }
  bool plain = cfg.scale == 1.0f && !(to_acc && addr.accumulate) && src_acc == to_acc;
  if (!plain && cfg.scale != 1.0f) {
    int64_t lo = to_acc ? INT32_MIN_ : -128, hi = to_acc ? INT32_MAX_ : 127;
    for (auto& v : data) v = scale_int(v, cfg.scale, lo, hi);
  }
  std::vector<Rows> writes;
  for (long long b = 0; b < blocks; b++) {
    long long row0 = (long long)addr.row + b * block_stride;
    long long width = std::min(dim, cols - b * dim);
    for (long long r = 0; r < rows; r++) {
      long long drow = row0 + r;
      for (long long c = 0; c < dim; c++) {
        int64_t v = c < width ? data[r * cols + b * dim + c] : 0;
        if (to_acc) {
          int32_t& dest = self->acc[drow * dim + c];
          if (c >= width || plain)
            dest = (int32_t)v;
          else
            dest = wrap_int32(addr.accumulate ? (int64_t)dest + v : v);
        } else {
          self->spad[drow * dim + c] = (c >= width || plain) ? (int8_t)v : to_elem_int(v);
        }
      }
      (to_acc ? self->acc_used : self->spad_used)[drow] = 1;
    }
    writes.push_back({addr.space(), row0, rows});
  }
  return self->tm->run(LOAD, issued, occ, lat, nullptr, 0, writes.data(), (int)writes.size(), &done);
}

bool mvout(CoreObject* self, uint64_t dram, uint64_t rs2, double issued) {
  Operand op = operand(rs2);
  const LocalAddr& addr = op.addr;
  long long cols = op.cols, rows = op.rows, dim = self->dim;
  if (!count(self, COMMAND_NAMES[N_MVOUT])) return false;
  if (addr.garbage || rows == 0 || cols == 0) return true;
  if (self->st.pool_stride) return error(self, "mvout with pooling (config_st pool_stride != 0) is not modelled");
  if (rows > dim || cols > dim)
    return error(self, format("mvout of %lldx%lld: at most DIM=%lld rows and columns", rows, cols, dim));
  if (!spad_range(self, addr, rows, "mvout")) return false;
  bool wide = addr.is_acc && addr.full;  // acc_t out, else elem_t
  long long row_bytes = cols * (wide ? 4 : 1);
  std::vector<uint8_t> out((size_t)(rows * row_bytes));
  for (long long r = 0; r < rows; r++)
    for (long long c = 0; c < cols; c++) {
      long long row = (long long)addr.row + r;
      if (wide) {
        std::memcpy(out.data() + r * row_bytes + 4 * c, &self->acc[row * dim + c], 4);
      } else if (addr.is_acc) {
        int64_t v = scale_int(self->acc[row * dim + c], self->st.scale, INT32_MIN_, INT32_MAX_);
        out[r * row_bytes + c] = (uint8_t)to_elem_int(activate(v, self->st.act));
      } else {
        out[r * row_bytes + c] = (uint8_t)self->spad[row * dim + c];
      }
    }
  uint64_t stride = self->st.stride ? self->st.stride : (uint64_t)row_bytes;
  if (!add_counter(self, S_bytes_out, rows * row_bytes)) return false;
  double occ, lat, done;
  self->tm->dma_cost(rows, row_bytes, &occ, &lat);
  if (addr.is_acc) lat += self->tm->acc_read_latency;
  Rows reads[1] = {{addr.space(), (long long)addr.row, rows}};
  if (!self->tm->run(STORE, issued, occ, lat, reads, 1, nullptr, 0, &done)) return false;
  if (stride == (uint64_t)row_bytes) return pend_write(self, done, py_address(dram, 0, 0), out.data(), rows * row_bytes);
  for (long long r = 0; r < rows; r++)
    if (!pend_write(self, done, py_address(dram, r, stride), out.data() + r * row_bytes, row_bytes)) return false;
  return true;
}

bool preload(CoreObject* self, uint64_t rs1, uint64_t rs2, double issued) {
  Operand b = operand(rs1), c = operand(rs2);
  long long dim = self->dim;
  if (!count(self, COMMAND_NAMES[N_PRELOAD])) return false;
  if (b.rows > dim || b.cols > dim || c.rows > dim || c.cols > dim)
    return error(self, format("preload of %lldx%lld / output %lldx%lld: at most DIM=%lld", b.rows, b.cols, c.rows,
                              c.cols, dim));
  if (!b.addr.garbage && !spad_range(self, b.addr, b.rows, "preload")) return false;
  if (!c.addr.garbage && !spad_range(self, c.addr, c.rows, "preload output", self->c_stride)) return false;
  self->has_preload = true;
  self->pre = {b.addr, b.cols, b.rows, c.addr, c.cols, c.rows};
  Rows reads[1] = {{b.addr.space(), (long long)b.addr.row, b.rows}};
  double done;
  // the controller feeds all DIM rows of the weight block, zero-padded past b.rows
  bool reuse = b.addr.garbage;
  return self->tm->run_preload(issued, self->tm->preload_cost(dim, reuse), self->tm->preload_overlapped(dim, reuse),
                               reads, reuse ? 0 : 1, &done);
}

// a dim x dim block of local memory, zero outside rows x cols (read_local + pad)
void read_local(CoreObject* self, const LocalAddr& addr, long long rows, long long cols, long long stride,
                int64_t* out) {
  long long dim = self->dim;
  std::fill(out, out + dim * dim, 0);
  for (long long i = 0; i < rows; i++) {
    long long row = (long long)addr.row + i * stride;
    for (long long j = 0; j < cols; j++)
      out[i * dim + j] = addr.is_acc ? (int64_t)self->acc[row * dim + j] : (int64_t)self->spad[row * dim + j];
  }
}

void transpose(int64_t* m, long long dim) {
  for (long long i = 0; i < dim; i++)
    for (long long j = i + 1; j < dim; j++) std::swap(m[i * dim + j], m[j * dim + i]);
}

// out = a @ b. `small`: every element of both is in int8's range, so 32-bit sums are exact
// (at most 32 * 2^14) and the compiler can vectorize them.
void matmul(const int64_t* a, const int64_t* b, int64_t* out, long long dim, bool small) {
  if (small) {
    int32_t a32[MAX_DIM * MAX_DIM], b32[MAX_DIM * MAX_DIM], o32[MAX_DIM * MAX_DIM];
    for (long long i = 0; i < dim * dim; i++) a32[i] = (int32_t)a[i], b32[i] = (int32_t)b[i], o32[i] = 0;
    for (long long i = 0; i < dim; i++)
      for (long long k = 0; k < dim; k++) {
        int32_t aik = a32[i * dim + k];
        for (long long j = 0; j < dim; j++) o32[i * dim + j] += aik * b32[k * dim + j];
      }
    for (long long i = 0; i < dim * dim; i++) out[i] = o32[i];
    return;
  }
  std::fill(out, out + dim * dim, 0);
  for (long long i = 0; i < dim; i++)
    for (long long k = 0; k < dim; k++) {
      int64_t aik = a[i * dim + k];
      for (long long j = 0; j < dim; j++) out[i * dim + j] += aik * b[k * dim + j];
    }
}

// numerics.rounding_shift (numpy raises OverflowError for a mask past 64 bits)
bool rounding_shift(int64_t* v, long long n, uint64_t shift) {
  if (shift == 0) return true;
  if (shift > 64) {
    PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C long");
    return false;
  }
  int64_t mask = shift - 1 >= 63 ? INT64_MAX : (int64_t)((1ull << (shift - 1)) - 1);
  for (long long i = 0; i < n; i++) {
    int64_t x = v[i];
    int64_t half_bit = shift_right(x, shift - 1) & 1;
    bool rest = shift > 1 ? (x & mask) != 0 : false;
    int64_t odd = shift_right(x, shift) & 1;
    v[i] = shift_right(x, shift) + (half_bit & (int64_t)(rest || odd != 0));
  }
  return true;
}

// Gemmini._write_output: rows x cols of `result` (dim x dim) to the accumulator or scratchpad
bool write_output(CoreObject* self, const LocalAddr& c, long long rows, long long cols, const int64_t* result) {
  long long dim = self->dim, stride = self->c_stride;
  long long limit = c.is_acc ? self->acc_rows : self->spad_rows;
  std::vector<int64_t> vals((size_t)(rows * cols));
  for (long long i = 0; i < rows; i++)
    for (long long j = 0; j < cols; j++) vals[i * cols + j] = result[i * dim + j];
  if (!c.is_acc && self->dataflow == 0 && !rounding_shift(vals.data(), rows * cols, self->sys_shift)) return false;
  for (long long i = 0; i < rows; i++) {
    long long row = (long long)c.row + i * stride;
    if (row >= limit) {  // config_ex changed c_stride after the preload checked the rows
      if (stride == 1)
        PyErr_Format(PyExc_ValueError, "could not broadcast the output into rows %lld.. of %lld", (long long)c.row,
                     limit);
      else
        PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis 0 with size %lld", row, limit);
      return false;
    }
  }
  for (long long i = 0; i < rows; i++) {
    long long row = (long long)c.row + i * stride;
    for (long long j = 0; j < cols; j++) {
      int64_t v = vals[i * cols + j];
      if (c.is_acc) {
        int32_t& dest = self->acc[row * dim + j];
        dest = wrap_int32(c.accumulate ? (int64_t)dest + v : v);
      } else {
        self->spad[row * dim + j] = to_elem_int(activate(v, self->sys_act));
      }
    }
    (c.is_acc ? self->acc_used : self->spad_used)[row] = 1;
  }
  return true;
}

bool compute(CoreObject* self, uint64_t rs1, uint64_t rs2, bool preloaded, double issued) {
  Operand a = operand(rs1), bd = operand(rs2);
  const char* name = preloaded ? "compute_preloaded" : "compute_accumulated";
  long long dim = self->dim;
  if (!count(self, COMMAND_NAMES[preloaded ? N_COMPUTE_PRELOADED : N_COMPUTE_ACCUMULATED])) return false;
  if (!self->has_preload)
    return error(self, format("%s without a preceding preload (each compute consumes one preload)", name));
  Preload pre = self->pre;
  self->has_preload = false;
  if (a.rows > dim || a.cols > dim || bd.rows > dim || bd.cols > dim)
    return error(self, format("%s operands %lldx%lld / %lldx%lld: at most DIM=%lld", name, a.rows, a.cols, bd.rows,
                              bd.cols, dim));
  int64_t A[MAX_DIM * MAX_DIM], BD[MAX_DIM * MAX_DIM], result[MAX_DIM * MAX_DIM];
  if (a.addr.garbage) {
    std::fill(A, A + dim * dim, 0);
  } else {
    if (a.addr.is_acc)
      return error(self, format("%s reads A from the accumulator; A must be in the scratchpad", name));
    if (!spad_range(self, a.addr, a.rows, std::string(name) + " A", self->a_stride)) return false;
    read_local(self, a.addr, a.rows, a.cols, self->a_stride, A);
  }
  if (self->a_transpose) transpose(A, dim);
  if (!bd.addr.garbage) {
    if (!spad_range(self, bd.addr, bd.rows, name)) return false;
    read_local(self, bd.addr, bd.rows, bd.cols, 1, BD);
  }
  Rows reads[2];
  int nreads = 0;
  if (!a.addr.garbage) reads[nreads++] = {SPAD, (long long)a.addr.row, (a.rows - 1) * self->a_stride + 1};
  if (!bd.addr.garbage) reads[nreads++] = {bd.addr.space(), (long long)bd.addr.row, bd.rows};
  long long macs;
  if (self->dataflow == 1) {  // weight stationary
    if (preloaded) {
      if (pre.bd.garbage)
        std::fill(self->weights, self->weights + dim * dim, 0);
      else
        read_local(self, pre.bd, pre.bd_rows, pre.bd_cols, 1, self->weights);
      if (self->b_transpose) transpose(self->weights, dim);
      self->weights_small = pre.bd.garbage || !pre.bd.is_acc;
    }
    matmul(A, self->weights, result, dim, self->weights_small);  // A is from the scratchpad (or zero)
    if (!bd.addr.garbage)
      for (long long i = 0; i < dim * dim; i++) result[i] += BD[i];
    macs = a.rows * dim * dim;
  } else {  // output stationary: BD is B; preload gave D
    if (bd.addr.garbage) std::fill(BD, BD + dim * dim, 0);
    if (self->b_transpose) transpose(BD, dim);
    if (preloaded) {
      if (pre.bd.garbage)
        std::fill(self->os_state, self->os_state + dim * dim, 0);
      else
        read_local(self, pre.bd, pre.bd_rows, pre.bd_cols, 1, self->os_state);
    }
    matmul(A, BD, result, dim, bd.addr.garbage || !bd.addr.is_acc);
    for (long long i = 0; i < dim * dim; i++) self->os_state[i] = wrap_int32(self->os_state[i] + result[i]);
    std::copy(self->os_state, self->os_state + dim * dim, result);
    macs = dim * dim * dim;
  }
  if (!add_counter(self, S_macs, macs)) return false;
  Rows writes[1];
  int nwrites = 0;
  if (!pre.c.garbage) {
    if (!write_output(self, pre.c, pre.c_rows, pre.c_cols, result)) return false;
    writes[nwrites++] = {pre.c.space(), (long long)pre.c.row, (pre.c_rows - 1) * self->c_stride + 1};
  }
  double occ, lat, done;
  self->tm->compute_cost(std::max<long long>(a.rows, 1), dim, &occ, &lat);
  return self->tm->run_compute(issued, occ, lat, reads, nreads, writes, nwrites, &done);
}

bool flush(CoreObject* self) {
  double t, done;
  if (!self->tm->issue(EX, &t)) return false;
  if (!count(self, S_flush)) return false;
  self->has_preload = false;
  return self->tm->run(EX, t, self->tm->flush_dims * (double)self->dim, 0, nullptr, 0, nullptr, 0, &done);
}

bool core_ready(CoreObject* self) {
  if (self->bound && self->tm) return true;
  PyErr_SetString(PyExc_RuntimeError, "Core used before __init__");
  return false;
}

// Gemmini._execute: the primitive commands here, everything else in Python (_execute_other)
PyObject* Core_execute(CoreObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (!core_ready(self)) return nullptr;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "_execute(funct, rs1, rs2)");
    return nullptr;
  }
  long funct = PyLong_AsLong(args[0]);
  uint64_t rs1 = PyLong_AsUnsignedLongLong(args[1]), rs2 = PyLong_AsUnsignedLongLong(args[2]);
  if (PyErr_Occurred()) return nullptr;
  TimingState& tm = *self->tm;
  if (PyList_GET_SIZE(self->pending_writes) && !land_writes(self, tm.cpu_now())) return nullptr;
  bool ok;
  double t;
  switch (funct) {
    case 0:
      ok = config(self, rs1, rs2);
      break;
    case 1:  // MVIN2
    case 2:  // MVIN
    case 14:  // MVIN3
      ok = tm.issue(LOAD, &t) && mvin(self, rs1, rs2, funct == 2 ? 0 : funct == 1 ? 1 : 2, t);
      break;
    case 3:
      ok = tm.issue(STORE, &t) && mvout(self, rs1, rs2, t);
      break;
    case 4:
    case 5:
      ok = tm.issue(EX, &t) && compute(self, rs1, rs2, funct == 4, t);
      break;
    case 6:
      ok = tm.issue(EX, &t) && preload(self, rs1, rs2, t);
      break;
    case 7:
      ok = flush(self);
      break;
    default: {
      PyObject* r = PyObject_CallMethodObjArgs((PyObject*)self, S_execute_other, args[0], args[1], args[2], nullptr);
      ok = r != nullptr;
      Py_XDECREF(r);
    }
  }
  if (!ok) return nullptr;
  if (!self->delay_stores && !land_writes(self, INFINITY)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* Core_fence(CoreObject* self, PyObject*) {
  if (!core_ready(self)) return nullptr;
  self->tm->fence();
  if (!land_writes(self, INFINITY)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* Core_land_writes(CoreObject* self, PyObject* now) {
  if (!core_ready(self)) return nullptr;
  double t = PyFloat_AsDouble(now);
  if ((t == -1.0 && PyErr_Occurred()) || !land_writes(self, t)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* Core_ld(CoreObject* self, PyObject* index) {
  long i = PyLong_AsLong(index);
  if (PyErr_Occurred()) return nullptr;
  if (i < 0 || i > 2) {
    PyErr_SetString(PyExc_IndexError, "load configuration index out of range");
    return nullptr;
  }
  const LoadConfig& c = self->ld[i];
  return Py_BuildValue("(KdOL)", (unsigned long long)c.stride, (double)c.scale, c.shrunk ? Py_True : Py_False,
                       c.block_stride);
}

PyObject* Core_st(CoreObject* self, PyObject*) {
  const StoreConfig& c = self->st;
  return Py_BuildValue("(KLdL)", (unsigned long long)c.stride, c.act, (double)c.scale, c.pool_stride);
}

PyObject* Core_rows_used(CoreObject* self, PyObject*) {
  if (!core_ready(self)) return nullptr;
  long long spad = std::count_if(self->spad_used, self->spad_used + self->spad_rows, [](uint8_t u) { return u; });
  long long acc = std::count_if(self->acc_used, self->acc_used + self->acc_rows, [](uint8_t u) { return u; });
  return Py_BuildValue("(LL)", spad, acc);
}

PyObject* local_addr_tuple(const LocalAddr& a) { return Py_BuildValue("K", (unsigned long long)a.raw); }

// The execute configuration, preload and array state, for the tests that compare models.
PyObject* Core_state(CoreObject* self, PyObject*) {
  if (!core_ready(self)) return nullptr;
  long long dim = self->dim;
  PyObject* weights = PyList_New(dim * dim);
  PyObject* os_state = PyList_New(dim * dim);
  if (!weights || !os_state) return nullptr;
  for (long long i = 0; i < dim * dim; i++) {
    PyList_SET_ITEM(weights, i, PyLong_FromLongLong(self->weights[i]));
    PyList_SET_ITEM(os_state, i, PyLong_FromLongLong(self->os_state[i]));
  }
  PyObject* pre = Py_None;
  Py_INCREF(Py_None);
  if (self->has_preload) {
    Py_DECREF(Py_None);
    const Preload& p = self->pre;
    pre = Py_BuildValue("(NLLNLL)", local_addr_tuple(p.bd), p.bd_cols, p.bd_rows, local_addr_tuple(p.c), p.c_cols,
                        p.c_rows);
  }
  return Py_BuildValue("{s:L,s:L,s:O,s:O,s:L,s:K,s:L,s:L,s:N,s:N,s:N}", "dataflow", self->dataflow, "sys_act",
                       self->sys_act, "a_transpose", self->a_transpose ? Py_True : Py_False, "b_transpose",
                       self->b_transpose ? Py_True : Py_False, "a_stride", self->a_stride, "sys_shift",
                       (unsigned long long)self->sys_shift, "c_stride", self->c_stride, "dim", dim, "preload", pre,
                       "weights", weights, "os_state", os_state);
}

// a writable buffer of exactly `length` items of `itemsize` bytes (as raw bytes or as items)
bool get_buffer(PyObject* obj, Py_buffer* view, Py_ssize_t itemsize, Py_ssize_t length, const char* what) {
  if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return false;
  if ((view->itemsize != itemsize && view->itemsize != 1) || view->len != length * itemsize) {
    PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes", what, length, itemsize);
    PyBuffer_Release(view);
    return false;
  }
  return true;
}

void release(CoreObject* self) {
  if (!self->bound) return;
  PyBuffer_Release(&self->spad_buf);
  PyBuffer_Release(&self->acc_buf);
  PyBuffer_Release(&self->spad_used_buf);
  PyBuffer_Release(&self->acc_used_buf);
  self->bound = false;
}

int Core_init(CoreObject* self, PyObject* args, PyObject* kwds) {
  PyObject *spad, *acc, *spad_used, *acc_used, *timing, *mem, *read_rows_fn, *counters, *pending, *gemmini_error;
  long long dim, max_cols_spad, max_cols_acc;
  int delay_stores;
  static const char* kwlist[] = {"dim",      "spad",          "acc",          "spad_used",    "acc_used",
                                 "timing",   "mem",           "read_rows",    "counters",     "pending_writes",
                                 "gemmini_error", "max_cols_spad", "max_cols_acc", "delay_stores", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "LOOOOOOOOO!OLLp", (char**)kwlist, &dim, &spad, &acc, &spad_used,
                                   &acc_used, &timing, &mem, &read_rows_fn, &counters, &PyList_Type, &pending,
                                   &gemmini_error, &max_cols_spad, &max_cols_acc, &delay_stores))
    return -1;
  if (!PyObject_TypeCheck(timing, &TimingType) || !((TimingObject*)timing)->s) {
    PyErr_SetString(PyExc_TypeError, "timing must be an initialized native Timing");
    return -1;
  }
  if (dim < 1 || dim > MAX_DIM) {
    PyErr_Format(PyExc_ValueError, "DIM %lld is not in 1..%d", dim, MAX_DIM);
    return -1;
  }
  release(self);
  TimingState& tm = *((TimingObject*)timing)->s;
  long long spad_rows = (long long)tm.written[SPAD].size(), acc_rows = (long long)tm.written[ACC].size();
  if (!get_buffer(spad, &self->spad_buf, 1, spad_rows * dim, "spad")) return -1;
  if (!get_buffer(acc, &self->acc_buf, 4, acc_rows * dim, "acc")) {
    PyBuffer_Release(&self->spad_buf);
    return -1;
  }
  if (!get_buffer(spad_used, &self->spad_used_buf, 1, spad_rows, "spad_used")) {
    PyBuffer_Release(&self->spad_buf);
    PyBuffer_Release(&self->acc_buf);
    return -1;
  }
  if (!get_buffer(acc_used, &self->acc_used_buf, 1, acc_rows, "acc_used")) {
    PyBuffer_Release(&self->spad_buf);
    PyBuffer_Release(&self->acc_buf);
    PyBuffer_Release(&self->spad_used_buf);
    return -1;
  }
  self->bound = true;
  self->spad = (int8_t*)self->spad_buf.buf;
  self->acc = (int32_t*)self->acc_buf.buf;
  self->spad_used = (uint8_t*)self->spad_used_buf.buf;
  self->acc_used = (uint8_t*)self->acc_used_buf.buf;
  self->dim = dim;
  self->spad_rows = spad_rows;
  self->acc_rows = acc_rows;
  self->tm = &tm;
  self->max_cols[0] = max_cols_spad;
  self->max_cols[1] = max_cols_acc;
  self->delay_stores = delay_stores;
  self->native = PyObject_TypeCheck(mem, &GuestMemoryType) && ((GuestMemoryObject*)mem)->mmu
                     ? (GuestMemoryObject*)mem
                     : nullptr;
  PyObject* objs[] = {spad, acc, spad_used, acc_used, timing, mem, read_rows_fn, counters, pending, gemmini_error};
  PyObject** slots[] = {&self->spad_obj, &self->acc_obj,       &self->spad_used_obj, &self->acc_used_obj,
                        &self->timing_obj, &self->mem,         &self->read_rows,     &self->counters,
                        &self->pending_writes, &self->gemmini_error};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
    Py_INCREF(objs[i]);
    Py_XSETREF(*slots[i], objs[i]);
  }
  // Gemmini.__init__'s execute configuration
  self->dataflow = 1;
  self->sys_act = 0;
  self->sys_shift = 0;
  self->a_transpose = self->b_transpose = false;
  self->a_stride = self->c_stride = 1;
  for (auto& l : self->ld) l = LoadConfig();
  self->st = StoreConfig();
  self->has_preload = false;
  std::fill(self->weights, self->weights + MAX_DIM * MAX_DIM, 0);
  self->weights_small = true;
  std::fill(self->os_state, self->os_state + MAX_DIM * MAX_DIM, 0);
  return 0;
}

PyObject* Core_new(PyTypeObject* type, PyObject*, PyObject*) { return type->tp_alloc(type, 0); }

int Core_traverse(CoreObject* self, visitproc visit, void* arg) {
  Py_VISIT(self->spad_obj);
  Py_VISIT(self->acc_obj);
  Py_VISIT(self->spad_used_obj);
  Py_VISIT(self->acc_used_obj);
  Py_VISIT(self->timing_obj);
  Py_VISIT(self->mem);
  Py_VISIT(self->read_rows);
  Py_VISIT(self->counters);
  Py_VISIT(self->pending_writes);
  Py_VISIT(self->gemmini_error);
  Py_VISIT(self->dict);
  return 0;
}

int Core_clear(CoreObject* self) {
  release(self);
  self->tm = nullptr;
  self->native = nullptr;
  Py_CLEAR(self->spad_obj);
  Py_CLEAR(self->acc_obj);
  Py_CLEAR(self->spad_used_obj);
  Py_CLEAR(self->acc_used_obj);
  Py_CLEAR(self->timing_obj);
  Py_CLEAR(self->mem);
  Py_CLEAR(self->read_rows);
  Py_CLEAR(self->counters);
  Py_CLEAR(self->pending_writes);
  Py_CLEAR(self->gemmini_error);
  Py_CLEAR(self->dict);
  return 0;
}

void Core_dealloc(CoreObject* self) {
  PyObject_GC_UnTrack(self);
  Core_clear(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

PyMethodDef Core_methods[] = {
    {"_execute", (PyCFunction)(void (*)(void))Core_execute, METH_FASTCALL, "Run one command (Gemmini._execute)."},
    {"_fence", (PyCFunction)Core_fence, METH_NOARGS, "Wait for every unit; every pending store lands."},
    {"land_writes", (PyCFunction)Core_land_writes, METH_O, "Stores that completed by `now` reach memory."},
    {"_ld", (PyCFunction)Core_ld, METH_O, "(stride, scale, shrunk, block_stride) of load configuration i."},
    {"_st", (PyCFunction)Core_st, METH_NOARGS, "(stride, act, scale, pool_stride) of the store configuration."},
    {"_state", (PyCFunction)Core_state, METH_NOARGS, "The execute configuration, preload and arrays, for tests."},
    {"rows_used", (PyCFunction)Core_rows_used, METH_NOARGS, "Scratchpad and accumulator rows written so far."},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef Core_members[] = {
    {"spad_buffer", T_OBJECT_EX, offsetof(CoreObject, spad_obj), READONLY, "scratchpad rows (int8)"},
    {"acc_buffer", T_OBJECT_EX, offsetof(CoreObject, acc_obj), READONLY, "accumulator rows (int32)"},
    {"spad_used_buffer", T_OBJECT_EX, offsetof(CoreObject, spad_used_obj), READONLY, "scratchpad rows written"},
    {"acc_used_buffer", T_OBJECT_EX, offsetof(CoreObject, acc_used_obj), READONLY, "accumulator rows written"},
    {"timing", T_OBJECT_EX, offsetof(CoreObject, timing_obj), READONLY, "the timing model"},
    {"mem", T_OBJECT_EX, offsetof(CoreObject, mem), READONLY, "guest memory"},
    {"counters", T_OBJECT_EX, offsetof(CoreObject, counters), 0, "command counters (replaceable)"},
    {"pending_writes", T_OBJECT_EX, offsetof(CoreObject, pending_writes), READONLY,
     "(lands at, addr, data) of stores in flight"},
    {"dim", T_LONGLONG, offsetof(CoreObject, dim), READONLY, "DIM"},
    {"delay_stores", T_BOOL, offsetof(CoreObject, delay_stores), READONLY, "stores land when they complete"},
    {nullptr, 0, 0, 0, nullptr}};

PyObject* mmu_type_capsule(PyObject*, PyObject*) {
  // pybind11's cross-module protocol takes a capsule named after std::type_info's own type
  return PyCapsule_New((void*)&typeid(mmu_t), typeid(std::type_info).name(), nullptr);
}

PyMethodDef module_methods[] = {
    {"mmu_type_capsule", mmu_type_capsule, METH_NOARGS,
     "typeid(mmu_t) in a capsule, for pybind11's _pybind11_conduit_v1_ (gives the C++ pointer of `proc.mmu`)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_native", "The Gemmini model's hot path, compiled.", -1,
                          module_methods};

bool ready_type(PyTypeObject* type, const char* name, const char* doc, Py_ssize_t size, destructor dealloc,
                traverseproc traverse, inquiry clear, initproc init, newfunc tp_new, PyMethodDef* methods,
                PyMemberDef* members, PyGetSetDef* getset, Py_ssize_t dictoffset) {
  type->tp_name = name;
  type->tp_doc = doc;
  type->tp_basicsize = size;
  type->tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  type->tp_dealloc = dealloc;
  type->tp_traverse = traverse;
  type->tp_clear = clear;
  type->tp_init = init;
  type->tp_new = tp_new;
  type->tp_methods = methods;
  type->tp_members = members;
  type->tp_getset = getset;
  type->tp_dictoffset = dictoffset;
  return PyType_Ready(type) == 0;
}

}  // namespace

PyMODINIT_FUNC PyInit__native() {
  if (!ready_type(&TimingType, "autocomp_gemmini.model._native.Timing", "timing.TimingModel in C++.",
                  sizeof(TimingObject), (destructor)Timing_dealloc, (traverseproc)Timing_traverse,
                  (inquiry)Timing_clear, (initproc)Timing_init, Timing_new, Timing_methods, Timing_members,
                  Timing_getset, offsetof(TimingObject, dict)) ||
      !ready_type(&GuestMemoryType, "autocomp_gemmini.model._native.GuestMemory",
                  "memory.SpikeMemory through Spike's MMU in C++.", sizeof(GuestMemoryObject),
                  (destructor)GuestMemory_dealloc, (traverseproc)GuestMemory_traverse, (inquiry)GuestMemory_clear,
                  (initproc)GuestMemory_init, PyType_GenericNew, GuestMemory_methods, GuestMemory_members, nullptr,
                  offsetof(GuestMemoryObject, dict)) ||
      !ready_type(&CoreType, "autocomp_gemmini.model._native.Core",
                  "functional.Gemmini's primitive commands (int8) in C++.", sizeof(CoreObject),
                  (destructor)Core_dealloc, (traverseproc)Core_traverse, (inquiry)Core_clear, (initproc)Core_init,
                  Core_new, Core_methods, Core_members, nullptr, offsetof(CoreObject, dict)))
    return nullptr;
  S_commands = PyUnicode_InternFromString("commands");
  S_macs = PyUnicode_InternFromString("macs");
  S_bytes_in = PyUnicode_InternFromString("bytes_in");
  S_bytes_out = PyUnicode_InternFromString("bytes_out");
  S_tobytes = PyUnicode_InternFromString("tobytes");
  S_write = PyUnicode_InternFromString("write");
  S_execute_other = PyUnicode_InternFromString("_execute_other");
  S_flush = PyUnicode_InternFromString("flush");
  ONE = PyLong_FromLong(1);
  const char* names[] = {"config",  "mvin",    "mvin2",           "mvin3",
                         "mvout",   "preload", "compute_preloaded", "compute_accumulated"};
  for (int i = 0; i < 8; i++) COMMAND_NAMES[i] = PyUnicode_InternFromString(names[i]);
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  PyTypeObject* types[] = {&TimingType, &GuestMemoryType, &CoreType};
  const char* type_names[] = {"Timing", "GuestMemory", "Core"};
  for (int i = 0; i < 3; i++) {
    Py_INCREF(types[i]);
    if (PyModule_AddObject(m, type_names[i], (PyObject*)types[i]) < 0) {
      Py_DECREF(types[i]);
      Py_DECREF(m);
      return nullptr;
    }
  }
  return m;
}
