// Program files by content: gzip, HLO text, HloProto / HloModuleProto /
// HloSnapshot; then the verifier and the printer on what loads.
#include "runtime/base/strbuf.h"
#include "runtime/loader/program_loader.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The loader expects a terminated buffer (hl_program_load_file gives one).
  char *copy = hl_fuzz_terminated_copy(data, size);
  // A small inflate cap keeps gzip inputs within libFuzzer's memory limit.
  hl_program_load_options_t options = {.max_inflated_bytes = 1 << 20};
  hl_program_t program;
  hl_status_t st = hl_program_load_bytes_with((const uint8_t *)copy, size, "fuzz.pb", &options,
                                              &program);
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
