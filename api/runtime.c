// The embedding API (api/hlo_runtime.h): programs from the program loader,
// runners over runner/ (the set-up sequence and runs that hlo-launch's
// ranks use too: grid, partitioning, checks, collectives, channels, debug
// checks, executable), and hlo_buffer_t marshalling. Every step that others
// depend on ends with an agreement (collectives/agree.h), so a failure on
// one process is an error on all of them and none waits in a collective
// the others never reach.
#include "api/hlo_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/buffers.h"
#include "runner/runner.h"
#include "runtime/base/alloc.h"
#include "runtime/loader/program_loader.h"
#include "runtime/verifier/verifier.h"

#ifndef HL_VERSION
#define HL_VERSION "unknown"
#endif

// hlo_status_t is the runtime's status under another name.
static hlo_status_t to_api(hl_status_t st) { return (hlo_status_t)st; }
static hl_status_t from_api(hlo_status_t st) { return (hl_status_t)st; }

HLO_API hlo_status_code_t hlo_status_code(hlo_status_t status) {
  return (hlo_status_code_t)hl_status_code(from_api(status));
}
HLO_API const char *hlo_status_message(hlo_status_t status) {
  return hl_status_message(from_api(status));
}
HLO_API void hlo_status_free(hlo_status_t status) { hl_status_free(from_api(status)); }
HLO_API const char *hlo_version(void) { return HL_VERSION; }

HLO_API int32_t hlo_dtype_size(hlo_dtype_t dtype) {
  return hl_api_dtype_supported((hl_dtype_t)dtype) ? (int32_t)hl_dtype_size((hl_dtype_t)dtype)
                                                    : 0;
}

HLO_API void hlo_buffer_free(hlo_buffer_t *buffer) {
  if (!buffer) return;
  free(buffer->data);
  free((void *)buffer->dims);
  memset(buffer, 0, sizeof(*buffer));
}

//--- Programs -------------------------------------------------------------

// The program keeps the bytes it was loaded from: a runner that forms
// fusions loads its own module from them (the program may serve several
// runners at once and its module is never rewritten).
struct hlo_program {
  hl_program_t program;
  uint8_t *bytes;  // the file's or the caller's bytes, NUL-terminated
  size_t size;
  char *name;      // the path, or the memory name, for messages
};

static void program_destroy(hlo_program_t *p) {
  hl_program_deinit(&p->program);
  hl_free(p->bytes);
  hl_free(p->name);
  hl_free(p);
}

// Loads from a file (data NULL) or from memory, then verifies.
static hlo_status_t load(const char *path, const void *data, size_t size,
                         hlo_program_t **out_program) {
  hlo_program_t *p = hl_calloc(1, sizeof(*p));
  if (!p) return to_api(HL_OOM());
  hl_status_t st = NULL;
  p->name = hl_strdup(path);
  if (!p->name) st = HL_OOM();
  if (!st && data) {
    p->bytes = hl_malloc(size + 1);
    if (!p->bytes) st = HL_OOM();
    if (!st) {
      memcpy(p->bytes, data, size);
      p->bytes[size] = 0;
      p->size = size;
    }
  } else if (!st) {
    st = hl_program_read_file(path, &p->bytes, &p->size);
  }
  if (!st) st = hl_program_load_bytes(p->bytes, p->size, p->name, &p->program);
  if (!st) st = hl_verify_module(p->program.module);
  if (st) {
    program_destroy(p);
    return to_api(st);
  }
  *out_program = p;
  return NULL;
}

HLO_API hlo_status_t hlo_program_load(const char *path, hlo_program_t **out_program) {
  if (!out_program) return to_api(HL_INVALID("hlo_program_load: out_program is NULL"));
  *out_program = NULL;
  if (!path) return to_api(HL_INVALID("hlo_program_load: path is NULL"));
  return load(path, NULL, 0, out_program);
}

HLO_API hlo_status_t hlo_program_load_memory(const void *data, size_t size, const char *name,
                                             hlo_program_t **out_program) {
  if (!out_program) return to_api(HL_INVALID("hlo_program_load_memory: out_program is NULL"));
  *out_program = NULL;
  if (!data) return to_api(HL_INVALID("hlo_program_load_memory: data is NULL"));
  return load(name ? name : "(memory)", data, size, out_program);
}

HLO_API void hlo_program_free(hlo_program_t *program) {
  if (!program) return;
  program_destroy(program);
}

//--- Runners --------------------------------------------------------------

// An hlo_runner_t is the runner of runner/ (the set-up sequence and runs
// hlo-launch's ranks use too) plus the marshalling of hlo_buffer_t.
struct hlo_runner {
  hl_runner_t *runner;
  bool profile, trace;
  const hl_shape_t **params;  // the entry's parameter shapes
  int param_count;
  const hl_shape_t **outs;    // its result shapes (tuple elements, or the root)
  int out_count;
  bool tuple_result;
  // Per run: one literal header per argument (pointing at the caller's
  // data, or at scratch for a column-major argument) and the scratch.
  hl_literal_t *arg_headers;
  hl_literal_t **arg_ptrs;
  void **scratch;
  size_t *scratch_bytes;
};

// The struct as this library knows it: the smallest a caller may pass is
// this first version with struct_size (no field has been added since).
enum { kOptionsMinSize = sizeof(hlo_runner_options_t) };

static void options_defaults(hlo_runner_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->collectives = HLO_COLLECTIVES_AUTO;
  o->stuck_seconds = 30.0;
}

HLO_API void hlo_runner_options_initialize(hlo_runner_options_t *o, size_t struct_size) {
  if (!o || struct_size < sizeof(size_t)) return;
  hlo_runner_options_t d;
  options_defaults(&d);
  // A caller's newer, larger struct: its fields beyond ours are zero (what
  // a later version's defaults must mean, the way hlo_runner_create reads
  // them); an older, smaller one gets the fields it has.
  if (struct_size > sizeof(d)) memset((char *)o + sizeof(d), 0, struct_size - sizeof(d));
  memcpy(o, &d, struct_size < sizeof(d) ? struct_size : sizeof(d));
  o->struct_size = struct_size;
}

// The caller's options over the defaults, by its struct_size.
static hl_status_t read_options(const hlo_runner_options_t *given, hlo_runner_options_t *o) {
  options_defaults(o);
  if (!given) return NULL;
  size_t n = given->struct_size;
  if (n < kOptionsMinSize)
    return HL_INVALID("hlo_runner_create: options.struct_size is %zu, not the size of an "
                      "hlo_runner_options_t (%zu): initialize the options with "
                      "hlo_runner_options_init",
                      n, (size_t)kOptionsMinSize);
  if (n > sizeof(*o)) {
    // Fields of a newer header: only their defaults (zero) can be honored.
    const unsigned char *extra = (const unsigned char *)given + sizeof(*o);
    for (size_t i = 0; i < n - sizeof(*o); i++)
      if (extra[i])
        return HL_UNIMPL("hlo_runner_create: the options set fields of a newer hlo_runtime.h "
                         "(struct_size %zu) than this library's %s (%zu bytes)",
                         n, HL_VERSION, sizeof(*o));
  }
  memcpy(o, given, n < sizeof(*o) ? n : sizeof(*o));
  o->struct_size = sizeof(*o);
  return NULL;
}

// The entry's parameter and result shapes, each an array hlo_buffer_t can
// carry.
static hl_status_t describe_entry(hlo_runner_t *r) {
  const hl_computation_t *e = hl_runner_module(r->runner)->entry;
  r->param_count = e->parameter_count;
  r->params = hl_calloc((size_t)(r->param_count ? r->param_count : 1), sizeof(*r->params));
  if (!r->params) return HL_OOM();
  for (int i = 0; i < r->param_count; i++) {
    const hl_shape_t *s = &e->parameters[i]->shape;
    if (!hl_shape_is_array(s) || !hl_api_dtype_supported(s->dtype))
      return HL_UNIMPL("parameter %d of the entry is %s, which hlo_buffer_t does not carry", i,
                       hl_shape_is_array(s) ? hl_dtype_name(s->dtype) : "not an array");
    if (s->dynamic_mask)
      return HL_UNIMPL("parameter %d of the entry has a dynamic dimension", i);
    r->params[i] = s;
  }
  const hl_shape_t *root = &e->root->shape;
  r->tuple_result = hl_shape_is_tuple(root);
  r->out_count = r->tuple_result ? root->tuple_count : 1;
  r->outs = hl_calloc((size_t)(r->out_count ? r->out_count : 1), sizeof(*r->outs));
  if (!r->outs) return HL_OOM();
  for (int i = 0; i < r->out_count; i++) {
    const hl_shape_t *s = r->tuple_result ? &root->tuple[i] : root;
    if (!hl_shape_is_array(s) || !hl_api_dtype_supported(s->dtype))
      return HL_UNIMPL("result %d of the entry is %s, which hlo_buffer_t does not carry", i,
                       hl_shape_is_array(s) ? hl_dtype_name(s->dtype) : "not an array");
    if (s->dynamic_mask) return HL_UNIMPL("result %d of the entry has a dynamic dimension", i);
    r->outs[i] = s;
  }
  size_t n = (size_t)(r->param_count ? r->param_count : 1);
  r->arg_headers = hl_calloc(n, sizeof(*r->arg_headers));
  r->arg_ptrs = hl_calloc(n, sizeof(*r->arg_ptrs));
  r->scratch = hl_calloc(n, sizeof(*r->scratch));
  r->scratch_bytes = hl_calloc(n, sizeof(*r->scratch_bytes));
  if (!r->arg_headers || !r->arg_ptrs || !r->scratch || !r->scratch_bytes) return HL_OOM();
  return NULL;
}

HLO_API void hlo_runner_free(hlo_runner_t *r) {
  if (!r) return;
  hl_runner_free(r->runner, false);
  for (int i = 0; r->scratch && i < r->param_count; i++) hl_free(r->scratch[i]);
  hl_free(r->scratch);
  hl_free(r->scratch_bytes);
  hl_free(r->arg_headers);
  hl_free(r->arg_ptrs);
  hl_free(r->params);
  hl_free(r->outs);
  hl_free(r);
}

HLO_API hlo_status_t hlo_runner_create(const hlo_program_t *program, MPI_Comm comm,
                                       const hlo_runner_options_t *options,
                                       hlo_runner_t **out_runner) {
  if (!out_runner) return to_api(HL_INVALID("hlo_runner_create: out_runner is NULL"));
  *out_runner = NULL;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return to_api(HL_INVALID("hlo_runner_create: MPI is %s",
                             finalized ? "finalized" : "not initialized (call MPI_Init first)"));
  if (comm == MPI_COMM_NULL) return to_api(HL_INVALID("hlo_runner_create: comm is MPI_COMM_NULL"));
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter)  // every process of it gets here and says the same
    return to_api(HL_INVALID("hlo_runner_create: comm is an intercommunicator; pass an "
                             "intracommunicator (MPI_Intercomm_merge)"));
  hlo_runner_options_t opts;
  hl_status_t local = read_options(options, &opts);  // agreed on below
  const hlo_runner_options_t *o = &opts;
  static const hl_grid_words_t words = {
      "the communicator size", "hlo_runner_options_t's replicas and partitions"};
  // The fusion pass rewrites the module it runs, so the runner gets its own,
  // loaded from the program's bytes by the same loader (as hlo-launch loads
  // its file); the NaN / Inf checks name every value and run unfused.
  bool fuse = !o->no_fusion_pass && !o->check_nans && !o->check_infs;
  hl_runner_options_t ro = {
      .replicas = o->replicas,
      .partitions = o->partitions,
      .grid_words = &words,
      .global_program = o->global_program != 0,
      // Judged, as in hlo-launch, by the program's file name (or
      // hlo_program_load_memory's name): processes of an MPMD application
      // with different programs skip it.
      .collective_check = o->no_collective_check ? HL_RUNNER_CHECK_NONE : HL_RUNNER_CHECK_SAME_NAME,
      .fusion_pass = fuse,
      .threads = o->threads,
      .collectives = (hl_collectives_mode_t)o->collectives,
      .debug = {.label = program ? program->name : NULL,
                .hang_timeout_s = o->hang_timeout_seconds,
                .debug_dir = o->debug_dir,
                .trace_file = o->trace_path,
                .check_nans = o->check_nans != 0,
                .check_infs = o->check_infs != 0},
      .profile = o->profile != 0,
      .profile_first_apart = o->profile_first_apart != 0,
      .abort_note =
          "hlo_runtime: the other processes wait in a collective that needs this one, and MPI "
          "cannot cancel it: ending the job (MPI_Abort; hlo_runner_options_t.stuck_seconds)",
      .stuck_seconds = o->stuck_seconds,
  };
  if (local) {  // the defaults, until the error is agreed on
    hl_runner_options_t plain = {.grid_words = &words, .stuck_seconds = -1};
    ro = plain;
  }
  hlo_runner_t *r = hl_calloc(1, sizeof(*r));
  // A process without memory for its runner cannot take part in the
  // agreements: the one error that is not collective.
  if (!r) {
    hl_status_free(local);
    return to_api(HL_OOM());
  }
  r->profile = ro.profile;
  r->trace = ro.debug.trace_file != NULL;
  // A NULL program is agreed on by the runner's first step, so the other
  // processes learn it too.
  hl_module_t *module = program ? program->program.module : NULL;
  hl_program_t own = {0};
  if (!local && fuse && program) {
    local = hl_program_load_bytes(program->bytes, program->size, program->name, &own);
    if (!local) {
      module = own.module;  // the runner's from here on (hl_runner_create frees it)
      own.module = NULL;
    }
    hl_program_deinit(&own);
  }
  bool take = module && (!program || module != program->program.module);
  // The options are checked by the runner's first step, agreed on; so is
  // a failure above (after the runner exists, so every process learns it).
  hl_status_t st = hl_runner_create(module, take, comm, &ro, &r->runner);
  if (!st) st = hl_runner_agree(r->runner, local, -1);
  else hl_status_free(local);
  if (!st) st = hl_runner_agree(r->runner, describe_entry(r), -1);
  if (!st) st = hl_runner_start(r->runner);
  if (st) {
    hlo_runner_free(r);
    return to_api(st);
  }
  *out_runner = r;
  return NULL;
}

HLO_API hlo_status_t hlo_runner_create_f(const hlo_program_t *program, MPI_Fint comm,
                                         const hlo_runner_options_t *options,
                                         hlo_runner_t **out_runner) {
  return hlo_runner_create(program, MPI_Comm_f2c(comm), options, out_runner);
}

HLO_API int32_t hlo_runner_arg_count(const hlo_runner_t *r) { return r ? r->param_count : 0; }
HLO_API int32_t hlo_runner_result_count(const hlo_runner_t *r) { return r ? r->out_count : 0; }

static hlo_status_t shape_of(const hl_shape_t *const *shapes, int count, int32_t index,
                             const char *what, hlo_dtype_t *dtype, int32_t *rank,
                             int64_t *dims) {
  if (index < 0 || index >= count)
    return to_api(HL_INVALID("%s %d out of range (the entry has %d)", what, (int)index, count));
  const hl_shape_t *s = shapes[index];
  if (dtype) *dtype = (hlo_dtype_t)s->dtype;
  if (rank) *rank = s->rank;
  if (dims) memcpy(dims, s->dims, (size_t)s->rank * sizeof(int64_t));
  return NULL;
}

HLO_API hlo_status_t hlo_runner_arg_shape(const hlo_runner_t *r, int32_t index,
                                          hlo_dtype_t *dtype, int32_t *rank, int64_t *dims) {
  if (!r) return to_api(HL_INVALID("hlo_runner_arg_shape: runner is NULL"));
  return shape_of(r->params, r->param_count, index, "argument", dtype, rank, dims);
}

HLO_API hlo_status_t hlo_runner_result_shape(const hlo_runner_t *r, int32_t index,
                                             hlo_dtype_t *dtype, int32_t *rank,
                                             int64_t *dims) {
  if (!r) return to_api(HL_INVALID("hlo_runner_result_shape: runner is NULL"));
  return shape_of(r->outs, r->out_count, index, "result", dtype, rank, dims);
}

// This process's part of a run before anything collective: the counts and
// shapes of its buffers, the arguments' literal headers, and the results it
// is to allocate (recorded in `allocated`, so a failed run frees them).
static hl_status_t prepare_run(hlo_runner_t *r, const hlo_buffer_t *args, int32_t nargs,
                               hlo_buffer_t *results, int32_t nresults, bool *allocated) {
  if (nargs != r->param_count || (nargs > 0 && !args))
    return HL_INVALID("hlo_runner_run: %d argument%s given, the program takes %d", (int)nargs,
                      nargs == 1 ? "" : "s", r->param_count);
  if (nresults != r->out_count || (nresults > 0 && !results))
    return HL_INVALID("hlo_runner_run: %d result%s given, the program gives %d",
                      (int)nresults, nresults == 1 ? "" : "s", r->out_count);
  char what[48];
  for (int i = 0; i < nargs; i++) {
    const hl_shape_t *want = r->params[i];
    snprintf(what, sizeof(what), "argument %d", i);
    HL_RETURN_IF_ERROR(hl_api_check_buffer(&args[i], want, what));
    size_t bytes = (size_t)hl_shape_byte_size(want);
    if (bytes && !args[i].data) return HL_INVALID("argument %d: data is NULL", i);
    void *data = args[i].data;
    if (args[i].order == HLO_COLUMN_MAJOR && want->rank > 1) {
      if (r->scratch_bytes[i] < bytes) {
        hl_free(r->scratch[i]);
        r->scratch[i] = hl_malloc_aligned(bytes, 64);
        r->scratch_bytes[i] = r->scratch[i] ? bytes : 0;
        if (!r->scratch[i]) return HL_OOM();
      }
      hl_api_reorder(args[i].data, r->scratch[i], want->rank, want->dims,
                     hl_dtype_size(want->dtype), true);
      data = r->scratch[i];
    }
    hl_api_wrap(want, data, &r->arg_headers[i]);
    r->arg_ptrs[i] = &r->arg_headers[i];
  }
  for (int i = 0; i < nresults; i++) {
    const hl_shape_t *want = r->outs[i];
    hlo_buffer_t *b = &results[i];
    if (b->data) {
      snprintf(what, sizeof(what), "result %d", i);
      HL_RETURN_IF_ERROR(hl_api_check_buffer(b, want, what));
      continue;
    }
    size_t bytes = (size_t)hl_shape_byte_size(want);
    void *data = NULL;
    int64_t *dims = malloc((size_t)(want->rank ? want->rank : 1) * sizeof(int64_t));
    if (!dims || posix_memalign(&data, 64, bytes ? bytes : 1) != 0) {
      free(dims);
      return HL_OOM();
    }
    memcpy(dims, want->dims, (size_t)want->rank * sizeof(int64_t));
    hlo_order_t order = b->order == HLO_COLUMN_MAJOR ? HLO_COLUMN_MAJOR : HLO_ROW_MAJOR;
    *b = (hlo_buffer_t){(hlo_dtype_t)want->dtype, want->rank, dims, data, order};
    allocated[i] = true;
  }
  return NULL;
}

static void copy_result(const hl_literal_t *lit, hlo_buffer_t *b) {
  const hl_shape_t *s = &lit->shape;
  if (b->order == HLO_COLUMN_MAJOR && s->rank > 1)
    hl_api_reorder(lit->data, b->data, s->rank, s->dims, hl_dtype_size(s->dtype), false);
  else if (lit->byte_size)
    memcpy(b->data, lit->data, lit->byte_size);
}

HLO_API hlo_status_t hlo_runner_run(hlo_runner_t *r, const hlo_buffer_t *args, int32_t nargs,
                                    hlo_buffer_t *results, int32_t nresults) {
  // A NULL runner cannot reach the others: a local error (the caller's bug).
  if (!r) return to_api(HL_INVALID("hlo_runner_run: runner is NULL"));
  bool *allocated = hl_calloc((size_t)(nresults > 0 ? nresults : 1), sizeof(bool));
  hl_status_t st = allocated ? prepare_run(r, args, nargs, results, nresults, allocated)
                             : HL_OOM();
  st = hl_runner_agree_before_run(r->runner, st);
  hl_literal_t *out = NULL;
  if (!st) {
    // The argument headers keep a second reference during the run: the
    // executor treats them as shared and never writes into them.
    for (int i = 0; i < nargs; i++) hl_literal_retain(r->arg_ptrs[i]);
    st = hl_runner_run(r->runner, r->arg_ptrs, nargs, &out, NULL);
    for (int i = 0; i < nargs; i++) r->arg_ptrs[i]->refcount--;
  }
  if (!st) {
    for (int i = 0; i < nresults; i++)
      copy_result(r->tuple_result ? out->elements[i] : out, &results[i]);
  } else {
    for (int i = 0; allocated && i < nresults; i++)
      if (allocated[i]) hlo_buffer_free(&results[i]);
  }
  // Something that outlives the run holding an argument's header (the
  // result is released first) would point into the caller's memory.
  hl_literal_release(out);
  for (int i = 0; !st && i < nargs; i++)
    if (r->arg_ptrs[i]->refcount != 1)
      st = HL_INTERNAL_ERROR("argument %d is still referenced after the run", i);
  hl_free(allocated);
  return to_api(st);
}

HLO_API hlo_status_t hlo_runner_profile_text(hlo_runner_t *r, int32_t top, char **out_text) {
  if (!r || !out_text) return to_api(HL_INVALID("hlo_runner_profile_text: a NULL argument"));
  *out_text = NULL;
  hl_status_t st = hl_runner_agree(
      r->runner,
      r->profile ? NULL
                 : HL_INVALID("hlo_runner_profile_text: the runner does not profile "
                              "(hlo_runner_options_t.profile)"),
      -1);
  if (st) return to_api(st);
  char *all = hl_runner_profile_text(r->runner, "", top > 0 ? (int)top : 20);
  int rank = 0;
  MPI_Comm_rank(hl_runner_comm(r->runner), &rank);
  // The caller frees it with hlo_text_free (free: malloc'd here).
  size_t n = all ? strlen(all) : 0;
  char *text = malloc(n + 1);
  bool ok = text && (rank != 0 || all);
  if (text) {
    if (all) memcpy(text, all, n);
    text[n] = 0;
  }
  hl_free(all);
  st = hl_runner_agree(r->runner, ok ? NULL : HL_OOM(), -1);
  if (st) {
    free(text);
    return to_api(st);
  }
  *out_text = text;
  return NULL;
}

HLO_API hlo_status_t hlo_runner_write_trace(hlo_runner_t *r) {
  if (!r) return to_api(HL_INVALID("hlo_runner_write_trace: runner is NULL"));
  hl_status_t st = hl_runner_agree(
      r->runner,
      r->trace ? NULL
               : HL_INVALID("hlo_runner_write_trace: the runner has no trace "
                            "(hlo_runner_options_t.trace_path)"),
      -1);
  if (st) return to_api(st);
  return to_api(hl_runner_write_trace(r->runner));
}

HLO_API void hlo_text_free(char *text) { free(text); }
