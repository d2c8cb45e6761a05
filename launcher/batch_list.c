#include "launcher/batch_list.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "launcher/inputs.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/stablehlo/stablehlo.h"

static bool is_directory(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool hl_batch_wanted(const hl_launch_options_t *o) {
  return o->program_count > 1 || o->programs_file || o->split_input_file ||
         (o->program && is_directory(o->program));
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

typedef struct paths {
  char **v;
  int n, cap;
} paths_t;

static hl_status_t paths_push(paths_t *p, char *owned) {
  if (!owned) return HL_OOM();
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 16;
    char **grown = hl_realloc(p->v, sizeof(char *) * (size_t)cap);
    if (!grown) {
      hl_free(owned);
      return HL_OOM();
    }
    p->v = grown;
    p->cap = cap;
  }
  p->v[p->n++] = owned;
  return NULL;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// A directory's program files, sorted by name (data and notes left out).
static hl_status_t add_directory(const char *dir, paths_t *out) {
  static const char *const kNotPrograms[] = {".md", ".txt", ".npy", ".json", ".py"};
  DIR *d = opendir(dir);
  if (!d) return HL_INVALID("cannot read the directory %s: %s", dir, strerror(errno));
  paths_t names = {0};
  hl_status_t st = NULL;
  struct dirent *e;
  while (!st && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    bool skip = false;
    for (size_t i = 0; i < sizeof(kNotPrograms) / sizeof(kNotPrograms[0]); i++)
      skip = skip || ends_with(e->d_name, kNotPrograms[i]);
    if (skip) continue;
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_strbuf_appendf(&sb, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", e->d_name);
    if (!sb.failed && !is_directory(hl_strbuf_cstr(&sb))) {
      st = paths_push(&names, hl_strdup(hl_strbuf_cstr(&sb)));
    }
    hl_strbuf_deinit(&sb);
  }
  closedir(d);
  if (!st) qsort(names.v, (size_t)names.n, sizeof(char *), compare_names);
  for (int i = 0; i < names.n; i++) {
    if (!st)
      st = paths_push(out, names.v[i]);
    else
      hl_free(names.v[i]);
  }
  hl_free(names.v);
  if (!st && names.n == 0) st = HL_INVALID("the directory %s holds no program files", dir);
  return st;
}

static hl_status_t add_path(const char *path, paths_t *out) {
  if (is_directory(path)) return add_directory(path, out);
  return paths_push(out, hl_strdup(path));
}

static hl_status_t add_list_file(const char *list, paths_t *out) {
  FILE *f = fopen(list, "r");
  if (!f) return HL_INVALID("--programs: cannot read %s: %s", list, strerror(errno));
  char line[4096];
  hl_status_t st = NULL;
  int number = 0;
  while (!st && fgets(line, sizeof(line), f)) {
    number++;
    size_t n = strlen(line);
    if (n == sizeof(line) - 1 && line[n - 1] != '\n') {
      st = HL_INVALID("--programs %s:%d: the line is longer than %zu bytes", list, number,
                      sizeof(line) - 2);
      break;
    }
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) line[--n] = '\0';
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '#') continue;
    st = add_path(p, out);
  }
  fclose(f);
  return st;
}

static char *read_whole(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = hl_malloc(cap + 1);
  while (buf) {
    if (len == cap) {
      char *nb = hl_realloc(buf, cap * 2 + 1);
      if (!nb) {
        hl_free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  fclose(f);
  if (buf) buf[len] = '\0';
  *out_size = len;
  return buf;
}

// A case of only blank lines and comments is an empty module: nothing to run.
static bool is_empty_case(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') i++;
    } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
      i++;
    } else {
      return false;
    }
  }
  return true;
}

static hl_status_t push_entry(hl_batch_t *b, int *cap, hl_batch_entry_t e) {
  if (!e.path || !e.label) {
    hl_free(e.path);
    hl_free(e.label);
    return HL_OOM();
  }
  if (b->count == *cap) {
    int grown_cap = *cap ? *cap * 2 : 16;
    hl_batch_entry_t *grown = hl_realloc(b->entries, sizeof(*grown) * (size_t)grown_cap);
    if (!grown) {
      hl_free(e.path);
      hl_free(e.label);
      return HL_OOM();
    }
    b->entries = grown;
    *cap = grown_cap;
  }
  b->entries[b->count++] = e;
  return NULL;
}

static char *label_of_case(const char *path, int line) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sb, "%s:%d", path, line);
  char *s = sb.failed ? NULL : hl_strdup(hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return s;
}

static hl_status_t add_cases(hl_batch_t *b, int *cap, const char *path) {
  size_t size = 0;
  char *text = read_whole(path, &size);
  // A file that cannot be read or split is one entry, which fails when loaded.
  hl_batch_entry_t whole = {hl_strdup(path), hl_strdup(path), -1, 0, 0, 0, false};
  if (!text) return push_entry(b, cap, whole);
  char **grown = hl_realloc(b->texts, sizeof(char *) * (size_t)(b->text_count + 1));
  if (!grown) {
    hl_free(text);
    hl_free(whole.path);
    hl_free(whole.label);
    return HL_OOM();
  }
  b->texts = grown;
  int index = b->text_count++;
  b->texts[index] = text;
  hl_mlir_case_t *cases = NULL;
  int count = 0;
  hl_status_t st = hl_stablehlo_split_cases(text, size, &cases, &count);
  if (st) {
    hl_status_free(st);
    return push_entry(b, cap, whole);
  }
  hl_free(whole.path);
  hl_free(whole.label);
  for (int k = 0; !st && k < count; k++) {
    hl_batch_entry_t e = {hl_strdup(path), label_of_case(path, cases[k].first_line), index,
                          cases[k].offset, cases[k].length, cases[k].first_line,
                          is_empty_case(text + cases[k].offset, cases[k].length)};
    st = push_entry(b, cap, e);
  }
  hl_free(cases);
  return st;
}

hl_status_t hl_batch_build(const hl_launch_options_t *o, hl_batch_t *out) {
  memset(out, 0, sizeof(*out));
  paths_t paths = {0};
  hl_status_t st = NULL;
  for (int i = 0; !st && i < o->program_count; i++) st = add_path(o->programs[i], &paths);
  if (!st && o->programs_file) st = add_list_file(o->programs_file, &paths);
  if (!st && paths.n == 0) st = HL_INVALID("no programs to run");
  int cap = 0;
  for (int i = 0; !st && i < paths.n; i++) {
    if (o->split_input_file)
      st = add_cases(out, &cap, paths.v[i]);
    else
      st = push_entry(out, &cap,
                      (hl_batch_entry_t){hl_strdup(paths.v[i]), hl_strdup(paths.v[i]), -1, 0, 0, 0,
                                         false});
  }
  for (int i = 0; i < paths.n; i++) hl_free(paths.v[i]);
  hl_free(paths.v);
  if (st) hl_batch_deinit(out);
  return st;
}

void hl_batch_deinit(hl_batch_t *b) {
  for (int i = 0; i < b->count; i++) {
    hl_free(b->entries[i].path);
    hl_free(b->entries[i].label);
  }
  hl_free(b->entries);
  for (int i = 0; i < b->text_count; i++) hl_free(b->texts[i]);
  hl_free(b->texts);
  memset(b, 0, sizeof(*b));
}

const char *hl_batch_args_dir(const hl_launch_options_t *o, const hl_batch_entry_t *e, char *buf,
                              size_t cap) {
  if (!o->args_dir) return NULL;
  const char *slash = strrchr(e->label, '/');
  snprintf(buf, cap, "%s/%s", o->args_dir, slash ? slash + 1 : e->label);
  struct stat st;
  return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? buf : o->args_dir;
}

static hl_status_t load_entry(const hl_batch_t *b, const hl_batch_entry_t *e,
                              const hl_launch_options_t *o, hl_program_t *out) {
  hl_program_load_options_t lo = {o->max_inflated_bytes, true};
  if (e->text_index < 0) return hl_program_load_file_with(e->path, &lo, out);
  // The case after first_line - 1 newlines keeps the file's line numbers.
  size_t pad = (size_t)(e->first_line - 1);
  char *padded = hl_malloc(pad + e->length + 1);
  if (!padded) return HL_OOM();
  memset(padded, '\n', pad);
  memcpy(padded + pad, b->texts[e->text_index] + e->offset, e->length);
  padded[pad + e->length] = '\0';
  hl_status_t st = hl_program_load_bytes_with((const uint8_t *)padded, pad + e->length, e->path,
                                              &lo, out);
  hl_free(padded);
  return st;
}

hl_status_t hl_batch_load(const hl_batch_t *b, int index, const hl_launch_options_t *o,
                          hl_program_t *out) {
  const hl_batch_entry_t *e = &b->entries[index];
  HL_RETURN_IF_ERROR(load_entry(b, e, o, out));
  if (!out->dynamic_text) return NULL;
  // Dynamic shapes: refined here, from the entry's own inputs, so the
  // launcher's grid pre-scan and every rank see the same module.
  hl_status_t st = hl_inputs_refine_program(o, out, 0, 0);
  if (st) hl_program_deinit(out);
  return st;
}
