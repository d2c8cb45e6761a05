// Channel pairing: who sends to whom on every channel of a job. Pure C, no
// MPI; channels/mpi_channels.c does the exchange between the steps.
//
//  1. hl_channel_collect (each process, on its own program): one endpoint per
//     (channel id, direction) of its send / recv instructions (host transfers
//     excluded), with the data shape and, when the instruction carries
//     _xla_send_recv_source_target_pairs, the peer those pairs give it.
//  2. Every process publishes its endpoints to every other (MPI_Allgather).
//  3. hl_channel_resolve (each process, on the same gathered table, so every
//     process reaches the same verdict): a channel without pairs must have
//     exactly one sending and one receiving process, which become each
//     other's peers; every peer must have the opposite endpoint of the same
//     channel pointing back, with the same shape. Errors name the channel.
//
// Pair ids are read in the group mode XLA gives send / recv (they always
// have a channel id and no use_global_device_ids: cross-partition), i.e. as
// partition ids within this process's replica; on a grid with one partition
// they are read as replica ids (cross-replica), so replica-only jobs can use
// them too.
#ifndef HL_CHANNELS_CHANNEL_PAIRING_H_
#define HL_CHANNELS_CHANNEL_PAIRING_H_

#include <stdint.h>

#include "runtime/base/shape.h"
#include "runtime/base/status.h"
#include "runtime/comm/channels.h"
#include "runtime/ir/module.h"

// A fixed-size record of int64 fields, so the table travels as MPI_INT64_T.
typedef struct hl_channel_endpoint {
  int64_t channel_id;
  int64_t dir;        // hl_channel_dir_t
  int64_t rank;       // the publishing process
  int64_t peer;       // from the pairs: the peer's rank, or -1 (not in any pair)
  int64_t has_pairs;  // 1: peer comes from _xla_send_recv_source_target_pairs
  int64_t dtype;      // data shape (arrays only; tuples are refused at collection)
  int64_t rank_dims;
  int64_t dims[HL_MAX_RANK];
} hl_channel_endpoint_t;

// The grid a process runs in (rank = replica * partitions + partition).
typedef struct hl_channel_grid {
  int64_t replicas, partitions;
  int64_t rank;
} hl_channel_grid_t;

// Parses a source-target pairs attribute, "{{0,1},{1,2}}" (spaces allowed,
// "{}" is no pairs). *out_pairs is owned (hl_free).
hl_status_t hl_channel_parse_pairs(const char *text, hl_source_target_t **out_pairs,
                                   int *out_count);

// Step 1. *out_endpoints is owned (hl_free); *out_count may be 0.
hl_status_t hl_channel_collect(const hl_module_t *module, const hl_channel_grid_t *grid,
                               hl_channel_endpoint_t **out_endpoints, int *out_count);

// Step 3: the routes of process `my_rank` from every process's endpoints
// (any order). *out_routes is owned (hl_free). process_count bounds peers.
hl_status_t hl_channel_resolve(const hl_channel_endpoint_t *all, int count, int64_t my_rank,
                               int64_t process_count, hl_channel_route_t **out_routes,
                               int *out_route_count);

#endif  // HL_CHANNELS_CHANNEL_PAIRING_H_
