// Host transfers of one process: the infeed queue and the outfeed directory
// (runtime/comm/channels.h says how the kernels use them).
//
//  --infeed A.npy,B.npy   the same files for every process, in order;
//  --infeed-dir DIR       per process: DIR/replica<r>_partition<p>/infeed<i>.npy
//                         for i = 0, 1, ... while the file exists;
//  --outfeed-dir DIR      outfeed / host sends write
//                         DIR/replica<r>_partition<p>/outfeed<i>.npy in order.
#ifndef HL_CHANNELS_HOST_FEEDS_H_
#define HL_CHANNELS_HOST_FEEDS_H_

#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/comm/channels.h"

// Fills env's infeed queue and outfeed_dir (creating the directory). Release
// with hl_host_feeds_close. Any of the sources may be NULL / empty.
hl_status_t hl_host_feeds_open(char *const *infeed_files, int infeed_file_count,
                               const char *infeed_dir, const char *outfeed_dir, int64_t replica,
                               int64_t partition, hl_channel_env_t *env);
void hl_host_feeds_close(hl_channel_env_t *env);

#endif  // HL_CHANNELS_HOST_FEEDS_H_
