#include "launcher/outputs.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"

static bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Whether `dir` can be created (mkdir -p) and written, judged without
// creating anything: the path itself, or its deepest existing ancestor, must
// be a directory this process may write into.
static hl_status_t check_output_dir(const char *dir) {
  char *path = hl_strdup(dir);
  if (!path) return HL_OOM();
  hl_status_t st = NULL;
  bool whole = true;  // `path` is still the whole of `dir`
  for (;;) {
    struct stat s;
    if (stat(path, &s) == 0) {
      if (!S_ISDIR(s.st_mode))
        st = whole ? HL_INVALID("--output-dir %s exists and is not a directory", dir)
                   : HL_INVALID("--output-dir %s cannot be created: %s is not a directory", dir,
                                path);
      else if (access(path, W_OK | X_OK) != 0)
        st = HL_INVALID("--output-dir %s: %s is not writable (%s)", dir, path, strerror(errno));
      break;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
      st = HL_INVALID("--output-dir %s: %s: %s", dir, path, strerror(errno));
      break;
    }
    // Up one component ("a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/").
    char *slash = strrchr(path, '/');
    while (slash && slash > path && slash[1] == '\0') {  // trailing slashes
      *slash = '\0';
      slash = strrchr(path, '/');
    }
    if (!slash) {
      strcpy(path, ".");
    } else if (slash == path) {
      path[1] = '\0';
    } else {
      *slash = '\0';
    }
    whole = false;
  }
  hl_free(path);
  return st;
}

hl_status_t hl_outputs_check_options(const hl_launch_options_t *o) {
  if (o->output_dir) HL_RETURN_IF_ERROR(check_output_dir(o->output_dir));
  if (!o->output_dir || !o->args_dir) return NULL;
  if (strcmp(o->output_dir, o->args_dir) == 0 || same_file(o->output_dir, o->args_dir))
    return HL_INVALID("--output-dir %s is the --args-dir; results would overwrite or mix with "
                      "the inputs, so choose another directory",
                      o->output_dir);
  return NULL;
}

// mkdir -p: every missing component of `path` is created.
static hl_status_t make_dirs(const char *path) {
  char *copy = hl_strdup(path);
  if (!copy) return HL_OOM();
  hl_status_t st = NULL;
  for (char *p = copy + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(copy, 0777) != 0 && errno != EEXIST)
      st = HL_ERROR(HL_IO_ERROR, "cannot create the directory %s: %s", copy, strerror(errno));
    else if (saved == '\0') {
      struct stat s;
      if (stat(copy, &s) != 0 || !S_ISDIR(s.st_mode))
        st = HL_ERROR(HL_IO_ERROR, "%s exists and is not a directory", copy);
    }
    *p = saved;
    if (st || saved == '\0') break;
  }
  hl_free(copy);
  return st;
}

typedef struct writer {
  const char *dir;
  const hl_inputs_t *inputs;
  int next;
} writer_t;

static hl_status_t write_leaves(writer_t *w, const hl_literal_t *lit) {
  if (lit->shape.dtype == HL_TUPLE) {
    for (int i = 0; i < lit->shape.tuple_count; i++)
      HL_RETURN_IF_ERROR(write_leaves(w, lit->elements[i]));
    return NULL;
  }
  if (lit->shape.dtype == HL_TOKEN) return NULL;  // no data; not numbered
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/result%d.npy", w->dir, w->next);
  if (n < 0 || n >= (int)sizeof(path)) return HL_INVALID("output path too long in %s", w->dir);
  for (int i = 0; i < w->inputs->file_count; i++)
    if (same_file(path, w->inputs->files[i]))
      return HL_INVALID("refusing to overwrite the input file %s with result %d (%s)",
                        w->inputs->files[i], w->next, path);
  if (!hl_shape_is_array(&lit->shape))
    return HL_UNIMPL("result %d is a %s, which cannot be written as .npy", w->next,
                     hl_shape_debug_string(&lit->shape));
  HL_RETURN_IF_ERROR(hl_npy_write_file(path, lit));
  w->next++;
  return NULL;
}

hl_status_t hl_outputs_write(const char *dir, const hl_literal_t *result, int64_t replica,
                             int64_t partition, const hl_inputs_t *inputs) {
  char sub[4096];
  int n = snprintf(sub, sizeof(sub), "%s/replica%lld_partition%lld", dir, (long long)replica,
                   (long long)partition);
  if (n < 0 || n >= (int)sizeof(sub)) return HL_INVALID("--output-dir path too long");
  HL_RETURN_IF_ERROR(make_dirs(sub));
  writer_t w = {sub, inputs, 0};
  return write_leaves(&w, result);
}

void hl_outputs_format(const hl_literal_t *result, int64_t replica, int64_t partition,
                       int64_t rank, hl_strbuf_t *out) {
  hl_strbuf_appendf(out, "== replica %lld, partition %lld (rank %lld) ==\n", (long long)replica,
                    (long long)partition, (long long)rank);
  hl_literal_print(result, out);
  if (out->length == 0 || out->data[out->length - 1] != '\n') hl_strbuf_append_char(out, '\n');
}
