#define _GNU_SOURCE  // mkstemps
// StableHLO portable artifact loading speed: a 100 MB artifact of f32
// constants (MLIR bytecode, VHLO), loaded by the program loader (read +
// bytecode + VHLO + lowering into literals), against only reading the same
// file, paired in the same rounds. Target (issue 23): load / read < 1.5.
// The artifact is written here, as StableHLO 0.9.0 writes one (bytecode
// version 1: attributes in each op's dictionary, no properties section).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "runtime/loader/program_loader.h"

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    if (!b->p) exit(1);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void byte(buf_t *b, unsigned char c) { put(b, &c, 1); }

// PrefixVarInt: n bytes hold (v << n) | (1 << (n - 1)); 0x00 + 8 bytes beyond 56 bits.
static void varint(buf_t *b, uint64_t v) {
  for (int n = 1; n <= 8; n++) {
    if (n < 8 ? v < (UINT64_C(1) << (7 * n)) : v < (UINT64_C(1) << 56)) {
      uint64_t e = (v << n) | (UINT64_C(1) << (n - 1));
      for (int i = 0; i < n; i++) byte(b, (unsigned char)(e >> (8 * i)));
      return;
    }
  }
  byte(b, 0);
  for (int i = 0; i < 8; i++) byte(b, (unsigned char)(v >> (8 * i)));
}

static void section(buf_t *out, int id, const buf_t *data) {
  byte(out, (unsigned char)id);
  varint(out, data->n);
  put(out, data->p, data->n);
}

enum { kStrings = 14 };
static const char *const kStr[kStrings] = {"builtin", "vhlo", "module", "func_v1", "constant_v1",
                                           "return_v1", "sym_name", "function_type",
                                           "sym_visibility", "arg_attrs", "res_attrs", "value",
                                           "main", "public"};

// @main() -> (tensor<Nxf32> x constants) { constants; return }
static void write_artifact(const char *path, int constants, size_t floats) {
  buf_t s = {0}, d = {0}, at = {0}, off = {0}, ir = {0}, out = {0};
  // Strings: count, sizes in reverse order (NUL included), then the data.
  varint(&s, kStrings);
  for (int i = kStrings - 1; i >= 0; i--) varint(&s, strlen(kStr[i]) + 1);
  for (int i = 0; i < kStrings; i++) put(&s, kStr[i], strlen(kStr[i]) + 1);
  // Dialects builtin (0), vhlo (1); op names: module | func_v1, constant_v1, return_v1.
  varint(&d, 2);
  varint(&d, 0 << 1);
  varint(&d, 1 << 1);
  varint(&d, 0), varint(&d, 1), varint(&d, 2);
  varint(&d, 1), varint(&d, 3), varint(&d, 3), varint(&d, 4), varint(&d, 5);
  // Attributes, builtin group first: 0 UnknownLoc, 1..6 key strings, 7 func
  // dict, 8.. constant dicts; then vhlo: "main", "public", TypeV1, [], tensors.
  int n_builtin = 7 + 1 + constants;
  int a_main = n_builtin, a_public = a_main + 1, a_ftype = a_main + 2, a_empty = a_main + 3,
      a_tensor0 = a_main + 4;
  size_t sizes[64];
  int n_attrs = 0;
  size_t mark = at.n;
#define END_ENTRY() (sizes[n_attrs++] = at.n - mark, mark = at.n)
  varint(&at, 15), END_ENTRY();  // UnknownLoc
  for (int k = 6; k <= 11; k++) varint(&at, 2), varint(&at, (uint64_t)k), END_ENTRY();  // keys
  // func dict: sym_name, function_type, sym_visibility, arg_attrs, res_attrs
  varint(&at, 1), varint(&at, 5);
  varint(&at, 1), varint(&at, (uint64_t)a_main);
  varint(&at, 2), varint(&at, (uint64_t)a_ftype);
  varint(&at, 3), varint(&at, (uint64_t)a_public);
  varint(&at, 4), varint(&at, (uint64_t)a_empty);
  varint(&at, 5), varint(&at, (uint64_t)a_empty);
  END_ENTRY();
  for (int c = 0; c < constants; c++)
    varint(&at, 1), varint(&at, 1), varint(&at, 6), varint(&at, (uint64_t)(a_tensor0 + c)), END_ENTRY();
  varint(&at, 14), varint(&at, 12), END_ENTRY();  // StringV1 "main"
  varint(&at, 14), varint(&at, 13), END_ENTRY();  // StringV1 "public"
  varint(&at, 17), varint(&at, 2), END_ENTRY();   // TypeV1 (function type 2)
  varint(&at, 1), varint(&at, 0), END_ENTRY();    // ArrayV1 []
  float *data = malloc(floats * sizeof(float));
  for (size_t i = 0; i < floats; i++) data[i] = (float)(i % 1000) * 0.5f;
  for (int c = 0; c < constants; c++) {
    varint(&at, 15), varint(&at, 1), varint(&at, floats * sizeof(float));
    put(&at, data, floats * sizeof(float));
    END_ENTRY();
  }
  free(data);
  int n_vhlo = n_attrs - n_builtin;
  // Types (vhlo): 0 f32, 1 tensor<floats x f32>, 2 () -> (tensor x constants).
  buf_t ty = {0};
  size_t tsizes[3], tmark = 0;
  varint(&ty, 4), tsizes[0] = ty.n - tmark, tmark = ty.n;
  varint(&ty, 20), varint(&ty, 1), varint(&ty, (uint64_t)floats << 1), varint(&ty, 0);
  tsizes[1] = ty.n - tmark, tmark = ty.n;
  varint(&ty, 8), varint(&ty, 0), varint(&ty, (uint64_t)constants);
  for (int c = 0; c < constants; c++) varint(&ty, 1);
  tsizes[2] = ty.n - tmark;
  put(&at, ty.p, ty.n);
  varint(&off, (uint64_t)n_attrs), varint(&off, 3);
  varint(&off, 0), varint(&off, (uint64_t)n_builtin);
  for (int i = 0; i < n_builtin; i++) varint(&off, sizes[i] << 1 | 1);
  varint(&off, 1), varint(&off, (uint64_t)n_vhlo);
  for (int i = n_builtin; i < n_attrs; i++) varint(&off, sizes[i] << 1 | 1);
  varint(&off, 1), varint(&off, 3);
  for (int i = 0; i < 3; i++) varint(&off, tsizes[i] << 1 | 1);
  // IR: module { func { constants; return } }
  varint(&ir, 1 << 1);
  varint(&ir, 0), byte(&ir, 0x10), varint(&ir, 0), varint(&ir, 1 << 1 | 1);
  varint(&ir, 1), varint(&ir, 0), varint(&ir, 1 << 1);
  varint(&ir, 1), byte(&ir, 0x11), varint(&ir, 0), varint(&ir, 7), varint(&ir, 1 << 1 | 1);
  varint(&ir, 1), varint(&ir, (uint64_t)constants), varint(&ir, (uint64_t)(constants + 1) << 1);
  for (int c = 0; c < constants; c++)
    varint(&ir, 2), byte(&ir, 0x03), varint(&ir, 0), varint(&ir, (uint64_t)(8 + c)),
        varint(&ir, 1), varint(&ir, 1);
  varint(&ir, 3), byte(&ir, 0x04), varint(&ir, 0), varint(&ir, (uint64_t)constants);
  for (int c = 0; c < constants; c++) varint(&ir, (uint64_t)c);
  put(&out, "ML\xEFR", 4);
  varint(&out, 1);
  put(&out, "StableHLO_v0.9.0", 17);
  section(&out, 0, &s);
  section(&out, 1, &d);
  section(&out, 2, &at);
  section(&out, 3, &off);
  section(&out, 4, &ir);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(out.p, 1, out.n, f) != out.n) {
    perror(path);
    exit(1);
  }
  fclose(f);
  free(s.p), free(d.p), free(at.p), free(off.p), free(ir.p), free(out.p), free(ty.p);
}

static double time_read(const char *path) {
  double t0 = hl_bench_now();
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) perror("fread");
  fclose(f);
  free(buf);
  return hl_bench_now() - t0;
}

static double time_load(const char *path) {
  double t0 = hl_bench_now();
  hl_program_t p;
  hl_bench_check(hl_program_load_file(path, &p), "hl_program_load_file");
  double t = hl_bench_now() - t0;
  if (p.format != HL_FORMAT_STABLEHLO_BYTECODE) {
    fprintf(stderr, "not loaded as a portable artifact\n");
    exit(1);
  }
  hl_program_deinit(&p);
  return t;
}

int main(int argc, char **argv) {
  bool quick = hl_bench_quick(argc, argv);
  int constants = 4;
  size_t floats = quick ? 1000 : (size_t)100 * 1000 * 1000 / 4 / 4;  // 4 x 25 MB of f32
  char path[] = "/tmp/bench-bytecode-XXXXXX.mlirbc";
  int fd = mkstemps(path, 7);
  if (fd < 0) return 1;
  close(fd);
  write_artifact(path, constants, floats);
  enum { kRounds = 5 };
  int reps = quick ? 1 : kRounds;
  double load[kRounds], rd[kRounds];
  for (int r = 0; r < reps; r++) {
    rd[r] = time_read(path);
    load[r] = time_load(path);
  }
  unlink(path);
  int m = hl_bench_median_round(load, rd, reps);
  printf("artifact of %.1f MB f32 constants: load %.3f s, read %.3f s\n",
         (double)constants * (double)floats * 4 / 1e6, load[m], rd[m]);
  bool ok = hl_bench_report("bytecode_load_100MB_ratio", load[m] / rd[m], "x", "read_file_s",
                            rd[m], false, 1.5);
  return ok || quick ? 0 : 1;
}
