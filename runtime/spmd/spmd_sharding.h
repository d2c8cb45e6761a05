// The partitioner's sharding: for every partition, which tile of the global
// array it holds. Every form XLA prints (replicated, maximal, tiled with an
// explicit or iota device list, transposed iota, last_tile_dim_replicate,
// last_tile_dims) becomes the same thing: per data dimension a tile count,
// and per device its tile index along each dimension. Two shardings that put
// the same tile on every device are equal whatever text they came from, and
// replication is simply several devices with the same tile.
//
// Manual shardings (and manual subgroups) are refused by name: manual
// regions are not partitioned yet.
#ifndef HL_RUNTIME_SPMD_SPMD_SHARDING_H_
#define HL_RUNTIME_SPMD_SPMD_SHARDING_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"

#define HL_SPMD_MAX_DEVICES 256
#define HL_SPMD_MAX_RANK 8

typedef enum hl_spmd_kind {
  HL_SPMD_TILED = 0,    // includes replicated (every tile count 1)
  HL_SPMD_MAXIMAL = 1,  // one device holds the whole array
} hl_spmd_kind_t;

typedef struct hl_spmd_sharding {
  hl_spmd_kind_t kind;
  int rank;
  int num_devices;
  int64_t maximal_device;
  int64_t tiles[HL_SPMD_MAX_RANK];
  uint8_t coords[HL_SPMD_MAX_DEVICES][HL_SPMD_MAX_RANK];  // [device][dim]: tile index
} hl_spmd_sharding_t;

// Replicated over `num_devices` for an array of `rank` dimensions.
void hl_spmd_replicated(int rank, int num_devices, hl_spmd_sharding_t *out);

// From the IR's OpSharding (any array form) for an array of `rank`
// dimensions over `num_devices` partitions. NULL means replicated.
hl_status_t hl_spmd_from_ir(const hl_sharding_t *s, int rank, int num_devices,
                            hl_spmd_sharding_t *out);

// The IR form (explicit device list; last_tile_dim_replicate when tiles are
// held by several devices). The caller deinits it with hl_sharding_deinit.
hl_status_t hl_spmd_to_ir(const hl_spmd_sharding_t *s, hl_sharding_t *out);

// XLA's text: "{replicated}", "{maximal device=1}", "{devices=[2,1,2]0,2,1,3
// last_tile_dim_replicate}" (explicit device list).
void hl_spmd_print(const hl_spmd_sharding_t *s, hl_strbuf_t *out);

bool hl_spmd_is_replicated(const hl_spmd_sharding_t *s);
int64_t hl_spmd_tile_count(const hl_spmd_sharding_t *s);  // product of tiles
// Same tile on every device.
bool hl_spmd_equal(const hl_spmd_sharding_t *a, const hl_spmd_sharding_t *b);
// Same tile count and device tile indices along dimension da of a and db of b.
bool hl_spmd_dim_equal(const hl_spmd_sharding_t *a, int da, const hl_spmd_sharding_t *b, int db);
// Every combination of tile indices is held by the same number of devices.
bool hl_spmd_is_valid(const hl_spmd_sharding_t *s);
// Dimension d no longer split (its tiles become replication).
void hl_spmd_unsplit(hl_spmd_sharding_t *s, int d);

// Collective groups over the dimensions in `dims` (a bit mask): devices that
// hold the same tile index on every other dimension form groups that each
// hold every tile index combination along `dims` exactly once, ordered by
// that combination (row-major), so an all-gather along one dimension
// concatenates in tile order. `groups` receives group_count * group_size
// device ids.
hl_status_t hl_spmd_groups(const hl_spmd_sharding_t *s, uint32_t dims, int64_t *groups,
                           int *out_group_count, int *out_group_size);

#endif  // HL_RUNTIME_SPMD_SPMD_SHARDING_H_
