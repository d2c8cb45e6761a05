// HLO text parser: the text XLA prints in dumps and tests (see
// ../shared/reference/HLO_FORMAT_FACTS.md §3) into the module IR.
// Errors read "<source_name>:<line>:<col>: <what> near '<token>'".
#ifndef HL_RUNTIME_TEXT_HLO_PARSER_H_
#define HL_RUNTIME_TEXT_HLO_PARSER_H_

#include <stddef.h>

#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// Parses a whole module. `source_name` (a file path) is used in messages and
// stored as module->source_path. Instruction and computation ids are
// numbered deterministically in text order; computations are stored
// callees-before-callers.
hl_status_t hl_parse_hlo_module(const char *text, size_t length, const char *source_name,
                                hl_module_t **out_module);

// Parses a shape such as "f32[2,3]{1,0}" or "(s32[], f32[4])".
hl_status_t hl_parse_shape(const char *text, hl_shape_t *out_shape);

// Parses a literal value (the part inside constant(...), e.g. "{{1,2},{3,4}}")
// of the given array or tuple shape.
hl_status_t hl_parse_literal(const char *text, const hl_shape_t *shape,
                             hl_literal_t **out_literal);

// Parses a sharding in HLO syntax, e.g. "{devices=[2,4]<=[8]}" or
// "{replicated}", into *out_sharding (hl_sharding_deinit releases it).
// Forms the IR does not hold (named mesh shardings) are an error.
hl_status_t hl_parse_sharding(const char *text, hl_sharding_t *out_sharding);

#endif  // HL_RUNTIME_TEXT_HLO_PARSER_H_
