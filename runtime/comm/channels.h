// What the channel kernels (runtime/kernels/channels.c) need besides the
// communicator: this process's peer on every channel, worked out once before
// execution by the channel rendezvous (channels/), and the host-transfer
// queues (infeed / outfeed files from the command line).
//
// Message tags: a channel's MPI messages use the channel id as their tag on a
// communicator of their own (channels/mpi_channels.c duplicates the world
// for them), so several channels between one pair of processes never mix and
// channel traffic never matches a collective's message.
//
// The channel kernels' table of started transfers is theirs
// (runtime/kernels/channels.h); the executor's ordering of channel
// instructions is its own (runtime/exec/channel_order.h).
#ifndef HL_RUNTIME_COMM_CHANNELS_H_
#define HL_RUNTIME_COMM_CHANNELS_H_

#include <stdint.h>

#include "runtime/base/literal.h"

typedef enum hl_channel_dir {
  HL_CHANNEL_SEND = 0,
  HL_CHANNEL_RECV = 1,
} hl_channel_dir_t;

// This process's end of one channel in one direction. peer is the flattened
// process id at the other end, or -1 when this process takes no part (a send
// that goes nowhere, a recv that gets zeros, as collective-permute does for a
// target without a source).
typedef struct hl_channel_route {
  int64_t channel_id;
  hl_channel_dir_t dir;
  int peer;
} hl_channel_route_t;

typedef struct hl_channel_env {
  hl_channel_route_t *routes;  // owned by whoever filled it
  int route_count;
  // Host transfers: infeed and recv(is_host_transfer) consume these in order
  // (one literal per array leaf); outfeed and send(is_host_transfer) write
  // <outfeed_dir>/outfeed<i>.npy with i counting up from 0.
  hl_literal_t **infeed;       // borrowed
  int infeed_count;
  int infeed_next;
  const char *outfeed_dir;     // NULL: outfeed is an error
  int outfeed_next;
} hl_channel_env_t;

// The route of (channel_id, dir); NULL when the rendezvous did not see one.
static inline const hl_channel_route_t *hl_channel_env_route(const hl_channel_env_t *env,
                                                             int64_t channel_id,
                                                             hl_channel_dir_t dir) {
  if (!env) return NULL;
  for (int i = 0; i < env->route_count; i++)
    if (env->routes[i].channel_id == channel_id && env->routes[i].dir == dir)
      return &env->routes[i];
  return NULL;
}

#endif  // HL_RUNTIME_COMM_CHANNELS_H_
