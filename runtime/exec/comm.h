// The communicator interface moved to its own room, runtime/comm/comm.h.
// This forwarder is kept only for bench/bench_collectives.c, which includes
// the old path; remove it once that file includes runtime/comm/comm.h.
#include "runtime/comm/comm.h"
