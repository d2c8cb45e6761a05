// Program files by content: gzip, HLO text, StableHLO text (dynamic shapes
// refined from arguments made from its types), HloProto / HloModuleProto /
// HloSnapshot; then the verifier and the printer on what loads.
#include <stdlib.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/loader/program_loader.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"
#include "tests/fuzz/fuzz_util.h"

// A StableHLO program with dynamic shapes: refined from arguments made from
// its declared types ('?' = 3, scalars 3), small ones only.
static hl_status_t refine(hl_program_t *program) {
  hl_shape_t *types = NULL;
  int n = 0;
  HL_RETURN_IF_ERROR(hl_program_dynamic_entry_types(program, &types, &n));
  hl_literal_t **args = calloc((size_t)n + 1, sizeof(*args));
  hl_status_t st = args ? NULL : HL_OOM();
  for (int i = 0; !st && i < n; i++) {
    hl_shape_t s = types[i];  // shallow: arrays only
    if (!hl_shape_is_array(&s)) continue;
    s.dynamic_mask = 0;
    s.has_layout = false;
    s.layout_ext = NULL;
    for (int d = 0; d < s.rank; d++)
      if (s.dims[d] < 0) s.dims[d] = 3;
    if (hl_shape_element_count(&s) > 4096) {
      st = HL_INVALID("arguments too large for the fuzzer");
      break;
    }
    st = hl_literal_create(&s, &args[i]);
    if (!st && s.rank == 0) hl_literal_set_f64(args[i], 0, 3.0);
  }
  if (!st) st = hl_program_refine(program, args, n);
  for (int i = 0; args && i < n; i++) hl_literal_release(args[i]);
  free(args);
  for (int i = 0; i < n; i++) hl_shape_deinit(&types[i]);
  hl_free(types);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The loader expects a terminated buffer (hl_program_load_file gives one).
  char *copy = hl_fuzz_terminated_copy(data, size);
  // A small inflate cap keeps gzip inputs within libFuzzer's memory limit.
  hl_program_load_options_t options = {.max_inflated_bytes = 1 << 20,
                                       .defer_dynamic_shapes = true};
  hl_program_t program;
  hl_status_t st = hl_program_load_bytes_with((const uint8_t *)copy, size, "fuzz.pb", &options,
                                              &program);
  if (!st && program.dynamic_text) {
    st = refine(&program);
    if (st) hl_program_deinit(&program);
  }
  if (!st) {
    hl_fuzz_drop(hl_verify_module(program.module));
    hl_strbuf_t out;
    hl_strbuf_init(&out);
    hl_fuzz_drop(hl_print_hlo_module(program.module, &out));
    hl_strbuf_deinit(&out);
    hl_program_deinit(&program);
  }
  hl_fuzz_drop(st);
  free(copy);
  return 0;
}
