// The fusion pass: turns an unfused module (every StableHLO program, every
// "before optimizations" HLO dump) into the fusions XLA's CPU compiler
// forms, as ordinary `fusion` instructions the blocked executor
// (fusion_program.h) runs. Runs after lowering / partitioning, before the
// executor plans the module.
//
//   HL_RETURN_IF_ERROR(hl_fusion_pass_run(module, explain_or_NULL, &stats));
//
// What it forms (after xla/service/instruction_fusion.cc and
// cpu/cpu_instruction_fusion.cc; see runtime/fusion/README.md):
// - element-wise ops, broadcasts, iota, constants, reshapes / bitcasts /
//   copies, transposes, slices, reverses and converts fused into their
//   consumers (kLoop); a producer read by several fusions is duplicated into
//   each unless it is expensive (divide, exp, log, tanh, ... on floats, as
//   XLA's IsExpensive) — then it is the root of a fusion of its own;
// - a reduce (one input, a reducer of one op) with its producers (kInput);
//   a row reduce whose users are all in one fusion that reads it broadcast
//   along its rows joins that fusion (fusion_rows.h: softmax, layer norm in
//   one pass over rows in cache; rows over HL_FUSION_ROW_BYTES, or a fusion
//   the blocked executor refuses, keep the reduce a fusion root);
// - multi-output: the producer fusion of a reduce's input that others read
//   too (softmax's exp) becomes a second output of the reduce's fusion, and
//   reduces of one input shape and dimensions that share an operand
//   (siblings) become one fusion, when no cycle results.
// A broadcast or iota is only ever materialized when an op that is not
// fused (a dot, a tuple, the root) reads it. Every candidate is compiled by
// the blocked executor first; one it does not run is left unfused. The
// fused module computes the same bits: the blocked executor evaluates each
// element with the op-by-op kernels' loops in the same order.
//
// A module that already has fusions (XLA optimized it) is left unchanged.
#ifndef HL_RUNTIME_FUSION_FUSION_PASS_H_
#define HL_RUNTIME_FUSION_FUSION_PASS_H_

#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"

typedef struct hl_fusion_pass_stats {
  int fusions;        // fusion instructions formed
  int fused;          // instructions of the input now inside fusions
  int multi_output;   // fusions with more than one output
  int rejected;       // candidates the blocked executor does not run
  bool already_fused; // the module had fusions: left unchanged
} hl_fusion_pass_stats_t;

// Rewrites `module` in place. `explain` (NULL: none) gets one line per
// instruction of the computations the pass looks at: which fusion it went
// into, or why it stays unfused. `stats` may be NULL.
hl_status_t hl_fusion_pass_run(hl_module_t *module, hl_strbuf_t *explain,
                               hl_fusion_pass_stats_t *stats);

#endif  // HL_RUNTIME_FUSION_FUSION_PASS_H_
