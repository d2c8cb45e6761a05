// HLO text parser, then the verifier and the printer on what it accepts.
#include "runtime/base/strbuf.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = hl_fuzz_terminated_copy(data, size);
  hl_module_t *module = NULL;
  hl_status_t st = hl_parse_hlo_module(text, size, "fuzz.hlo", &module);
  if (!st) {
    hl_fuzz_drop(hl_verify_module(module));
    hl_strbuf_t out;
    hl_strbuf_init(&out);
    hl_fuzz_drop(hl_print_hlo_module(module, &out));
    hl_strbuf_deinit(&out);
  }
  hl_fuzz_drop(st);
  hl_module_destroy(module);
  free(text);
  return 0;
}
