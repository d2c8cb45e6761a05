// StableHLO portable artifacts: the MLIR bytecode container (every section,
// index and offset), the VHLO conversion function by function, and the
// lowering of what converts whole.
#include "runtime/bytecode/vhlo.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hl_bc_module_t bc;
  hl_status_t st = hl_bc_read(data, size, "fuzz.mlirbc", &bc);
  if (!st) {
    hl_mlir_file_t file;
    hl_vhlo_skipped_t skipped;
    st = hl_vhlo_to_mlir_partial(&bc, &file, &skipped);
    if (!st) hl_mlir_file_deinit(&file);
    hl_vhlo_skipped_deinit(&skipped);
    hl_bc_module_deinit(&bc);
  }
  hl_fuzz_drop(st);
  hl_module_t *module = NULL;
  hl_fuzz_drop(hl_bytecode_load(data, size, "fuzz.mlirbc", &module));
  hl_module_destroy(module);
  return 0;
}
