// The tuning table's file and its distribution (shm_tuning.h).
#include "collectives/shm/shm_tuning.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/mpi_comm.h"
#include "collectives/mpi_polite.h"

static const char *const kNames[HL_SHM_TUNE_OPS] = {
    "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "collective-permute",
    "collective-broadcast"};

const char *hl_shm_tune_op_name(hl_shm_tune_op_t op) {
  return op >= 0 && op < HL_SHM_TUNE_OPS ? kNames[op] : "?";
}

// A whole decimal number >= lo (no sign, no suffix).
static bool parse_int(const char *s, int64_t lo, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo) return false;
  *out = v;
  return true;
}

static hl_status_t parse_line(char *text, const char *where, hl_shm_tuning_t *t) {
  char *hash = strchr(text, '#');
  if (hash) *hash = '\0';
  char *save = NULL, *f[4];
  int n = 0;
  for (char *tok = strtok_r(text, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save))
    if (n < 4) f[n++] = tok;
    else n++;
  if (n == 0) return NULL;
  if (n != 3)
    return HL_INVALID("%s: want '<collective> <group size | *> <min bytes | never>', got %d "
                      "fields", where, n);
  hl_shm_tuning_entry_t e = {-1, 0, -1};
  for (int k = 0; k < HL_SHM_TUNE_OPS; k++)
    if (!strcmp(f[0], kNames[k])) e.op = k;
  if (e.op < 0)
    return HL_INVALID("%s: unknown collective '%s' (all-reduce, reduce-scatter, all-gather, "
                      "all-to-all, collective-permute, collective-broadcast)", where, f[0]);
  if (strcmp(f[1], "*") && !parse_int(f[1], 2, &e.group_size))
    return HL_INVALID("%s: group size must be * or a number >= 2, got '%s'", where, f[1]);
  if (strcmp(f[2], "never") && !parse_int(f[2], 0, &e.min_bytes))
    return HL_INVALID("%s: min bytes must be 'never' or a number >= 0, got '%s'", where, f[2]);
  for (int64_t i = 0; i < t->count; i++)
    if (t->entries[i].op == e.op && t->entries[i].group_size == e.group_size)
      return HL_INVALID("%s: a second entry for %s, group size %s", where, f[0], f[1]);
  if (t->count == HL_SHM_TUNING_MAX)
    return HL_INVALID("%s: more than %d entries", where, HL_SHM_TUNING_MAX);
  t->entries[t->count++] = e;
  return NULL;
}

hl_status_t hl_shm_tuning_read(const char *path, hl_shm_tuning_t *out) {
  memset(out, 0, sizeof(*out));
  FILE *f = fopen(path, "r");
  if (!f) return HL_INVALID("--collectives-tuning %s: %s", path, strerror(errno));
  char line[1024], where[1100];
  hl_status_t st = NULL;
  for (int no = 1; !st && fgets(line, sizeof line, f); no++) {
    snprintf(where, sizeof where, "%s:%d", path, no);
    if (!strchr(line, '\n') && !feof(f))
      st = HL_INVALID("%s: line longer than %zu characters", where, sizeof line - 2);
    else
      st = parse_line(line, where, out);
  }
  if (!st && ferror(f)) st = HL_INVALID("--collectives-tuning %s: read error", path);
  fclose(f);
  return st;
}

hl_status_t hl_shm_tuning_share(MPI_Comm comm, const char *path, hl_shm_tuning_t *out) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  hl_status_t st = rank == 0 ? hl_shm_tuning_read(path, out) : NULL;
  if (rank == 0 && st) out->count = -1;  // tells the others
  int err = hl_polite_bcast(out, (int)(sizeof(*out) / sizeof(int64_t)), MPI_INT64_T, 0, comm);
  if (st) return st;
  if (err != MPI_SUCCESS) return hl_mpi_status(err, "sharing the collectives tuning table");
  if (out->count < 0)
    return HL_INVALID("--collectives-tuning %s: rank 0 could not read it", path);
  return NULL;
}

bool hl_shm_tuning_lookup(const hl_shm_tuning_t *t, hl_shm_tune_op_t op, int group_size,
                          int64_t *out_min_bytes) {
  const hl_shm_tuning_entry_t *any = NULL;
  for (int64_t i = 0; t && i < t->count; i++) {
    const hl_shm_tuning_entry_t *e = &t->entries[i];
    if (e->op != op) continue;
    if (e->group_size == group_size) {
      *out_min_bytes = e->min_bytes;
      return true;
    }
    if (e->group_size == 0) any = e;
  }
  if (any) *out_min_bytes = any->min_bytes;
  return any != NULL;
}

hl_status_t hl_shm_tuning_write_new(const char *path, const char *text) {
  // O_EXCL: nothing the user already has is replaced, not even by a race.
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 && errno == EEXIST)
    return HL_INVALID("--collectives-tuning-out %s exists; refusing to overwrite it", path);
  if (fd < 0) return HL_INVALID("--collectives-tuning-out %s: %s", path, strerror(errno));
  size_t len = strlen(text), done = 0;
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      hl_status_t st = HL_INVALID("--collectives-tuning-out %s: %s", path, strerror(errno));
      close(fd);
      return st;
    }
    done += (size_t)w;
  }
  if (close(fd) != 0)
    return HL_INVALID("--collectives-tuning-out %s: %s", path, strerror(errno));
  return NULL;
}
