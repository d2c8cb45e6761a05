// .npy reader, then printing and writing back what it accepts; the first
// input byte also picks an expected narrow type (the untyped '<V2' / '|V1'
// path the launcher takes for bf16 / f8 parameters).
#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/base/strbuf.h"
#include "tests/fuzz/fuzz_util.h"

static void check_literal(hl_literal_t *lit) {
  hl_strbuf_t out;
  hl_strbuf_init(&out);
  hl_literal_print(lit, &out);
  hl_strbuf_deinit(&out);
  uint8_t *bytes = NULL;
  size_t n = 0;
  hl_status_t st = hl_npy_write_bytes(lit, &bytes, &n);
  if (!st) {
    // What we write must read back.
    hl_literal_t *again = NULL;
    hl_status_t back = hl_npy_read_bytes(bytes, n, "again.npy", &lit->shape, NULL, &again);
    if (back) abort();
    hl_literal_release(again);
  }
  hl_fuzz_drop(st);
  hl_free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hl_literal_t *lit = NULL;
  hl_status_t st = hl_npy_read_bytes(data, size, "fuzz.npy", NULL, NULL, &lit);
  if (!st) check_literal(lit);
  hl_fuzz_drop(st);
  hl_literal_release(lit);
  // The same bytes read as a narrow type whose file is untyped.
  hl_npy_header_t h;
  st = hl_npy_parse_header(data, size, &h);
  if (!st && h.rank <= HL_MAX_RANK) {
    static const hl_dtype_t kNarrow[] = {HL_BF16, HL_F8E4M3FN, HL_S4, HL_F8E5M2};
    hl_shape_t want = hl_shape_array(kNarrow[size % 4], h.rank, h.dims);
    lit = NULL;
    hl_status_t typed = hl_npy_read_bytes(data, size, "fuzz.npy", &want, "parameter 0", &lit);
    if (!typed) check_literal(lit);
    hl_fuzz_drop(typed);
    hl_literal_release(lit);
  }
  hl_fuzz_drop(st);
  return 0;
}
