// HLO text printer: module IR -> HLO text the parser (and XLA's) reads back.
// Output is deterministic, so text -> pb -> text -> pb is byte-stable.
#ifndef HL_RUNTIME_TEXT_HLO_PRINTER_H_
#define HL_RUNTIME_TEXT_HLO_PRINTER_H_

#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"

// Prints the module in XLA's long form: header with replica_count /
// num_partitions, computations callees first, '%'-less names, ENTRY marked,
// ROOT marked, every attribute the IR holds (constants never elided).
hl_status_t hl_print_hlo_module(const hl_module_t *module, hl_strbuf_t *out);
// One instruction line without indentation, e.g. "ROOT add.1 = f32[2]{0} add(a, b)".
void hl_print_instruction(const hl_instruction_t *inst, hl_strbuf_t *out);
// A sharding as HloSharding::ToString writes it: "{devices=[2,1]0,1}".
void hl_print_sharding(const hl_sharding_t *sharding, hl_strbuf_t *out);

#endif  // HL_RUNTIME_TEXT_HLO_PRINTER_H_
