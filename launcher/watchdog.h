// The launcher's watch over the hosts its ranks run on, for a starter that
// keeps none itself. MPICH's Hydra talks to its proxies over TCP with no
// keepalive: when a host's link is cut, mpiexec and the ranks elsewhere wait
// for it forever (Open MPI's daemons have oob_tcp_keepalive, which spawn.c
// sets). With the watchdog, every rank connects one TCP socket to the
// launcher and says its rank and host; the launcher probes each connection
// with TCP keepalive (3 s idle, then 3 probes 1 s apart, as for Open MPI)
// and, when one goes unanswered, names the rank and its host and stops the
// job. A rank that ends, or is killed, closes its socket: that is the
// starter's to report, not the watchdog's.
#ifndef HL_LAUNCHER_WATCHDOG_H_
#define HL_LAUNCHER_WATCHDOG_H_

#include <stdbool.h>
#include <stddef.h>

#include "runtime/base/status.h"

// The environment variable that carries the launcher's address to the
// ranks: "<token> <ip>:<port>[,<ip>:<port>...]".
#define HL_WATCHDOG_ENV "HLO_LAUNCH_WATCHDOG"

typedef struct hl_watchdog hl_watchdog_t;

// Launcher side: listens on every interface (an ephemeral port).
hl_status_t hl_watchdog_create(hl_watchdog_t **out_watchdog);
void hl_watchdog_destroy(hl_watchdog_t *watchdog);
// The value of HL_WATCHDOG_ENV for the ranks: a random token and the
// launcher's IPv4 addresses, those of its network interfaces first and the
// loopback last.
const char *hl_watchdog_address(const hl_watchdog_t *watchdog);
// Serves the connections for up to `timeout_ms`. True when a rank's
// connection went unanswered; `msg` then names it and its host.
bool hl_watchdog_poll(hl_watchdog_t *watchdog, int timeout_ms, char *msg, size_t cap);

// Rank side: connects to the launcher named in HL_WATCHDOG_ENV (nothing
// when unset) and keeps the socket open until the process ends. A launcher
// it cannot reach is said on stderr; the rank runs on.
void hl_watchdog_join(int rank);

#endif  // HL_LAUNCHER_WATCHDOG_H_
