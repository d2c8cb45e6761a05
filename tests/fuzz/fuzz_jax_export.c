// jax.export's flatbuffer: detection, the bounds-checked table / vector
// reader, and loading what it wraps.
#include "runtime/bytecode/jax_export.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)hl_jax_export_looks_like(data, size);
  hl_jax_export_t ex;
  hl_fuzz_drop(hl_jax_export_read(data, size, "fuzz.jax_exported", &ex));
  hl_module_t *module = NULL;
  hl_fuzz_drop(hl_jax_export_load(data, size, "fuzz.jax_exported", &module));
  hl_module_destroy(module);
  return 0;
}
