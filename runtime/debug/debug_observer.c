// The debugging observer (see debug_observer.h). Cheap on purpose, since
// the hang watchdog keeps it on by default: an ordinary instruction is not
// called for at all (runtime/exec/observer.h: the walk stores its id into
// the marker, the rank state's frame above the stack); enter / leave run
// for the instructions that call computations (the stack, while
// iterations) and the communicating ones, which read the clock and write a
// flight-recorder event. With --trace the walk also logs every other
// instruction's end itself (one clock read, observer.h's log), calling
// `finished` only when the log is full; with the NaN / Inf checks enter and
// leave run for all.
#include "runtime/debug/debug_observer.h"

#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/debug/nonfinite_check.h"

struct hl_debug_observer {
  hl_exec_observer_t base;
  hl_debug_observer_options_t options;
  hl_rank_state_t *state;
  // The process's own view of the stack (the state holds ids only).
  int depth;
  const hl_instruction_t *insts[HL_RANK_STATE_MAX_DEPTH];
  int64_t iteration[HL_RANK_STATE_MAX_DEPTH];  // while frames: 0-based iteration (-1: none yet)
  int event_slot[HL_RANK_STATE_MAX_DEPTH];  // flight-recorder slot of a communicating frame
  int64_t sink;  // the marker without a state, or below the deepest frame kept
};

// One table lookup on the hot path instead of a switch per call.
static const bool kCommunicates[HL_OP_COUNT_] = {
    [HL_OP_ALL_GATHER] = true, [HL_OP_ALL_GATHER_START] = true, [HL_OP_ALL_GATHER_DONE] = true,
    [HL_OP_ALL_REDUCE] = true, [HL_OP_ALL_REDUCE_START] = true, [HL_OP_ALL_REDUCE_DONE] = true,
    [HL_OP_ALL_TO_ALL] = true, [HL_OP_RAGGED_ALL_TO_ALL] = true, [HL_OP_REDUCE_SCATTER] = true,
    [HL_OP_COLLECTIVE_BROADCAST] = true, [HL_OP_COLLECTIVE_REDUCE] = true,
    [HL_OP_COLLECTIVE_PERMUTE] = true, [HL_OP_COLLECTIVE_PERMUTE_START] = true,
    [HL_OP_COLLECTIVE_PERMUTE_DONE] = true,
    [HL_OP_SEND] = true, [HL_OP_SEND_DONE] = true, [HL_OP_RECV] = true, [HL_OP_RECV_DONE] = true,
};

static inline bool communicates(hl_opcode_t op) {
  return (unsigned)op < HL_OP_COUNT_ && kCommunicates[op];
}

bool hl_debug_opcode_communicates(hl_opcode_t op) { return communicates(op); }

static int64_t literal_bytes(const hl_literal_t *lit) {
  if (!lit) return 0;
  if (lit->shape.dtype != HL_TUPLE) return (int64_t)lit->byte_size;
  int64_t total = 0;
  for (int i = 0; i < lit->shape.tuple_count; i++) total += literal_bytes(lit->elements[i]);
  return total;
}

static bool is_done_form(hl_opcode_t op) {
  return op == HL_OP_ALL_GATHER_DONE || op == HL_OP_ALL_REDUCE_DONE ||
         op == HL_OP_COLLECTIVE_PERMUTE_DONE || op == HL_OP_SEND_DONE || op == HL_OP_RECV_DONE;
}

// The innermost enclosing while's iteration (-1: none), from depth `below` down.
static int64_t innermost_iteration(const hl_rank_state_t *s, int below) {
  for (int d = below - 1; d >= 0; d--)
    if (s->frames[d].iteration >= 0) return s->frames[d].iteration;
  return -1;
}

static void record_start(hl_debug_observer_t *o, const hl_instruction_t *inst,
                         hl_literal_t *const *operands, int count, int d, int64_t now) {
  hl_rank_state_t *s = o->state;
  int64_t serial = s->events_written + 1;
  int slot = (int)((serial - 1) % HL_RANK_STATE_EVENTS);
  hl_rank_event_t *ev = &s->events[slot];
  int64_t bytes = 0;
  if (!is_done_form(inst->opcode))
    for (int k = 0; k < count; k++) bytes += literal_bytes(operands[k]);
  *ev = (hl_rank_event_t){.id = inst->id, .opcode = (int32_t)inst->opcode, .depth = d,
                          .iteration = innermost_iteration(s, d), .start_ns = now,
                          .bytes = bytes, .serial = serial};
  s->events_written = serial;
  o->event_slot[d] = slot;
}

// Points the marker at the frame above the stack (depth d), where the walk
// stores the id of each plain instruction it starts.
static void move_marker(hl_debug_observer_t *o, int d) {
  o->base.marker = o->state && d < HL_RANK_STATE_MAX_DEPTH ? &o->state->frames[d].id : &o->sink;
}

static void observer_enter(hl_exec_observer_t *base, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, int count) {
  hl_debug_observer_t *o = (hl_debug_observer_t *)base;
  // The checks summarise the operands after the kernel: held here, the
  // kernel cannot take one over for its result (hl_kernel_reuse_operand).
  if (o->options.check_nans || o->options.check_infs)
    for (int k = 0; k < count; k++) hl_literal_retain(operands[k]);
  int d = o->depth++;
  if (o->options.trace) hl_trace_recorder_log(o->options.trace)->depth = o->depth;
  if (d < HL_RANK_STATE_MAX_DEPTH) {
    o->insts[d] = inst;
    o->iteration[d] = -1;
  }
  hl_rank_state_t *s = o->state;
  if (!s || d >= HL_RANK_STATE_MAX_DEPTH) {
    if (s) __atomic_store_n(&s->depth, o->depth, __ATOMIC_RELEASE);
    move_marker(o, o->depth);
    return;
  }
  hl_rank_frame_t *f = &s->frames[d];
  f->id = inst->id;
  f->iteration = inst->opcode == HL_OP_WHILE ? -1 : -2;  // -2: not a loop
  f->start_ns = 0;
  if (communicates(inst->opcode)) {
    f->start_ns = hl_rank_state_now_ns();
    record_start(o, inst, operands, count, d, f->start_ns);
  }
  // No instruction started inside it yet.
  if (d + 1 < HL_RANK_STATE_MAX_DEPTH)
    __atomic_store_n(&s->frames[d + 1].id, HL_RANK_STATE_NO_ID, __ATOMIC_RELAXED);
  __atomic_store_n(&s->depth, o->depth, __ATOMIC_RELEASE);
  move_marker(o, o->depth);
}

// "iteration 3 of while.1, iteration 0 of while.7" for the enclosing loops.
static void describe_loops(const hl_debug_observer_t *o, char *buf, size_t cap) {
  buf[0] = '\0';
  size_t used = 0;
  int top = o->depth < HL_RANK_STATE_MAX_DEPTH ? o->depth : HL_RANK_STATE_MAX_DEPTH;
  for (int d = 0; d < top && used < cap; d++) {
    if (o->insts[d]->opcode != HL_OP_WHILE) continue;
    int64_t it = o->iteration[d];
    if (it < 0)
      used += (size_t)snprintf(buf + used, cap - used, "%sbefore the first iteration of %s",
                               used ? ", " : "", o->insts[d]->name);
    else
      used += (size_t)snprintf(buf + used, cap - used, "%siteration %lld of %s",
                               used ? ", " : "", (long long)it, o->insts[d]->name);
  }
}

static hl_status_t observer_leave(hl_exec_observer_t *base, const hl_instruction_t *inst,
                                  hl_literal_t *const *operands, int count,
                                  const hl_literal_t *result) {
  hl_debug_observer_t *o = (hl_debug_observer_t *)base;
  hl_status_t st = NULL;
  if (o->options.check_nans || o->options.check_infs) {
    if (result) {
      st = hl_nonfinite_check(inst, operands, count, result, o->options.check_nans,
                              o->options.check_infs, NULL);
      if (st && hl_status_code(st) != HL_OUT_OF_MEMORY) {
        // Found: said again with the loop iterations, which cost a format.
        hl_status_free(st);
        char where[512] = "";
        describe_loops(o, where, sizeof(where));
        st = hl_nonfinite_check(inst, operands, count, result, o->options.check_nans,
                                o->options.check_infs, where);
      }
    }
    for (int k = 0; k < count; k++) hl_literal_release(operands[k]);
  }
  int d = --o->depth;
  bool talks = communicates(inst->opcode);
  if (o->options.trace && talks) {
    int64_t bytes = 0;
    if (is_done_form(inst->opcode)) bytes = literal_bytes(result);
    else
      for (int k = 0; k < count; k++) bytes += literal_bytes(operands[k]);
    hl_trace_recorder_leave_bytes(o->options.trace, inst, d, bytes);
  } else if (o->options.trace) {
    hl_trace_recorder_leave(o->options.trace, inst, d);
  }
  hl_rank_state_t *s = o->state;
  if (s) {
    if (d < HL_RANK_STATE_MAX_DEPTH && talks) {
      int64_t now = hl_rank_state_now_ns();
      hl_rank_event_t *ev = &s->events[o->event_slot[d]];
      if (ev->id == inst->id && ev->depth == d) {
        ev->end_ns = now;
        if (is_done_form(inst->opcode)) ev->bytes = literal_bytes(result);
      }
      s->progress_ns = now;
    }
    __atomic_store_n(&s->depth, o->depth, __ATOMIC_RELEASE);
    // Its frame is the marker now; a finished collective there would read as
    // one waited in.
    if (d < HL_RANK_STATE_MAX_DEPTH && talks)
      __atomic_store_n(&s->frames[d].id, HL_RANK_STATE_NO_ID, __ATOMIC_RELAXED);
  }
  move_marker(o, d);  // its frame, which holds its id (the last one started there)
  return st;
}

// A plain instruction under --trace finished (the checks enter every one).
static void observer_finished(hl_exec_observer_t *base, const hl_instruction_t *inst) {
  hl_debug_observer_t *o = (hl_debug_observer_t *)base;
  hl_trace_recorder_leave(o->options.trace, inst, o->depth);
}

static void observer_call(hl_exec_observer_t *base, const hl_computation_t *computation) {
  hl_debug_observer_t *o = (hl_debug_observer_t *)base;
  int d = o->depth - 1;
  if (d < 0 || d >= HL_RANK_STATE_MAX_DEPTH) return;
  const hl_instruction_t *top = o->insts[d];
  if (top->opcode != HL_OP_WHILE || hl_instruction_while_body(top) != computation) return;
  o->iteration[d]++;
  if (o->state) o->state->frames[d].iteration = o->iteration[d];
}

static void observer_begin_run(hl_exec_observer_t *base) {
  hl_debug_observer_t *o = (hl_debug_observer_t *)base;
  if (o->options.trace) hl_trace_recorder_begin(o->options.trace);
}

static const hl_exec_observer_vtable_t kVtable = {
    .enter = observer_enter,
    .leave = observer_leave,
    .call = observer_call,
    .finished = observer_finished,
    .begin_run = observer_begin_run,
};

hl_status_t hl_debug_observer_create(const hl_debug_observer_options_t *options,
                                     hl_debug_observer_t **out_observer) {
  *out_observer = NULL;
  hl_debug_observer_t *o = hl_calloc(1, sizeof(*o));
  if (!o) return HL_OOM();
  o->base.vtable = &kVtable;
  o->options = *options;
  o->state = options->state;
  // What the walk calls for (observer.h): the checks read every value;
  // communicating instructions are the ones a hang waits in; the trace
  // wants every instruction's end. Calling instructions get both anyway.
  bool checks = options->check_nans || options->check_infs;
  for (int op = 0; op < HL_OP_COUNT_; op++)
    o->base.hooks[op] = checks || communicates((hl_opcode_t)op)
                            ? HL_OBSERVE_ENTER | HL_OBSERVE_LEAVE
                            : options->trace ? HL_OBSERVE_LEAVE : 0;
  o->base.wants_values = checks;
  o->base.log = options->trace ? hl_trace_recorder_log(options->trace) : NULL;
  move_marker(o, 0);
  *out_observer = o;
  return NULL;
}

void hl_debug_observer_destroy(hl_debug_observer_t *observer) { hl_free(observer); }

hl_exec_observer_t *hl_debug_observer_base(hl_debug_observer_t *observer) {
  return &observer->base;
}
