#define _GNU_SOURCE  // nftw's FTW_PHYS, memmem
#include "launcher/ompi_session.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/alloc.h"

static const char kVar[] = "OMPI_MCA_orte_tmpdir_base";

// Unix socket paths are limited to 107 bytes and Open MPI adds about 60 to
// the base (ompi.<host>.<uid>/pid.<n>/<jobid>/<vpid>/...).
enum { kMaxBaseLength = 48 };

bool hl_ompi_session_begin(hl_ompi_session_t *s) {
  memset(s, 0, sizeof(*s));
  const char *user = getenv(kVar);
  if (user) {
    s->had_saved = true;
    s->saved = hl_strdup(user);
    if (!s->saved) return false;
  }
  const char *parent = user && *user ? user : getenv("TMPDIR");
  if (!parent || !*parent || strlen(parent) + sizeof("/hlmpi-XXXXXX") > kMaxBaseLength)
    parent = "/tmp";
  snprintf(s->base, sizeof(s->base), "%s/hlmpi-XXXXXX", parent);
  if (!mkdtemp(s->base)) {
    s->base[0] = '\0';
    return false;
  }
  setenv(kVar, s->base, 1);
  return true;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;  // go on: remove what can be removed
}

void hl_ompi_session_end(hl_ompi_session_t *s) {
  if (s->base[0]) nftw(s->base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  s->base[0] = '\0';
  if (s->had_saved && s->saved)
    setenv(kVar, s->saved, 1);
  else
    unsetenv(kVar);
  hl_free(s->saved);
  s->saved = NULL;
  s->had_saved = false;
}

bool hl_ompi_startup_race(const char *text, size_t length) {
  static const char kMkdir[] = "A call to mkdir was unable to create the desired directory";
  static const char kExists[] = "File exists";
  const char *at = memmem(text, length, kMkdir, sizeof(kMkdir) - 1);
  if (!at) return false;
  size_t rest = length - (size_t)(at - text);
  return memmem(at, rest, kExists, sizeof(kExists) - 1) != NULL;
}
