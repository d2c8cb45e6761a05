#define _GNU_SOURCE  // accept4, getrandom's header

#include "launcher/host_watch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/alloc.h"

// A cut link shows after at most idle + probes * interval seconds.
enum { kKeepIdleS = 3, kKeepIntervalS = 1, kKeepProbes = 3 };
enum { kHelloMax = 160 };

typedef struct connection {
  int fd;
  int rank;  // -1 until its hello arrived
  char host[64];
  char line[kHelloMax];
  size_t used;
} connection_t;

struct hl_host_watch {
  int listen_fd;
  char token[33];
  char address[1024];
  connection_t *conns;
  int count, cap;
};

static void close_connection(hl_host_watch_t *w, int i) {
  close(w->conns[i].fd);
  w->conns[i] = w->conns[--w->count];
}

// IPv4 addresses of the interfaces that are up, the loopback last (a rank
// on the launcher's host reaches it there; another host's loopback is its
// own and refuses).
static void list_addresses(hl_host_watch_t *w, int port) {
  struct ifaddrs *all = NULL;
  size_t used = (size_t)snprintf(w->address, sizeof(w->address), "%s ", w->token);
  bool any = false;
  if (getifaddrs(&all) == 0) {
    for (int loopback = 0; loopback < 2; loopback++)
      for (struct ifaddrs *a = all; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP) ||
            ((a->ifa_flags & IFF_LOOPBACK) != 0) != (loopback == 1))
          continue;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, ip, sizeof(ip));
        int n = snprintf(w->address + used, sizeof(w->address) - used, "%s%s:%d", any ? "," : "",
                         ip, port);
        if (n < 0 || (size_t)n >= sizeof(w->address) - used) break;  // enough addresses
        used += (size_t)n;
        any = true;
      }
    freeifaddrs(all);
  }
  if (!any) snprintf(w->address + used, sizeof(w->address) - used, "127.0.0.1:%d", port);
}

hl_status_t hl_host_watch_create(hl_host_watch_t **out_watch) {
  *out_watch = NULL;
  hl_host_watch_t *w = hl_calloc(1, sizeof(*w));
  if (!w) return HL_OOM();
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (size_t i = 0; i < sizeof(bytes); i++)
      bytes[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (getpid() >> (i % 3 * 8)) ^ i);
  }
  for (size_t i = 0; i < sizeof(bytes); i++) snprintf(w->token + 2 * i, 3, "%02x", bytes[i]);
  w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t len = sizeof(addr);
  if (w->listen_fd < 0 || bind(w->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
      listen(w->listen_fd, SOMAXCONN) != 0 ||
      getsockname(w->listen_fd, (struct sockaddr *)&addr, &len) != 0) {
    int err = errno;
    if (w->listen_fd >= 0) close(w->listen_fd);
    hl_free(w);
    return HL_INVALID("cannot listen for the ranks' host-watch connections: %s", strerror(err));
  }
  list_addresses(w, ntohs(addr.sin_port));
  *out_watch = w;
  return NULL;
}

void hl_host_watch_destroy(hl_host_watch_t *w) {
  if (!w) return;
  while (w->count) close_connection(w, w->count - 1);
  close(w->listen_fd);
  hl_free(w->conns);
  hl_free(w);
}

const char *hl_host_watch_address(const hl_host_watch_t *w) { return w->address; }

static void accept_all(hl_host_watch_t *w) {
  for (;;) {
    int fd = accept4(w->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (w->count == w->cap) {
      int cap = w->cap ? 2 * w->cap : 16;
      connection_t *grown = hl_realloc(w->conns, (size_t)cap * sizeof(*grown));
      if (!grown) {  // that rank goes unwatched; the starter still sees it
        close(fd);
        continue;
      }
      w->conns = grown;
      w->cap = cap;
    }
    int on = 1, idle = kKeepIdleS, interval = kKeepIntervalS, probes = kKeepProbes;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
    w->conns[w->count++] = (connection_t){.fd = fd, .rank = -1};
  }
}

static int compare_ints(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

// The ranks connected from `host`, in order: "6 and 7", "6, 7 and 8".
static void ranks_on(const hl_host_watch_t *w, const char *host, char *out, size_t cap) {
  int ranks[64], n = 0;
  for (int i = 0; i < w->count && n < 64; i++)
    if (w->conns[i].rank >= 0 && !strcmp(w->conns[i].host, host)) ranks[n++] = w->conns[i].rank;
  qsort(ranks, (size_t)n, sizeof(int), compare_ints);
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < n && used < cap; i++) {
    int k = snprintf(out + used, cap - used, "%s%d",
                     i == 0       ? ""
                     : i == n - 1 ? " and "
                                  : ", ",
                     ranks[i]);
    if (k < 0) break;
    used += (size_t)k;
  }
}

// Reads what connection i sent; false when it is to be closed (its rank
// ended, or it is no rank of this job). Sets *lost when the peer stopped
// answering.
static bool serve(hl_host_watch_t *w, int i, bool *lost) {
  connection_t *c = &w->conns[i];
  for (;;) {
    char buf[128];
    ssize_t n = read(c->fd, buf, sizeof(buf));
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      *lost = c->rank >= 0 && (errno == ETIMEDOUT || errno == EHOSTUNREACH || errno == ENETUNREACH);
      return false;
    }
    if (c->rank >= 0) continue;  // nothing more is expected
    for (ssize_t k = 0; k < n; k++) {
      if (c->used + 1 >= sizeof(c->line)) return false;
      if (buf[k] != '\n') {
        c->line[c->used++] = buf[k];
        continue;
      }
      c->line[c->used] = '\0';
      char token[40];
      int rank;
      if (sscanf(c->line, "%39s %d %63s", token, &rank, c->host) != 3 ||
          strcmp(token, w->token) != 0 || rank < 0)
        return false;
      c->rank = rank;
      static const char kOk[] = "ok\n";
      if (write(c->fd, kOk, sizeof(kOk) - 1) != (ssize_t)sizeof(kOk) - 1) return false;
      break;
    }
  }
}

bool hl_host_watch_poll(hl_host_watch_t *w, int timeout_ms, char *msg, size_t cap) {
  struct pollfd *p = hl_calloc((size_t)w->count + 1, sizeof(*p));
  if (!p) {
    struct timespec nap = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
    nanosleep(&nap, NULL);
    return false;
  }
  int n = w->count;
  p[0] = (struct pollfd){.fd = w->listen_fd, .events = POLLIN};
  for (int i = 0; i < n; i++) p[i + 1] = (struct pollfd){.fd = w->conns[i].fd, .events = POLLIN};
  int ready = poll(p, (nfds_t)n + 1, timeout_ms);
  bool lost = false;
  if (ready > 0) {
    // From the last, so closing one (moving the last into its place) leaves
    // the ones still to visit where they were.
    for (int i = n - 1; i >= 0 && !lost; i--) {
      if (!p[i + 1].revents) continue;
      bool lost_here = false;
      if (serve(w, i, &lost_here)) continue;
      if (lost_here) {
        char ranks[256];
        ranks_on(w, w->conns[i].host, ranks, sizeof(ranks));
        snprintf(msg, cap,
                 "lost contact with rank %d on host %s (ranks there: %s): its connection to the "
                 "launcher went unanswered for %d s (TCP keepalive), so that host is down or its "
                 "network link was cut; stopping the job",
                 w->conns[i].rank, w->conns[i].host, ranks,
                 kKeepIdleS + kKeepProbes * kKeepIntervalS);
        lost = true;
      }
      close_connection(w, i);
    }
    if (p[0].revents & POLLIN) accept_all(w);
  }
  hl_free(p);
  return lost;
}

//===----------------------------------------------------------------------===//
// Rank side
//===----------------------------------------------------------------------===//

// Waits for `events` on fd for up to `ms`.
static bool wait_for(int fd, short events, int ms) {
  struct pollfd p = {.fd = fd, .events = events};
  int r;
  do {
    r = poll(&p, 1, ms);
  } while (r < 0 && errno == EINTR);
  return r > 0 && (p.revents & events);
}

// A connection to ip:port that answered our hello; -1 when none.
static int try_connect(const char *ip, int port, const char *hello) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int err = 0;
  socklen_t len = sizeof(err);
  bool ok = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 ||
            (errno == EINPROGRESS && wait_for(fd, POLLOUT, 2000) &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0);
  size_t n = strlen(hello);
  ok = ok && write(fd, hello, n) == (ssize_t)n;
  char reply[4] = {0};
  ok = ok && wait_for(fd, POLLIN, 2000) && read(fd, reply, 3) == 3 && !memcmp(reply, "ok\n", 3);
  if (!ok) {
    close(fd);
    return -1;
  }
  return fd;
}

void hl_host_watch_join(int rank) {
  const char *env = getenv(HL_HOST_WATCH_ENV);
  if (!env || !*env) return;
  char token[40], host[64] = "?", hello[kHelloMax];
  int skip = 0;
  if (sscanf(env, "%39s %n", token, &skip) != 1 || skip == 0) return;
  gethostname(host, sizeof(host));
  host[sizeof(host) - 1] = '\0';
  for (char *h = host; *h; h++)
    if (*h == ' ' || *h == '\n') *h = '_';
  snprintf(hello, sizeof(hello), "%s %d %s\n", token, rank, host);
  for (const char *p = env + skip; *p;) {
    size_t n = strcspn(p, ",");
    char entry[64];
    snprintf(entry, sizeof(entry), "%.*s", (int)(n < sizeof(entry) - 1 ? n : sizeof(entry) - 1), p);
    char *colon = strrchr(entry, ':');
    if (colon) {
      *colon = '\0';
      // Kept open until the process ends: the launcher probes it.
      if (try_connect(entry, atoi(colon + 1), hello) >= 0) return;
    }
    p += n;
    if (*p == ',') p++;
  }
  fprintf(stderr,
          "hlo-launch: rank %d on %s: cannot reach the launcher (its watch over the hosts) at %s; "
          "if this host "
          "is cut off, only --timeout ends the job\n",
          rank, host, env + skip);
}
