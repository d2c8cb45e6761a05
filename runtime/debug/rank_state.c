// A rank's debugging state in a shared file mapping (see rank_state.h).
#define _GNU_SOURCE
#include "runtime/debug/rank_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int64_t hl_rank_state_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void hl_rank_state_path(const char *dir, int rank, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/rank%d.state", dir, rank);
}

hl_status_t hl_rank_state_create(const char *path, int rank, const char *program,
                                 hl_rank_state_t **out_state) {
  *out_state = NULL;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return HL_ERROR(HL_IO_ERROR, "cannot create %s: %s", path, strerror(errno));
  hl_status_t st = NULL;
  if (ftruncate(fd, (off_t)sizeof(hl_rank_state_t)) != 0)
    st = HL_ERROR(HL_IO_ERROR, "cannot size %s: %s", path, strerror(errno));
  void *map = MAP_FAILED;
  if (!st) {
    map = mmap(NULL, sizeof(hl_rank_state_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) st = HL_ERROR(HL_IO_ERROR, "cannot map %s: %s", path, strerror(errno));
  }
  close(fd);
  if (st) return st;
  hl_rank_state_t *s = map;
  memset(s, 0, sizeof(*s));
  s->rank = rank;
  s->pid = (int32_t)getpid();
  gethostname(s->host, sizeof(s->host) - 1);
  snprintf(s->program, sizeof(s->program), "%s", program ? program : "");
  for (int d = 0; d < HL_RANK_STATE_MAX_DEPTH; d++) s->frames[d].id = HL_RANK_STATE_NO_ID;
  s->phase_ns = s->progress_ns = hl_rank_state_now_ns();
  __atomic_store_n(&s->magic, (uint32_t)HL_RANK_STATE_MAGIC, __ATOMIC_RELEASE);
  *out_state = s;
  return NULL;
}

hl_status_t hl_rank_state_read(const char *path, hl_rank_state_t *out_copy) {
  memset(out_copy, 0, sizeof(*out_copy));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return HL_ERROR(errno == ENOENT ? HL_NOT_FOUND : HL_IO_ERROR, "cannot open %s: %s", path,
                    strerror(errno));
  ssize_t n = pread(fd, out_copy, sizeof(*out_copy), 0);
  close(fd);
  if (n != (ssize_t)sizeof(*out_copy) || out_copy->magic != HL_RANK_STATE_MAGIC)
    return HL_ERROR(HL_IO_ERROR, "%s is not a complete rank state", path);
  return NULL;
}

void hl_rank_state_close(hl_rank_state_t *state) {
  if (state) munmap(state, sizeof(*state));
}

void hl_rank_state_set_phase(hl_rank_state_t *state, hl_rank_phase_t phase) {
  if (!state) return;
  state->phase_ns = hl_rank_state_now_ns();
  __atomic_store_n(&state->phase, (int32_t)phase, __ATOMIC_RELEASE);
}

const hl_instruction_t *hl_rank_state_find_instruction(const hl_module_t *module, int64_t id) {
  if (!module) return NULL;
  for (int k = 0; k < module->computation_count; k++) {
    const hl_computation_t *c = module->computations[k];
    for (int i = 0; i < c->instruction_count; i++)
      if (c->instructions[i]->id == id) return c->instructions[i];
  }
  return NULL;
}
