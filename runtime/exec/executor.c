// The local executor: walks each computation's plan, calling the kernel of
// every instruction through the dispatch table derived from opcode.def, and
// releasing every value right after its last use.
#include "runtime/exec/executor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/alloc.h"
#include "runtime/base/code_pages.h"
#include "runtime/exec/memory_plan.h"
#include "runtime/exec/plan.h"
#include "runtime/exec/profile.h"
#include "runtime/exec/scalar_program.h"
#include "runtime/exec/elementwise_chains.h"
#include "runtime/fusion/fusion_program.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/kernels/channels.h"
#include "runtime/kernels/kernel.h"
#include "runtime/vmath/vmath.h"

//===----------------------------------------------------------------------===//
// Dispatch table: one entry per opcode, in enum order, from the op list
//===----------------------------------------------------------------------===//

static const hl_kernel_fn_t kDispatch[] = {
#define X(e, name, arity, kernel) kernel,
#include "runtime/ir/opcode.def"
#undef X
};
_Static_assert(sizeof(kDispatch) / sizeof(kDispatch[0]) == HL_OP_COUNT_,
               "dispatch table and opcode enum disagree");

hl_kernel_fn_t hl_exec_kernel_for_opcode(hl_opcode_t opcode) { return kDispatch[opcode]; }

//===----------------------------------------------------------------------===//
// Kernel context
//===----------------------------------------------------------------------===//

// Scalar programs of the computations called through
// hl_kernel_call_computation (program NULL: it did not compile).
struct scalar_entry {
  const hl_computation_t *computation;
  hl_scalar_program_t *program;
};

// Blocked programs of fusion computations (program NULL: not covered).
struct fusion_entry {
  const hl_computation_t *computation;
  hl_fusion_program_t *program;
};

struct hl_executable {
  const hl_module_t *module;
  hl_plan_cache_t *plans;
  struct scalar_entry *scalars;
  int scalar_count, scalar_cap;
  struct fusion_entry *fusions;
  int fusion_count, fusion_cap;
  // Warm start: the thread, and the resident blocks it holds for the first
  // run (handed to the allocator's cache when that run begins).
  pthread_t warm_thread;
  bool warming;
  atomic_bool warm_stop;  // the run began: the code pages not touched yet are left to it
  void **reserved;
  int reserved_count;
  int threads;  // the runs' pool size, for kernels' per-thread scratch (>= 1)
  // The blocked programs' workspaces, shared by all of them (fusions and
  // chains: instructions run one at a time), fusion_program.h.
  hl_fusion_workspaces_t *workspaces;
};

// The executor's context of one execution: the kernel-visible head
// (struct hl_kernel_context, runtime/kernels/kernel.h) first, so that the
// hl_kernel_context_t * a kernel hands back is this, then what the walk keeps.
typedef struct exec_context {
  hl_kernel_context_t kernel;
  const hl_module_t *module;
  hl_executable_t *exe;       // plans and scalar programs, kept across runs
  const hl_plan_t *plan;      // the running frame's plan and position in it
  int position;
  // The status call_computation last returned: an error that already names
  // the failing instruction of the callee, so the caller's level adds only
  // "in call from ..." instead of a second location.
  hl_status_t nested_error;
  int fusion_depth;  // > 0 inside a fusion: not profiled instruction by instruction
  // Async collectives started and not yet done (hl_kernel_pending_put).
  struct pending_entry {
    const hl_instruction_t *start;
    void *state;
    void (*discard)(void *state);
  } *pending;
  int pending_count, pending_cap;
} exec_context_t;

static exec_context_t *exec_of(hl_kernel_context_t *ctx) { return (exec_context_t *)ctx; }

static hl_status_t pending_put(hl_kernel_context_t *ctx, const hl_instruction_t *start,
                               void *state, void (*discard)(void *state)) {
  exec_context_t *x = exec_of(ctx);
  if (x->pending_count == x->pending_cap) {
    int cap = x->pending_cap ? 2 * x->pending_cap : 8;
    struct pending_entry *p = hl_realloc(x->pending, (size_t)cap * sizeof(*p));
    if (!p) return HL_OOM();
    x->pending = p;
    x->pending_cap = cap;
  }
  x->pending[x->pending_count++] = (struct pending_entry){start, state, discard};
  return NULL;
}

static void *pending_take(hl_kernel_context_t *ctx, const hl_instruction_t *start) {
  exec_context_t *x = exec_of(ctx);
  // Newest first: a start inside a loop body is re-posted each iteration.
  for (int i = x->pending_count - 1; i >= 0; i--) {
    if (x->pending[i].start != start) continue;
    void *state = x->pending[i].state;
    x->pending[i] = x->pending[--x->pending_count];
    return state;
  }
  return NULL;
}

static bool operand_is_donatable(const hl_kernel_context_t *ctx, int k) {
  const exec_context_t *x = (const exec_context_t *)ctx;
  if (!x->plan) return false;
  const hl_plan_t *p = x->plan;
  int q = x->position;
  int b = p->operand_start[q], e = p->operand_start[q + 1];
  if (k < 0 || k >= e - b) return false;
  int slot = p->operand_slots[b + k];
  for (int j = b; j < e; j++)
    if (j != b + k && p->operand_slots[j] == slot) return false;
  bool dies = false;
  for (int r = p->release_start[q]; r < p->release_start[q + 1] && !dies; r++)
    dies = p->release_slots[r] == slot;
  if (!dies || !p->values[slot] || p->values[slot]->refcount != 1) return false;
  hl_exec_stats_counters_.buffers_donated++;
  return true;
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// Appends "; in call from <loc>" (innermost location first reads best in a
// one-line message). hl_status_annotate only prefixes, so the status is
// remade with the same code and origin.
static hl_status_t append_call_site(hl_status_t st, const hl_instruction_t *inst) {
  if (hl_status_code(st) == HL_OUT_OF_MEMORY) return st;
  char file[96];
  snprintf(file, sizeof(file), "%s", hl_status_origin(st));
  int line = 0;
  char *colon = strrchr(file, ':');
  if (colon) {
    *colon = '\0';
    line = atoi(colon + 1);
  }
  hl_status_t made = hl_status_make(hl_status_code(st), file, line, "%s; in call from %s",
                                    hl_status_message(st), hl_instruction_location(inst));
  if (hl_status_code(made) == HL_OUT_OF_MEMORY) return st;
  hl_status_free(st);
  return made;
}

static void append_bytes(char *buf, size_t cap, size_t *len, size_t bytes) {
  static const char *const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  int n = u ? snprintf(buf + *len, cap - *len, "%.1f %s", v, kUnits[u])
            : snprintf(buf + *len, cap - *len, "%zu bytes", bytes);
  if (n > 0) *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

static size_t literal_bytes(const hl_literal_t *lit) {
  if (!lit) return 0;
  size_t n = lit->byte_size;
  if (lit->elements)
    for (int i = 0; i < lit->shape.tuple_count; i++) n += literal_bytes(lit->elements[i]);
  return n;
}

// An out-of-memory error of `inst` with what it asked for, what the rank held
// and the largest values alive in the running frame (issue 26): "...: out of
// memory: asked for 4.0 GiB; the rank held 1.0 GiB (largest values alive:
// 'b' 512.0 MiB, ...)". The allocator's plain status when even that message
// cannot be made.
static hl_status_t explain_oom(exec_context_t *x, const hl_instruction_t *inst,
                               hl_status_t st) {
  enum { kTop = 3 };
  char text[768];
  size_t len = 0;
  size_t asked = hl_alloc_failed_bytes();
  hl_alloc_clear_failed_bytes();
  const char *loc = hl_instruction_location(inst), *msg = hl_status_message(st);
  len += strstr(msg, loc) ? (size_t)snprintf(text, sizeof(text), "%s", msg)
                          : (size_t)snprintf(text, sizeof(text), "%s: %s", loc, msg);
  if (len >= sizeof(text)) len = sizeof(text) - 1;
  if (asked) {
    len += (size_t)snprintf(text + len, sizeof(text) - len, ": asked for ");
    if (len >= sizeof(text)) len = sizeof(text) - 1;
    append_bytes(text, sizeof(text), &len, asked);
  }
  len += (size_t)snprintf(text + len, sizeof(text) - len, "; the rank held ");
  if (len >= sizeof(text)) len = sizeof(text) - 1;
  append_bytes(text, sizeof(text), &len, hl_alloc_live_bytes());
  const hl_plan_t *p = x->plan;
  int top[kTop];
  size_t top_bytes[kTop];
  int found = 0;
  for (int s = 0; p && s < p->count; s++) {
    size_t b = literal_bytes(p->values[s]);
    if (!b) continue;
    int at = found < kTop ? found++ : kTop;
    if (at == kTop && b <= top_bytes[kTop - 1]) continue;
    if (at == kTop) at = kTop - 1;
    while (at > 0 && top_bytes[at - 1] < b) {
      top[at] = top[at - 1];
      top_bytes[at] = top_bytes[at - 1];
      at--;
    }
    top[at] = s;
    top_bytes[at] = b;
  }
  for (int i = 0; i < found; i++) {
    const hl_instruction_t *v = p->computation->instructions[top[i]];
    len += (size_t)snprintf(text + len, sizeof(text) - len, "%s'%s' ",
                            i ? ", " : " (largest values alive: ", v->name);
    if (len >= sizeof(text)) len = sizeof(text) - 1;
    append_bytes(text, sizeof(text), &len, top_bytes[i]);
  }
  if (found) snprintf(text + len, sizeof(text) - len, ")");
  hl_status_t made = HL_ERROR(HL_OUT_OF_MEMORY, "%s", text);
  if (hl_status_message(made) == hl_status_message(st) || !strstr(hl_status_message(made), "the rank held"))
    return st;  // no room for the message: the plain one
  hl_status_free(st);
  return made;
}

// Names the failing instruction exactly once per level.
static hl_status_t locate_error(exec_context_t *x, const hl_instruction_t *inst,
                                hl_status_t st) {
  bool nested = st == x->nested_error;
  x->nested_error = NULL;
  if (hl_status_code(st) == HL_OUT_OF_MEMORY && !nested &&
      !strstr(hl_status_message(st), "the rank held"))
    return explain_oom(x, inst, st);
  if (nested) return append_call_site(st, inst);
  const char *loc = hl_instruction_location(inst);
  if (strstr(hl_status_message(st), loc)) return st;  // the kernel named it already
  return hl_status_annotate(st, "%s", loc);
}

static hl_status_t check_arguments(const hl_computation_t *c, hl_literal_t *const *args,
                                   int count) {
  if (count != c->parameter_count)
    return HL_INVALID("computation '%s' takes %d argument%s, got %d", c->name,
                      c->parameter_count, c->parameter_count == 1 ? "" : "s", count);
  for (int i = 0; i < count; i++) {
    const hl_instruction_t *param = c->parameters ? c->parameters[i] : NULL;
    if (!param) return HL_INVALID("computation '%s': parameter %d is missing", c->name, i);
    if (!args[i]) return HL_INVALID("argument %d: missing (NULL)", i);
    if (!hl_shape_equal(&args[i]->shape, &param->shape)) {
      char expected[512];
      snprintf(expected, sizeof(expected), "%s", hl_shape_debug_string(&param->shape));
      return HL_INVALID("argument %d: expected %s, got %s", i, expected,
                        hl_shape_debug_string(&args[i]->shape));
    }
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

static inline void stats_value_born(void) {
  hl_exec_stats_t *s = &hl_exec_stats_counters_;
  s->instructions_executed++;
  if (++s->live_values > s->peak_live_values) s->peak_live_values = s->live_values;
}

// The observer's view of one kernel call; its status stops the run only
// when the kernel itself succeeded.
static hl_status_t observe_leave(hl_exec_observer_t *obs, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, int count,
                                 const hl_literal_t *result, hl_status_t st) {
  hl_status_t seen = obs->vtable->leave(obs, inst, operands, count, st ? NULL : result);
  if (!st) return seen;
  hl_status_free(seen);
  return st;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// One kernel call, timed into the profile unless it is control flow (its
// body's instructions are timed) or runs inside a fusion (the fusion is).
static hl_status_t run_profiled(exec_context_t *x, hl_kernel_fn_t kernel,
                                const hl_instruction_t *inst, hl_literal_t *const *operands,
                                int operand_count, hl_literal_t **result) {
  hl_opcode_t op = inst->opcode;
  bool timed = x->fusion_depth == 0 && op != HL_OP_WHILE && op != HL_OP_CALL &&
               op != HL_OP_CONDITIONAL;
  double t0 = timed ? now_seconds() : 0;
  if (op == HL_OP_FUSION) x->fusion_depth++;
  double outer_flops = x->kernel.counted_flops;
  x->kernel.counted_flops = 0;
  hl_status_t st = kernel(&x->kernel, inst, operands, result);
  if (op == HL_OP_FUSION) x->fusion_depth--;
  if (timed && !st) {
    hl_profile_record(x->kernel.options.profile, inst, now_seconds() - t0, operands, operand_count,
                      *result);
    if (x->kernel.counted_flops > 0)
      hl_profile_add_flops(x->kernel.options.profile, inst, x->kernel.counted_flops);
  }
  x->kernel.counted_flops = outer_flops;
  return st;
}

// An unfused element-wise chain (elementwise_chains.h) in one blocked pass,
// timed into the profile as its root instruction.
static hl_status_t run_chain(exec_context_t *x, const hl_plan_chain_t *ch,
                             hl_literal_t **values, hl_literal_t **result) {
  hl_literal_t *local[16];
  hl_literal_t **args = ch->input_count <= 16
                            ? local
                            : hl_malloc(sizeof(hl_literal_t *) * (size_t)ch->input_count);
  if (!args) return HL_OOM();
  for (int i = 0; i < ch->input_count; i++) args[i] = values[ch->input_slots[i]];
  double t0 = x->kernel.options.profile && x->fusion_depth == 0 ? now_seconds() : 0;
  hl_fusion_program_use_workspaces(ch->program, x->exe->workspaces);
  hl_status_t st =
      hl_fusion_program_run(ch->program, args, ch->input_count, x->kernel.options.pool, result);
  if (!st && x->kernel.options.profile && x->fusion_depth == 0)
    hl_profile_record(x->kernel.options.profile, ch->members[ch->member_count - 1],
                      now_seconds() - t0, args, ch->input_count, *result);
  if (args != local) hl_free(args);
  return st;
}

static hl_status_t run_computation(exec_context_t *x, const hl_computation_t *c,
                                   hl_literal_t *const *args, int arg_count,
                                   hl_literal_t **out) {
  *out = NULL;
  hl_plan_t *plan;
  HL_RETURN_IF_ERROR(hl_plan_cache_get(x->exe->plans, c, &plan));
  if (plan->active)
    return HL_INVALID("computation '%s' calls itself (recursion is not allowed in HLO)", c->name);
  plan->active = true;
  hl_literal_t *const *saved_args = x->kernel.frame_args;
  int saved_count = x->kernel.frame_arg_count;
  const hl_plan_t *saved_plan = x->plan;
  int saved_position = x->position;
  x->kernel.frame_args = args;
  x->kernel.frame_arg_count = arg_count;
  x->plan = plan;

  hl_literal_t **values = plan->values;
  hl_literal_t **opbuf = plan->operand_buffer;
  const int *ostart = plan->operand_start, *oslots = plan->operand_slots;
  const int *rstart = plan->release_start, *rslots = plan->release_slots;
  hl_status_t st = NULL;
  hl_exec_observer_t *obs = x->kernel.options.observer;
  int n = plan->count;
  // Chains run blocked unless in the reference mode or observed by one that
  // wants every instruction's value (NaN checks).
  const int *chain_at =
      !x->kernel.options.no_fusion_blocking && !(obs && obs->wants_values) ? plan->chain_at : NULL;
  for (int q = 0; q < n; q++) {
    const hl_instruction_t *inst = plan->order[q];
    int b = ostart[q], e = ostart[q + 1];
    hl_literal_t *result = NULL;
    x->position = q;
    if (chain_at && chain_at[q] == -2) continue;  // computed by its chain's root
    for (int k = b; k < e; k++) opbuf[k - b] = values[oslots[k]];
    unsigned hooks = 0;
    if (obs) {  // inline: a plain instruction costs the observer one store
      hooks = hl_exec_observer_hooks(obs, inst);
      if (hooks & HL_OBSERVE_ENTER) obs->vtable->enter(obs, inst, opbuf, e - b);
      else __atomic_store_n(obs->marker, inst->id, __ATOMIC_RELAXED);
    }
    if (chain_at && chain_at[q] >= 0) {
      st = run_chain(x, &plan->chains[chain_at[q]], values, &result);
    } else if (x->kernel.options.profile) {
      st = run_profiled(x, plan->kernels[q], inst, opbuf, e - b, &result);
    } else {
      st = plan->kernels[q](&x->kernel, inst, opbuf, &result);
    }
    if (hooks & HL_OBSERVE_ENTER) st = observe_leave(obs, inst, opbuf, e - b, result, st);
    else if ((hooks & HL_OBSERVE_LEAVE) && !st &&
             !(obs->log && hl_exec_log_append(obs->log, inst)))
      obs->vtable->finished(obs, inst);  // no room in the log (or none)
    if (st) {
      hl_literal_release(result);
      st = locate_error(x, inst, st);
      break;
    }
    if (!result || !hl_shape_equal(&result->shape, &inst->shape)) {
      char expected[512];
      snprintf(expected, sizeof(expected), "%s", hl_shape_debug_string(&inst->shape));
      st = HL_INTERNAL_ERROR("%s: kernel produced %s, expected %s",
                             hl_instruction_location(inst),
                             result ? hl_shape_debug_string(&result->shape) : "no value",
                             expected);
      hl_literal_release(result);
      break;
    }
    values[inst->index] = result;
    stats_value_born();
    for (int r = rstart[q]; r < rstart[q + 1]; r++) {
      hl_literal_release(values[rslots[r]]);
      values[rslots[r]] = NULL;
    }
    hl_exec_stats_counters_.live_values -= rstart[q + 1] - rstart[q];
  }
  if (!st) {
    *out = values[plan->root_slot];
    values[plan->root_slot] = NULL;
    hl_exec_stats_counters_.live_values--;
  } else {
    for (int s = 0; s < n; s++) {
      if (!values[s]) continue;
      hl_literal_release(values[s]);
      values[s] = NULL;
      hl_exec_stats_counters_.live_values--;
    }
  }
  x->kernel.frame_args = saved_args;
  x->kernel.frame_arg_count = saved_count;
  x->plan = saved_plan;
  x->position = saved_position;
  plan->active = false;
  return st;
}

// The scalar program of `c`, compiled on first use (NULL: use the walk).
// Reducers and comparators are called once per element, so the lookup is
// a short scan of the few computations called so far.
static hl_status_t scalar_program_of(hl_executable_t *exe, const hl_computation_t *c,
                                     hl_scalar_program_t **out) {
  *out = NULL;
  for (int i = 0; i < exe->scalar_count; i++)
    if (exe->scalars[i].computation == c) {
      *out = exe->scalars[i].program;
      return NULL;
    }
  if (exe->scalar_count == exe->scalar_cap) {
    int cap = exe->scalar_cap ? 2 * exe->scalar_cap : 4;
    struct scalar_entry *e = hl_realloc(exe->scalars, (size_t)cap * sizeof(*e));
    if (!e) return HL_OOM();
    exe->scalars = e;
    exe->scalar_cap = cap;
  }
  hl_scalar_program_t *p = NULL;
  HL_RETURN_IF_ERROR(hl_scalar_program_compile(c, &p));
  exe->scalars[exe->scalar_count++] = (struct scalar_entry){c, p};
  *out = p;
  return NULL;
}

static hl_status_t fusion_program_of(hl_executable_t *exe, const hl_computation_t *c,
                                     hl_fusion_program_t **out) {
  *out = NULL;
  for (int i = 0; i < exe->fusion_count; i++)
    if (exe->fusions[i].computation == c) {
      *out = exe->fusions[i].program;
      return NULL;
    }
  if (exe->fusion_count == exe->fusion_cap) {
    int cap = exe->fusion_cap ? 2 * exe->fusion_cap : 4;
    struct fusion_entry *e = hl_realloc(exe->fusions, (size_t)cap * sizeof(*e));
    if (!e) return HL_OOM();
    exe->fusions = e;
    exe->fusion_cap = cap;
  }
  hl_fusion_program_t *p = NULL;
  const char *why = NULL;
  HL_RETURN_IF_ERROR(hl_fusion_program_compile(c, &p, &why));
  if (p) hl_fusion_program_use_workspaces(p, exe->workspaces);
  exe->fusions[exe->fusion_count++] = (struct fusion_entry){c, p};
  *out = p;
  return NULL;
}

static hl_status_t fusion_program(hl_kernel_context_t *ctx, const hl_computation_t *c,
                                  hl_fusion_program_t **out) {
  return fusion_program_of(exec_of(ctx)->exe, c, out);
}

static hl_status_t call_computation(hl_kernel_context_t *ctx, const hl_computation_t *computation,
                                    hl_literal_t *const *args, int arg_count,
                                    hl_literal_t **out) {
  *out = NULL;
  exec_context_t *x = exec_of(ctx);
  if (!computation) return HL_INVALID("missing called computation");
  hl_status_t st = check_arguments(computation, args, arg_count);
  if (st) return hl_status_annotate(st, "calling computation '%s'", computation->name);
  hl_exec_observer_t *obs = x->kernel.options.observer;
  if (obs) obs->vtable->call(obs, computation);
  hl_scalar_program_t *program = NULL;
  st = scalar_program_of(x->exe, computation, &program);
  if (!st && program) st = hl_scalar_program_run(program, args, out);
  else if (!st) st = run_computation(x, computation, args, arg_count, out);
  if (st) x->nested_error = st;
  return st;
}

// What kernels may ask of this executor (the kernel contract, kernel.h).
static const hl_kernel_services_t kServices = {
    .call_computation = call_computation,
    .operand_is_donatable = operand_is_donatable,
    .pending_put = pending_put,
    .pending_take = pending_take,
    .fusion_program = fusion_program,
    .cancel_requested = hl_exec_cancel_requested,
};

hl_status_t hl_executable_create(const hl_module_t *module, hl_executable_t **out_executable) {
  *out_executable = NULL;
  if (!module || !module->entry) return HL_INVALID("module has no entry computation");
  hl_executable_t *exe = hl_calloc(1, sizeof(*exe));
  if (!exe) return HL_OOM();
  exe->module = module;
  exe->threads = 1;
  exe->workspaces = hl_fusion_workspaces_create();
  hl_status_t st = exe->workspaces ? hl_plan_cache_create(module->computation_count, &exe->plans)
                                   : HL_OOM();
  if (st) {
    hl_fusion_workspaces_destroy(exe->workspaces);
    hl_free(exe);
    return st;
  }
  *out_executable = exe;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Warm start
//===----------------------------------------------------------------------===//

static void warm_plans_and_blocks(hl_executable_t *exe) {
  const hl_module_t *m = exe->module;
  hl_plan_t *plan = NULL;
  hl_status_t st = hl_plan_cache_get(exe->plans, m->entry, &plan);
  for (int i = 0; !st && i < m->computation_count; i++) {
    const hl_computation_t *c = m->computations[i];
    for (int j = 0; !st && j < c->instruction_count; j++) {
      const hl_instruction_t *inst = c->instructions[j];
      const hl_computation_t *callee = hl_instruction_to_apply(inst);
      hl_fusion_program_t *program = NULL;
      if (inst->opcode == HL_OP_FUSION && callee) st = fusion_program_of(exe, callee, &program);
      if (program) st = hl_fusion_program_warm(program);
      for (int k = 0; inst->opcode != HL_OP_FUSION && !st && k < inst->called_count; k++) {
        hl_scalar_program_t *scalar = NULL;  // reducers, comparators, bodies
        st = scalar_program_of(exe, inst->called_computations[k], &scalar);
      }
    }
  }
  hl_status_free(st);  // the run builds it again and reports the error
  hl_memory_plan_t mp;
  if (!plan) return;
  st = hl_memory_plan_build(plan, exe->threads, &mp);
  if (st) {
    hl_status_free(st);
    return;
  }
  exe->reserved = hl_calloc((size_t)(mp.fresh_block_count ? mp.fresh_block_count : 1),
                            sizeof(void *));
  for (int i = 0; exe->reserved && i < mp.fresh_block_count; i++) {
    void *p = hl_alloc_resident(mp.fresh_blocks[i]);
    if (!p) break;  // out of memory: the run will say so, if it is
    exe->reserved[exe->reserved_count++] = p;
  }
  hl_memory_plan_deinit(&mp);
}

static void *warm_main(void *arg) {
  hl_executable_t *exe = arg;
  warm_plans_and_blocks(exe);
  // Then, until the first run begins, the code it runs: the runtime's own
  // (executor, kernels, fusion interpreter) and SLEEF's routines, so that
  // the run does not page-fault on each code page it first executes (a
  // small program's first run: 35-40 us -> 15 us on the build VM).
  const void *anchors[2] = {kDispatch, hl_vmath_library_code()};  // kDispatch: this object
  hl_code_pages_touch(anchors, 2, &exe->warm_stop);
  return NULL;
}

void hl_executable_warm_start(hl_executable_t *exe) {
  if (!exe || exe->warming) return;
  atomic_store(&exe->warm_stop, false);
  exe->warming = pthread_create(&exe->warm_thread, NULL, warm_main, exe) == 0;
}

// Waits for the warm start and gives its blocks to the allocator's cache.
static void warm_finish(hl_executable_t *exe) {
  atomic_store(&exe->warm_stop, true);
  if (exe->warming) pthread_join(exe->warm_thread, NULL);
  exe->warming = false;
  for (int i = 0; i < exe->reserved_count; i++) hl_free(exe->reserved[i]);
  hl_free(exe->reserved);
  exe->reserved = NULL;
  exe->reserved_count = 0;
}

void hl_executable_set_threads(hl_executable_t *exe, int threads) {
  if (exe && !exe->warming) exe->threads = threads > 1 ? threads : 1;
}

bool hl_executable_memory_bounds(hl_executable_t *exe, hl_executable_memory_t *out) {
  warm_finish(exe);
  memset(out, 0, sizeof(*out));
  hl_plan_t *plan = NULL;
  hl_memory_plan_t mp;
  hl_status_t st = hl_plan_cache_get(exe->plans, exe->module->entry, &plan);
  if (!st) st = hl_memory_plan_build(plan, exe->threads, &mp);
  if (st) {
    hl_status_free(st);
    return false;
  }
  out->live_bound_bytes = mp.live_peak_bytes;
  out->parameter_bytes = mp.parameter_bytes;
  out->scratch_peak_bytes = mp.scratch_peak_bytes;
  out->with_scratch_peak_bytes = mp.with_scratch_peak_bytes;
  out->fusion_workspace_bytes = (int64_t)hl_fusion_workspaces_arena_bytes(exe->workspaces);
  hl_memory_plan_deinit(&mp);
  return true;
}

bool hl_executable_live_set_bound(hl_executable_t *exe, int64_t *bound_bytes,
                                  int64_t *parameter_bytes) {
  hl_executable_memory_t m;
  if (!hl_executable_memory_bounds(exe, &m)) return false;
  *bound_bytes = m.live_bound_bytes;
  *parameter_bytes = m.parameter_bytes;
  return true;
}

void hl_executable_destroy(hl_executable_t *exe) {
  if (!exe) return;
  warm_finish(exe);
  hl_jit_settle();  // the caller may exit next: not while the fusion JIT loads libLLVM
  for (int i = 0; i < exe->scalar_count; i++) hl_scalar_program_destroy(exe->scalars[i].program);
  hl_free(exe->scalars);
  for (int i = 0; i < exe->fusion_count; i++) hl_fusion_program_destroy(exe->fusions[i].program);
  hl_free(exe->fusions);
  hl_plan_cache_destroy(exe->plans);
  hl_fusion_workspaces_destroy(exe->workspaces);  // after the programs that share it
  hl_free(exe);
}

hl_status_t hl_executable_run(hl_executable_t *exe, const hl_exec_options_t *options,
                              hl_literal_t *const *args, int arg_count,
                              hl_literal_t **out_result) {
  if (!out_result) return HL_INVALID("hl_execute: out_result is NULL");
  *out_result = NULL;
  if (!exe) return HL_INVALID("hl_executable_run: no executable");
  if (arg_count < 0 || (arg_count > 0 && !args))
    return HL_INVALID("hl_execute: bad argument array");
  warm_finish(exe);
  const hl_module_t *module = exe->module;
  const hl_computation_t *entry = module->entry;
  HL_RETURN_IF_ERROR_CTX(check_arguments(entry, args, arg_count), "entry computation '%s'",
                         entry->name);
  exec_context_t ctx = {.kernel = {.services = &kServices}, .module = module, .exe = exe};
  hl_exec_options_t *opts = &ctx.kernel.options;
  hl_alloc_clear_failed_bytes();
  if (options) *opts = *options;
  if (opts->num_replicas <= 0) opts->num_replicas = 1;
  if (opts->num_partitions <= 0) opts->num_partitions = 1;
  if (opts->observer && opts->observer->vtable->begin_run)
    opts->observer->vtable->begin_run(opts->observer);
  hl_status_t st = run_computation(&ctx, entry, args, arg_count, out_result);
  for (int i = 0; i < ctx.pending_count; i++) ctx.pending[i].discard(ctx.pending[i].state);
  hl_free(ctx.pending);
  st = hl_channel_pending_finish(opts->comm, ctx.kernel.channel_pending, st);
  if (st) {
    hl_literal_release(*out_result);
    *out_result = NULL;
  }
  return st;
}

hl_status_t hl_execute(const hl_module_t *module, const hl_exec_options_t *options,
                       hl_literal_t *const *args, int arg_count, hl_literal_t **out_result) {
  if (!out_result) return HL_INVALID("hl_execute: out_result is NULL");
  *out_result = NULL;
  hl_executable_t *exe;
  HL_RETURN_IF_ERROR(hl_executable_create(module, &exe));
  hl_status_t st = hl_executable_run(exe, options, args, arg_count, out_result);
  hl_executable_destroy(exe);
  return st;
}
