// Parse, verify and execute on one process (no MPI: collectives see a
// 1 x 1 grid). Size and time are capped so every input runs in milliseconds:
// at most 4 KiB of text, no array above 4 KiB anywhere, and no while loop
// (its trip count is unbounded). Parameters are all-zero arrays.
#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/fuzz/fuzz_util.h"

enum { kMaxText = 4096, kMaxArrayBytes = 4096, kMaxInstructions = 256 };

static bool shape_small(const hl_shape_t *s) {
  for (int i = 0; i < s->tuple_count; i++)
    if (!shape_small(&s->tuple[i])) return false;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) return false;  // unbounded dynamic: no literal of it
  return hl_shape_byte_size(s) <= kMaxArrayBytes;
}

// Runs fast enough for fuzzing: small shapes, no loops, few instructions.
static bool cheap(const hl_module_t *m) {
  int total = 0;
  for (int c = 0; c < m->computation_count; c++) {
    const hl_computation_t *comp = m->computations[c];
    total += comp->instruction_count;
    for (int i = 0; i < comp->instruction_count; i++) {
      const hl_instruction_t *inst = comp->instructions[i];
      if (inst->opcode == HL_OP_WHILE || !shape_small(&inst->shape)) return false;
    }
  }
  return total <= kMaxInstructions;
}

static void run(const hl_module_t *m) {
  const hl_computation_t *entry = m->entry;
  hl_literal_t *args[64] = {NULL};
  int n = entry->parameter_count;
  if (n > 64) return;
  hl_status_t st = NULL;
  for (int i = 0; i < n && !st; i++)
    st = entry->parameters[i] ? hl_literal_create(&entry->parameters[i]->shape, &args[i])
                              : HL_INVALID("missing parameter");
  hl_literal_t *result = NULL;
  if (!st) {
    hl_exec_options_t opts = {.num_replicas = 1, .num_partitions = 1};
    st = hl_execute(m, &opts, args, n, &result);
  }
  hl_literal_release(result);
  for (int i = 0; i < n; i++) hl_literal_release(args[i]);
  hl_fuzz_drop(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxText) return 0;
  char *text = hl_fuzz_terminated_copy(data, size);
  hl_module_t *module = NULL;
  hl_status_t st = hl_parse_hlo_module(text, size, "fuzz.hlo", &module);
  if (!st) st = hl_verify_module(module);
  if (!st && module->entry && cheap(module)) run(module);
  hl_fuzz_drop(st);
  hl_module_destroy(module);
  free(text);
  return 0;
}
