// Sharding annotations of StableHLO programs (what `jax.jit(f, in_shardings=
// ..., out_shardings=...).lower(...).as_text()` prints) lowered into the
// module IR's shardings, so the SPMD partitioner (runtime/spmd) reads them
// like XLA's "before optimizations" HLO:
//
//  * GSPMD form: `mhlo.sharding = "{devices=[2,4]<=[8]}"` on function
//    arguments, results and ops (`stablehlo.custom_call @Sharding`).
//  * Shardy form: `sdy.mesh @mesh = <["dp"=2, "tp"=4]>` (optionally
//    `device_ids=[...]`), `#sdy.sharding<@mesh, [{"dp"}, {}]>` on arguments
//    and results, `#sdy.sharding_per_value<[...]>` on ops,
//    `sdy.sharding_constraint` / `sdy.reshard` (a `Sharding` custom-call) and
//    `sdy.manual_computation` (a `Sharding` custom-call, SPMDFullToShardShape,
//    a call of its body, SPMDShardToFullShape: XLA's form of a shard_map).
//
// Each Shardy sharding becomes an explicit tile assignment: per tensor
// dimension the tile index is the mixed-radix number of the device's
// coordinates along that dimension's axes (major first; sub-axes
// `"x":(pre)size` take (coordinate / pre) % size); devices that differ only
// along unused axes hold the same tile (replication). Open dimensions
// (`{?}`, `{"x", ?}`) are taken as closed and priorities (`p0`) ignored:
// both only steer propagation, never the values. Refused by name:
// `unreduced` axes and manual computations over part of the mesh (manual
// subgroups).
#ifndef HL_RUNTIME_STABLEHLO_SHARDING_ATTRS_H_
#define HL_RUNTIME_STABLEHLO_SHARDING_ATTRS_H_

#include "runtime/stablehlo/lower_internal.h"

// The `mhlo.sharding` / `sdy.sharding` attribute of `op` (if any) onto the
// instruction lowered from it (a tuple sharding for a tuple-shaped one).
hl_status_t hl_lower_op_sharding(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst);

// The entry function's argument and result shardings onto its parameters
// and root (a copy becomes the root when the returned value already carries
// another sharding or is a parameter).
hl_status_t hl_lower_entry_shardings(hl_lower_t *L);

// sdy.sharding_constraint, sdy.reshard, sdy.manual_computation (binds the
// results). *out_handled is false for other ops.
hl_status_t hl_lower_sdy_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                            hl_instruction_t *const *operands, bool *out_handled);

#endif  // HL_RUNTIME_STABLEHLO_SHARDING_ATTRS_H_
