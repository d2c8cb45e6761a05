// The launcher's watch over the hosts its ranks run on, for a starter that
// keeps none itself. MPICH's Hydra talks to its proxies over TCP with no
// keepalive: when a host's link is cut, mpiexec and the ranks elsewhere wait
// for it forever (Open MPI's daemons have oob_tcp_keepalive, which spawn.c
// sets). With the watch, every rank connects one TCP socket to the
// launcher and says its rank and host; the launcher probes each connection
// with TCP keepalive (3 s idle, then 3 probes 1 s apart, as for Open MPI)
// and, when one goes unanswered, names the rank and its host and stops the
// job. A rank that ends, or is killed, closes its socket: that is the
// starter's to report, not the watch's.
#ifndef HL_LAUNCHER_HOST_WATCH_H_
#define HL_LAUNCHER_HOST_WATCH_H_

#include <stdbool.h>
#include <stddef.h>

#include "runtime/base/status.h"

// The environment variable that carries the launcher's address to the
// ranks: "<token> <ip>:<port>[,<ip>:<port>...]".
#define HL_HOST_WATCH_ENV "HLO_LAUNCH_HOST_WATCH"

typedef struct hl_host_watch hl_host_watch_t;

// Launcher side: listens on every interface (an ephemeral port).
hl_status_t hl_host_watch_create(hl_host_watch_t **out_watch);
void hl_host_watch_destroy(hl_host_watch_t *watch);
// The value of HL_HOST_WATCH_ENV for the ranks: a random token and the
// launcher's IPv4 addresses, those of its network interfaces first and the
// loopback last.
const char *hl_host_watch_address(const hl_host_watch_t *watch);
// Serves the connections for up to `timeout_ms`. True when a rank's
// connection went unanswered; `msg` then names it and its host.
bool hl_host_watch_poll(hl_host_watch_t *watch, int timeout_ms, char *msg, size_t cap);

// Rank side: connects to the launcher named in HL_HOST_WATCH_ENV (nothing
// when unset) and keeps the socket open until the process ends. A launcher
// it cannot reach is said on stderr; the rank runs on.
void hl_host_watch_join(int rank);

#endif  // HL_LAUNCHER_HOST_WATCH_H_
