#include "launcher/inputs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/base/strbuf.h"

//===----------------------------------------------------------------------===//
// Random arguments: splitmix64, as documented in --help, so that a Python
// oracle can regenerate them.
//===----------------------------------------------------------------------===//

typedef struct splitmix64 {
  uint64_t state;
} splitmix64_t;

static uint64_t splitmix64_next(splitmix64_t *g) {
  uint64_t z = (g->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double uniform_pm1(splitmix64_t *g) {
  return 2.0 * ((double)(splitmix64_next(g) >> 11) * 0x1p-53) - 1.0;
}

static hl_status_t fill_random(hl_literal_t *lit, splitmix64_t *g) {
  const hl_shape_t *s = &lit->shape;
  if (s->dtype == HL_TUPLE) {
    for (int i = 0; i < s->tuple_count; i++) HL_RETURN_IF_ERROR(fill_random(lit->elements[i], g));
    return NULL;
  }
  if (!hl_shape_is_array(s)) return NULL;  // token: no data
  int64_t n = hl_shape_element_count(s);
  hl_dtype_t t = s->dtype;
  switch (hl_dtype_kind(t)) {
    case HL_KIND_PRED:
      for (int64_t i = 0; i < n; i++) ((uint8_t *)lit->data)[i] = (uint8_t)(splitmix64_next(g) >> 63);
      return NULL;
    case HL_KIND_SIGNED:
    case HL_KIND_UNSIGNED: {
      int bits = hl_dtype_bit_width(t);
      int64_t lo = 0, hi = 10;
      if (hl_dtype_kind(t) == HL_KIND_SIGNED) {
        lo = -10;
        if (bits < 8) {
          int64_t half = (int64_t)1 << (bits - 1);
          if (lo < -half) lo = -half;
          if (hi > half - 1) hi = half - 1;
        }
      } else if (bits < 8 && hi > ((int64_t)1 << bits) - 1) {
        hi = ((int64_t)1 << bits) - 1;
      }
      uint64_t span = (uint64_t)(hi - lo + 1);
      for (int64_t i = 0; i < n; i++)
        hl_literal_set_f64(lit, i, (double)(lo + (int64_t)(splitmix64_next(g) % span)));
      return NULL;
    }
    case HL_KIND_FLOAT:
      if (t == HL_F8E8M0FNU) {  // unsigned powers of two without zero: 2^-3 .. 2^3
        for (int64_t i = 0; i < n; i++)
          hl_literal_set_f64(lit, i, ldexp(1.0, (int)(splitmix64_next(g) % 7) - 3));
        return NULL;
      }
      // The f8 / f4 types round the value to nearest even (runtime/base/minifloat.h).
      for (int64_t i = 0; i < n; i++) hl_literal_set_f64(lit, i, uniform_pm1(g));
      return NULL;
    case HL_KIND_COMPLEX:
      for (int64_t i = 0; i < 2 * n; i++) {
        double v = uniform_pm1(g);
        if (t == HL_C64)
          ((float *)lit->data)[i] = (float)v;
        else
          ((double *)lit->data)[i] = v;
      }
      return NULL;
    default:
      return HL_UNIMPL("cannot make a random %s argument", hl_dtype_name(t));
  }
}

hl_status_t hl_inputs_random(const hl_shape_t *shape, uint64_t seed, int64_t parameter,
                             hl_literal_t **out) {
  *out = NULL;
  splitmix64_t g = {seed + (uint64_t)(parameter + 1) * 0xD1B54A32D192ED03ull};
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(shape, &lit));
  hl_status_t st = fill_random(lit, &g);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  *out = lit;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

// DIR/replica<r>_partition<p>/arg<i>.npy, or DIR/arg<i>.npy when the
// process has no subdirectory (the same files for every process).
static char *args_dir_path(const char *dir, int64_t replica, int64_t partition, int index) {
  hl_strbuf_t sub, sb;
  hl_strbuf_init(&sub);
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sub, "%s/replica%lld_partition%lld", dir, (long long)replica,
                    (long long)partition);
  bool per_process = !sub.failed && is_dir(hl_strbuf_cstr(&sub));
  hl_strbuf_appendf(&sb, "%s/arg%d.npy", per_process ? hl_strbuf_cstr(&sub) : dir, index);
  hl_strbuf_deinit(&sub);
  return hl_strbuf_take(&sb);
}

hl_status_t hl_inputs_add_file(hl_inputs_t *in, const char *path) {
  char **grown = hl_realloc(in->files, sizeof(char *) * (size_t)(in->file_count + 1));
  if (!grown) return HL_OOM();
  in->files = grown;
  in->files[in->file_count] = hl_strdup(path);
  if (!in->files[in->file_count]) return HL_OOM();
  in->file_count++;
  return NULL;
}

static hl_status_t read_parameter_file(const char *path, const hl_shape_t *shape, int index,
                                       hl_inputs_t *in, hl_literal_t **out) {
  char what[64];
  snprintf(what, sizeof(what), "parameter %d", index);
  if (!hl_shape_is_array(shape))
    return HL_UNIMPL("%s: parameter %d has the shape %s; .npy inputs for tuple or token "
                     "parameters are not supported yet (use --seed or --zeros)",
                     path, index, hl_shape_debug_string(shape));
  HL_RETURN_IF_ERROR(hl_inputs_add_file(in, path));
  return hl_npy_read_file(path, shape, what, out);
}

static hl_status_t check_count(const char *what, int given, const hl_computation_t *entry) {
  if (given == entry->parameter_count) return NULL;
  return HL_INVALID("%s %d %s, but the entry computation '%s' has %d parameter%s", what, given,
                    given == 1 ? "argument" : "arguments", entry->name, entry->parameter_count,
                    entry->parameter_count == 1 ? "" : "s");
}

static hl_status_t build(const hl_launch_options_t *o, const hl_program_t *program,
                         int64_t replica, int64_t partition, hl_inputs_t *in) {
  const hl_computation_t *entry = program->module->entry;
  if (!entry) return HL_INVALID("the program has no entry computation");
  int n = entry->parameter_count;
  in->args = hl_calloc((size_t)(n ? n : 1), sizeof(hl_literal_t *));
  if (!in->args) return HL_OOM();
  in->count = n;
  hl_input_source_t source = o->input_source;
  if (source == HL_INPUT_DEFAULT)
    source = program->argument_count > 0 ? HL_INPUT_DEFAULT : HL_INPUT_RANDOM;

  switch (source) {
    case HL_INPUT_ARGS:
      HL_RETURN_IF_ERROR(check_count("--args gives", o->arg_file_count, entry));
      for (int i = 0; i < n; i++)
        HL_RETURN_IF_ERROR(read_parameter_file(o->arg_files[i], &entry->parameters[i]->shape, i,
                                               in, &in->args[i]));
      return NULL;
    case HL_INPUT_ARGS_DIR: {
      if (!is_dir(o->args_dir))
        return HL_INVALID("--args-dir %s is not a directory", o->args_dir);
      for (int i = 0; i <= n; i++) {
        char *path = args_dir_path(o->args_dir, replica, partition, i);
        if (!path) return HL_OOM();
        hl_status_t st = NULL;
        if (i == n) {
          // A file past the last parameter means the inputs were made for
          // another program.
          if (exists(path))
            st = HL_INVALID("%s exists, but the entry computation '%s' has only %d parameter%s",
                            path, entry->name, n, n == 1 ? "" : "s");
        } else {
          st = read_parameter_file(path, &entry->parameters[i]->shape, i, in, &in->args[i]);
        }
        hl_free(path);
        HL_RETURN_IF_ERROR(st);
      }
      return NULL;
    }
    case HL_INPUT_DEFAULT:  // the HloSnapshot's arguments
      HL_RETURN_IF_ERROR(check_count("the HloSnapshot has", program->argument_count, entry));
      for (int i = 0; i < n; i++) {
        const hl_shape_t *want = &entry->parameters[i]->shape;
        hl_literal_t *arg = program->arguments[i];
        if (!hl_shape_equal(&arg->shape, want)) {
          char got[256];
          snprintf(got, sizeof(got), "%s", hl_shape_debug_string(&arg->shape));
          return HL_INVALID("HloSnapshot argument %d is %s, but parameter %d is %s", i, got, i,
                            hl_shape_debug_string(want));
        }
        in->args[i] = hl_literal_retain(arg);
      }
      return NULL;
    case HL_INPUT_RANDOM:
      for (int i = 0; i < n; i++)
        HL_RETURN_IF_ERROR_CTX(
            hl_inputs_random(&entry->parameters[i]->shape, o->seed, i, &in->args[i]),
            "parameter %d", i);
      return NULL;
    case HL_INPUT_ZEROS:
      for (int i = 0; i < n; i++)
        HL_RETURN_IF_ERROR(hl_literal_create(&entry->parameters[i]->shape, &in->args[i]));
      return NULL;
    case HL_INPUT_GLOBAL:  // needs the grid: hl_global_args_build (global_io.h)
      return HL_INTERNAL_ERROR("--global-args inputs are built by hl_global_args_build");
  }
  return HL_INTERNAL_ERROR("unknown input source %d", (int)source);
}

hl_status_t hl_inputs_build(const hl_launch_options_t *o, const hl_program_t *program,
                            int64_t replica, int64_t partition, hl_inputs_t *out) {
  memset(out, 0, sizeof(*out));
  hl_status_t st = build(o, program, replica, partition, out);
  if (st) hl_inputs_deinit(out);
  return st;
}

void hl_inputs_deinit(hl_inputs_t *in) {
  for (int i = 0; i < in->count && in->args; i++) hl_literal_release(in->args[i]);
  hl_free(in->args);
  for (int i = 0; i < in->file_count; i++) hl_free(in->files[i]);
  hl_free(in->files);
  memset(in, 0, sizeof(*in));
}

// Parameter k's file, of the parameter's element type (so untyped files of
// types NumPy lacks, bf16 say, read too) and the dimensions the file has.
static hl_status_t read_refining_file(const char *path, const hl_shape_t *declared, int k,
                                      hl_literal_t **out) {
  if (!hl_shape_is_array(declared)) return read_parameter_file(path, declared, k, NULL, out);
  uint8_t head[1 << 16];
  FILE *f = fopen(path, "rb");
  if (!f) return HL_ERROR(HL_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  size_t got = fread(head, 1, sizeof(head), f);
  fclose(f);
  hl_npy_header_t h;
  hl_status_t st = hl_npy_parse_header(head, got, &h);
  if (st) return hl_status_annotate(st, "%s", path);
  hl_shape_t want = hl_shape_array(declared->dtype, h.rank, h.dims);
  char what[64];
  snprintf(what, sizeof(what), "parameter %d", k);
  return hl_npy_read_file(path, &want, what, out);
}

// A program with dynamic shapes: the arguments with the dimensions their
// files have (they refine the program's shapes; hl_program_refine).
hl_status_t hl_inputs_read_for_refinement(const hl_launch_options_t *o,
                                          const hl_program_t *program, int64_t replica,
                                          int64_t partition, hl_inputs_t *out) {
  memset(out, 0, sizeof(*out));
  char **files = NULL;
  int n = 0;
  switch (o->input_source) {
    case HL_INPUT_ARGS: files = o->arg_files; n = o->arg_file_count; break;
    case HL_INPUT_GLOBAL: files = o->global_arg_files; n = o->global_arg_file_count; break;
    case HL_INPUT_ARGS_DIR:
      if (!is_dir(o->args_dir)) return HL_INVALID("--args-dir %s is not a directory", o->args_dir);
      for (;; n++) {
        char *path = args_dir_path(o->args_dir, replica, partition, n);
        if (!path) return HL_OOM();
        bool found = exists(path);
        hl_free(path);
        if (!found) break;
      }
      break;
    default:
      return HL_INVALID("the program has dynamic shapes ('?' dimensions), which are refined from "
                        "the shapes of its arguments: give them as .npy files (--args, --args-dir "
                        "or --global-args), not --seed / --zeros");
  }
  hl_shape_t *types = NULL;
  int ntypes = 0;
  HL_RETURN_IF_ERROR(hl_program_dynamic_entry_types(program, &types, &ntypes));
  hl_status_t st = n == ntypes ? NULL
                               : HL_INVALID("%d arguments given, but @main has %d parameter%s", n,
                                            ntypes, ntypes == 1 ? "" : "s");
  out->args = st ? NULL : hl_calloc((size_t)n + 1, sizeof(hl_literal_t *));
  if (!st && !out->args) st = HL_OOM();
  if (!st) out->count = n;
  for (int i = 0; !st && i < n; i++) {
    char *path = files ? hl_strdup(files[i]) : args_dir_path(o->args_dir, replica, partition, i);
    if (!path) st = HL_OOM();
    if (!st) st = read_refining_file(path, &types[i], i, &out->args[i]);
    hl_free(path);
  }
  for (int i = 0; i < ntypes; i++) hl_shape_deinit(&types[i]);
  hl_free(types);
  if (st) hl_inputs_deinit(out);
  return st;
}

hl_status_t hl_inputs_refine_program(const hl_launch_options_t *o, hl_program_t *program,
                                     int64_t replica, int64_t partition) {
  if (!program->dynamic_text) return NULL;
  hl_inputs_t args;
  HL_RETURN_IF_ERROR(hl_inputs_read_for_refinement(o, program, replica, partition, &args));
  hl_status_t st = hl_program_refine(program, args.args, args.count);
  hl_inputs_deinit(&args);
  return st;
}
