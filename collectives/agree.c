#include "collectives/agree.h"
#include "collectives/mpi_family.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void name_rank(const hl_agree_style_t *style, int rank, char *buf, size_t size) {
  if (style && style->name_rank) style->name_rank(style->ctx, rank, buf, size);
  else snprintf(buf, size, "rank %d", rank);
}

static const char *line_prefix(const hl_agree_style_t *style) {
  return style && style->line_prefix ? style->line_prefix : "";
}

// "0-3,6": ascending ranks as ranges.
static void format_ranks(const int *ranks, int n, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < cap; i++) {
    int j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) j++;
    used += (size_t)snprintf(buf + used, cap - used, j > i ? "%s%d-%d" : "%s%d",
                             i ? "," : "", ranks[i], ranks[j]);
    i = j;
  }
}

// The failed ranks' messages, merging ranks whose messages are identical
// into one line ("all 8 ranks: ...", "ranks 0-3,6: ...").
static void format_failures(const hl_agree_style_t *style, int size, const int *lengths,
                            const char *texts, const int *offsets, hl_strbuf_t *out) {
  bool *printed = hl_calloc((size_t)size, sizeof(bool));
  int *same = hl_calloc((size_t)size, sizeof(int));
  bool first = true;
  for (int r = 0; r < size; r++) {
    if (lengths[r] < 0 || (printed && printed[r])) continue;
    const char *msg = texts + offsets[r];
    int count = 0;
    for (int k = r; k < size && printed && same; k++) {
      if (lengths[k] != lengths[r] || memcmp(texts + offsets[k], msg, (size_t)lengths[r]) != 0)
        continue;
      printed[k] = true;
      same[count++] = k;
    }
    char who[320];
    if (count <= 1) {
      name_rank(style, r, who, sizeof(who));
    } else if (count == size) {
      snprintf(who, sizeof(who), "all %d ranks", size);
    } else {
      char list[256];
      format_ranks(same, count, list, sizeof(list));
      snprintf(who, sizeof(who), "ranks %s", list);
    }
    hl_strbuf_appendf(out, "%s%s%s: %.*s", first ? "" : "\n", line_prefix(style), who,
                      lengths[r], msg);
    first = false;
  }
  hl_free(printed);
  hl_free(same);
}

static void abort_stuck(MPI_Comm comm, hl_status_t mine, const hl_agree_style_t *style) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  char who[320];
  name_rank(style, rank, who, sizeof(who));
  fprintf(stderr, "%s%s: %s\n", line_prefix(style), who, hl_status_message(mine));
  if (style && style->abort_note) fprintf(stderr, "%s\n", style->abort_note);
  fflush(stderr);
  fflush(stdout);
  // MPICH (4.0's ch4) aborts a communicator smaller than MPI_COMM_WORLD,
  // or a duplicate of it, by exiting this process alone, and Hydra then
  // leaves the others blocked: the job hangs. MPI_COMM_WORLD makes it end
  // the whole job (the standard allows either).
  if (hl_mpi_library_family() == HL_MPI_FAMILY_MPICH) comm = MPI_COMM_WORLD;
  MPI_Abort(comm, 1);
}

hl_status_t hl_mpi_agree(MPI_Comm comm, hl_status_t mine, double stuck_seconds,
                         const hl_agree_style_t *style) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The lowest failed rank's code (codes are small non-negative ints):
  // MIN over (failed ? code : INT_MAX).
  int code = mine ? (int)hl_status_code(mine) : INT_MAX, first_code = INT_MAX;
  MPI_Request req;
  MPI_Iallreduce(&code, &first_code, 1, MPI_INT, MPI_MIN, comm, &req);
  if (mine && stuck_seconds >= 0) {
    double deadline = now_seconds() + stuck_seconds;
    for (int done = 0;;) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
      if (now_seconds() > deadline) abort_stuck(comm, mine, style);
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
    }
  } else {
    hl_mpi_polite_wait(&req, MPI_STATUS_IGNORE);
  }
  if (first_code == INT_MAX) return NULL;

  // Rank 0 gathers the messages and merges them; the merged text (short:
  // identical messages become one line) goes back to every rank.
  const char *msg = mine ? hl_status_message(mine) : "";
  // Capped so the gathered total fits Gatherv's int displacements.
  int cap = INT_MAX / size < (1 << 16) ? INT_MAX / size : (1 << 16);
  int len = mine ? (int)strnlen(msg, (size_t)cap) : -1;
  int *lengths = NULL, *offsets = NULL;
  char *texts = NULL;
  if (rank == 0) {
    lengths = hl_calloc((size_t)size, sizeof(int));
    offsets = hl_calloc((size_t)size, sizeof(int));
    if (!lengths || !offsets) abort_stuck(comm, HL_OOM(), style);  // cannot stay in step
  }
  hl_polite_gather(&len, 1, MPI_INT, lengths, 1, MPI_INT, 0, comm);
  int *counts = offsets ? hl_calloc((size_t)size, sizeof(int)) : NULL;
  if (rank == 0) {
    if (!counts) abort_stuck(comm, HL_OOM(), style);
    int total = 0;
    for (int r = 0; r < size; r++) {
      counts[r] = lengths[r] > 0 ? lengths[r] : 0;
      offsets[r] = total;
      total += counts[r];
    }
    texts = hl_malloc((size_t)total + 1);
    if (!texts) abort_stuck(comm, HL_OOM(), style);
  }
  hl_polite_gatherv(msg, len > 0 ? len : 0, MPI_CHAR, texts, counts, offsets, MPI_CHAR, 0, comm);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  long long merged = 0;
  if (rank == 0) {
    format_failures(style, size, lengths, texts, offsets, &sb);
    merged = sb.failed ? -1 : (long long)sb.length;
  }
  hl_polite_bcast(&merged, 1, MPI_LONG_LONG, 0, comm);
  // Every rank must take part in the broadcasts to stay in step: one
  // that cannot hold the text cannot, so it ends the job (never seen in
  // practice: the text is a few lines).
  char *text = hl_malloc(merged > 0 ? (size_t)merged + 1 : 1);
  if (!text || merged < 0) abort_stuck(comm, HL_OOM(), style);
  if (rank == 0) memcpy(text, hl_strbuf_cstr(&sb), (size_t)merged);
  for (long long off = 0; off < merged; off += INT_MAX / 2) {
    int n = merged - off < INT_MAX / 2 ? (int)(merged - off) : INT_MAX / 2;
    hl_polite_bcast(text + off, n, MPI_CHAR, 0, comm);
  }
  text[merged] = '\0';
  hl_status_t all =
      hl_status_make((hl_status_code_t)first_code, __FILE__, __LINE__, "%s", text);
  hl_strbuf_deinit(&sb);
  hl_free(text);
  hl_free(lengths);
  hl_free(counts);
  hl_free(offsets);
  hl_free(texts);
  hl_status_free(mine);
  return all;
}
