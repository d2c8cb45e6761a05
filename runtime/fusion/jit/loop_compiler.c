// Body -> loop: check the list, pick the unroll whose registers suffice
// (linear scan over the list, a register freed at its value's last use),
// then emit prologue, the interleaved copies of every value, the stores and
// the counted branch, three times (main, single, and main with streaming
// stores), and the constant pool.
#include "runtime/fusion/jit/loop_compiler.h"

#include <stdlib.h>
#include <string.h>

// ymm0..12 hold values; 13..15 are scratch for maximum / minimum.
#define VALUE_REGS 13
enum { S0 = 13, S1 = 14, S2 = 15 };

// Input pointers live in these registers (rdi holds the pointer array,
// rsi the output, rdx the end offset, rcx the running offset).
static const int kBase[HL_JIT_MAX_INPUTS] = {HL_X86_R8,  HL_X86_R9,  HL_X86_R10, HL_X86_R11,
                                             HL_X86_RAX, HL_X86_RBX, HL_X86_RBP, HL_X86_R12,
                                             HL_X86_R13, HL_X86_R14, HL_X86_R15};
static bool callee_saved(int r) {
  return r == HL_X86_RBX || r == HL_X86_RBP || r >= HL_X86_R12;
}

static bool is_mask_op(hl_jit_op_t op) { return op >= HL_JIT_CMP_EQ && op <= HL_JIT_CMP_GE; }
static int arity(hl_jit_op_t op) {
  switch (op) {
    case HL_JIT_LOAD:
    case HL_JIT_BROADCAST: return 0;
    case HL_JIT_NEG:
    case HL_JIT_ABS:
    case HL_JIT_SQRT:
    case HL_JIT_CALL: return 1;
    case HL_JIT_SELECT: return 3;
    default: return 2;
  }
}

static const char *check_body(const hl_jit_body_t *b) {
  if (b->count < 1 || b->count > HL_JIT_MAX_VALUES) return "a JIT body of too many values";
  if (b->input_count < 0 || b->input_count > HL_JIT_MAX_INPUTS) return "a JIT body of too many inputs";
  for (int i = 0; i < b->count; i++) {
    const hl_jit_value_t *v = &b->values[i];
    if (v->op < HL_JIT_LOAD || v->op > HL_JIT_CALL) return "an unknown JIT operation";
    if (v->op == HL_JIT_CALL && !v->fn) return "a JIT call of no function";
    if (v->op == HL_JIT_LOAD || v->op == HL_JIT_BROADCAST) {
      if (v->a < 0 || v->a >= b->input_count ||
          b->input_scalar[v->a] != (v->op == HL_JIT_BROADCAST))
        return "a JIT load of a bad input";
      continue;
    }
    const int ops[3] = {v->a, v->b, v->c};
    for (int k = 0; k < arity(v->op); k++) {
      if (ops[k] < 0 || ops[k] >= i) return "a JIT operand that is not an earlier value";
      bool want_mask = v->op == HL_JIT_SELECT && k == 0;
      if (is_mask_op(b->values[ops[k]].op) != want_mask) return "a JIT operand of the wrong kind";
    }
  }
  if (is_mask_op(b->values[b->count - 1].op)) return "a JIT result that is a mask";
  return NULL;
}

typedef struct plan {
  int last[HL_JIT_MAX_VALUES];  // index of the last user (count: the store)
  int slot[HL_JIT_MAX_VALUES];
} plan_t;

// Assigns each value a slot of `unroll` registers; false when more than
// VALUE_REGS / unroll values are live at once.
static bool allocate(const hl_jit_body_t *b, int unroll, plan_t *pl) {
  int slots = VALUE_REGS / unroll;
  bool busy[VALUE_REGS] = {false};
  for (int i = 0; i < b->count; i++) {
    const hl_jit_value_t *v = &b->values[i];
    const int ops[3] = {v->a, v->b, v->c};
    for (int k = 0; k < arity(v->op); k++)
      if (pl->last[ops[k]] == i) busy[pl->slot[ops[k]]] = false;
    int s = 0;
    while (s < slots && busy[s]) s++;
    if (s == slots) return false;
    busy[s] = true;
    pl->slot[i] = s;
    if (pl->last[i] == i) busy[s] = false;  // never used
  }
  return true;
}

typedef struct emitter {
  hl_x86_buf_t *buf;
  const hl_jit_body_t *b;
  const plan_t *pl;
  int unroll;
  int frame;  // bytes below the saved registers: spill slots of live values around calls
  // General registers: the running offset, the end offset, the output, the
  // lane mask, each input's pointer; scalar inputs may instead sit broadcast
  // in the frame (scalar_at >= 0). save_gprs: calls push the caller-saved ones.
  int idx, end, out, mask;
  int base[HL_JIT_MAX_INPUTS], scalar_at[HL_JIT_MAX_INPUTS];
  bool save_gprs;
  int pp;     // 66 for f64
  int bytes;  // per vector: 32
  bool stream;  // results stored non-temporally (vmovntps / vmovntpd), then sfence
  // RIP-relative uses of the sign / abs masks, patched once the pool is placed.
  struct {
    size_t disp, end;
    int which;
  } fix[HL_JIT_MAX_VALUES * 9];  // one per NEG / ABS copy: main (4), single (1), stream (4)
  int nfix;
} emitter_t;

static int reg_of(const emitter_t *e, int value, int u) { return e->pl->slot[value] * e->unroll + u; }

static void vop(emitter_t *e, uint8_t opcode, int d, int a, int c, int imm) {
  hl_x86_vex(e->buf, HL_X86_MAP_0F, e->pp, 0, 1, opcode, d, a, hl_x86_reg(c), imm);
}

static void blendv(emitter_t *e, int d, int if_clear, int if_set, int mask) {
  hl_x86_vex(e->buf, HL_X86_MAP_0F3A, HL_X86_PP_66, 0, 1, e->pp ? 0x4B : 0x4A, d, if_clear,
             hl_x86_reg(if_set), mask << 4);
}

// Every vector register and the loop's caller-saved general registers die
// in a call: live values go to their slot of the frame, the general ones
// on the stack (8 pushes keep the call 16-byte aligned, see emit_function).
#define CALLER_SAVED 9
static const int kCallerSaved[CALLER_SAVED] = {HL_X86_RAX, HL_X86_RCX, HL_X86_RDX,
                                               HL_X86_RSI, HL_X86_RDI, HL_X86_R8,
                                               HL_X86_R9,  HL_X86_R10, HL_X86_R11};

static void spill_live(emitter_t *e, int i, bool restore) {
  for (int j = 0; j < i; j++) {
    if (e->pl->last[j] <= i) continue;  // not read after the call (masks included)
    hl_x86_rm_t slot = hl_x86_mem(HL_X86_RSP, HL_X86_NONE, 32 * e->pl->slot[j]);
    hl_x86_vex(e->buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, restore ? 0x10 : 0x11,
               reg_of(e, j, 0), HL_X86_NONE, slot, -1);
  }
}

static void emit_call(emitter_t *e, int i, int a, int d) {
  const hl_jit_value_t *v = &e->b->values[i];
  spill_live(e, i, false);
  hl_x86_vex(e->buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, 0x28, 0, HL_X86_NONE, hl_x86_reg(a), -1);
  // Lanes past the end of a partial vector become +0, as in the array
  // loop's zero-padded copy: SLEEF may round every lane differently when
  // one lane is out of its fast range.
  hl_x86_vex(e->buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, 0x54, 0, 0,
             hl_x86_mem(e->mask, HL_X86_NONE, 0), -1);
  if (e->save_gprs)
    for (int k = 0; k < CALLER_SAVED; k++) hl_x86_push(e->buf, kCallerSaved[k]);
  uint64_t addr;
  memcpy(&addr, &v->fn, sizeof(addr));
  hl_x86_mov_imm64(e->buf, HL_X86_RAX, addr);
  hl_x86_call(e->buf, HL_X86_RAX);
  if (e->save_gprs)
    for (int k = CALLER_SAVED - 1; k >= 0; k--) hl_x86_pop(e->buf, kCallerSaved[k]);
  hl_x86_vex(e->buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, 0x28, S2, HL_X86_NONE, hl_x86_reg(0), -1);
  spill_live(e, i, true);
  hl_x86_vex(e->buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, 0x28, d, HL_X86_NONE, hl_x86_reg(S2), -1);
}

static void emit_value(emitter_t *e, int i, int u) {
  const hl_jit_value_t *v = &e->b->values[i];
  int d = reg_of(e, i, u);
  int a = arity(v->op) > 0 ? reg_of(e, v->a, u) : 0;
  int c = arity(v->op) > 1 ? reg_of(e, v->b, u) : 0;
  switch (v->op) {
    case HL_JIT_LOAD:
      hl_x86_vex(e->buf, HL_X86_MAP_0F, e->pp, 0, 1, 0x10, d, HL_X86_NONE,
                 hl_x86_mem(e->base[v->a], e->idx, u * e->bytes), -1);
      return;
    case HL_JIT_BROADCAST:
      if (e->scalar_at[v->a] >= 0) {
        hl_x86_vex(e->buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, 0x10, d, HL_X86_NONE,
                   hl_x86_mem(HL_X86_RSP, HL_X86_NONE, e->scalar_at[v->a]), -1);
        return;
      }
      hl_x86_vex(e->buf, HL_X86_MAP_0F38, HL_X86_PP_66, 0, 1, e->pp ? 0x19 : 0x18, d, HL_X86_NONE,
                 hl_x86_mem(e->base[v->a], HL_X86_NONE, 0), -1);
      return;
    case HL_JIT_ADD: vop(e, 0x58, d, a, c, -1); return;
    case HL_JIT_MUL: vop(e, 0x59, d, a, c, -1); return;
    case HL_JIT_SUB: vop(e, 0x5C, d, a, c, -1); return;
    case HL_JIT_DIV: vop(e, 0x5E, d, a, c, -1); return;
    case HL_JIT_SQRT:
      hl_x86_vex(e->buf, HL_X86_MAP_0F, e->pp, 0, 1, 0x51, d, HL_X86_NONE, hl_x86_reg(a), -1);
      return;
    case HL_JIT_NEG:
    case HL_JIT_ABS: {
      size_t at = hl_x86_vex(e->buf, HL_X86_MAP_0F, e->pp, 0, 1, v->op == HL_JIT_NEG ? 0x57 : 0x54,
                             d, a, hl_x86_rip(0), -1);
      e->fix[e->nfix].disp = at;
      e->fix[e->nfix].end = e->buf->len;
      e->fix[e->nfix].which = v->op == HL_JIT_NEG ? 0 : 1;
      e->nfix++;
      return;
    }
    case HL_JIT_MAX:
    case HL_JIT_MIN: {
      // vmaxps gives b when either is NaN and b for equal operands; XLA
      // wants a NaN a (else b) and +0 over -0 (min: -0): equal lanes take
      // a AND b (OR for min), NaN lanes of a take a.
      bool max = v->op == HL_JIT_MAX;
      vop(e, max ? 0x54 : 0x56, S0, a, c, -1);  // and / or
      vop(e, max ? 0x5F : 0x5D, S1, a, c, -1);  // max / min
      vop(e, 0xC2, S2, a, c, 0x00);             // a == b (ordered)
      blendv(e, S1, S1, S0, S2);
      vop(e, 0xC2, S2, a, a, 0x03);  // a unordered: NaN
      blendv(e, d, S1, a, S2);
      return;
    }
    case HL_JIT_CMP_EQ: vop(e, 0xC2, d, a, c, 0x00); return;  // EQ_OQ
    case HL_JIT_CMP_NE: vop(e, 0xC2, d, a, c, 0x04); return;  // NEQ_UQ
    case HL_JIT_CMP_LT: vop(e, 0xC2, d, a, c, 0x01); return;  // LT_OS
    case HL_JIT_CMP_LE: vop(e, 0xC2, d, a, c, 0x02); return;  // LE_OS
    case HL_JIT_CMP_GT: vop(e, 0xC2, d, a, c, 0x0E); return;  // GT_OS
    case HL_JIT_CMP_GE: vop(e, 0xC2, d, a, c, 0x0D); return;  // GE_OS
    case HL_JIT_SELECT:
      blendv(e, d, reg_of(e, v->c, u), c, a);
      return;
    case HL_JIT_CALL:
      emit_call(e, i, a, d);
      return;
  }
}

// Callee-saved registers, for loops with calls whose state fits in them.
static const int kKept[6] = {HL_X86_RBX, HL_X86_RBP, HL_X86_R12,
                             HL_X86_R13, HL_X86_R14, HL_X86_R15};

// Register plan: without calls, or with more vector inputs than fit, the
// loop state sits in rcx / rdx / rsi / rdi and inputs in kBase (calls then
// push the caller-saved ones); with calls and at most two vector inputs,
// all of it sits in callee-saved registers and scalar inputs are broadcast
// once into the frame, so a call saves no general register.
static void plan_registers(emitter_t *e, bool calls) {
  const hl_jit_body_t *b = e->b;
  int vectors = 0;
  for (int i = 0; i < b->input_count; i++) vectors += !b->input_scalar[i];
  for (int i = 0; i < b->input_count; i++) e->scalar_at[i] = -1;
  if (calls && vectors <= 2) {
    e->idx = HL_X86_RBX;
    e->end = HL_X86_RBP;
    e->out = HL_X86_R12;
    e->mask = HL_X86_R13;
    int next = 4, slot = 32 * VALUE_REGS;
    for (int i = 0; i < b->input_count; i++) {
      if (b->input_scalar[i]) {
        e->scalar_at[i] = slot;
        slot += 32;
      } else {
        e->base[i] = kKept[next++];
      }
    }
    e->save_gprs = false;
    return;
  }
  e->idx = HL_X86_RCX;
  e->end = HL_X86_RDX;
  e->out = HL_X86_RSI;
  e->mask = HL_X86_RDI;
  for (int i = 0; i < b->input_count; i++) e->base[i] = kBase[i];
  e->save_gprs = calls;
}

static void emit_function(emitter_t *e) {
  hl_x86_buf_t *buf = e->buf;
  const hl_jit_body_t *b = e->b;
  bool kept = e->frame && !e->save_gprs;
  int pushed = 0, scalars = 0;
  if (kept) {
    for (int k = 0; k < 6; k++) hl_x86_push(buf, kKept[k]);
    pushed = 6;
  } else {
    for (int i = 0; i < b->input_count; i++)
      if (callee_saved(kBase[i])) {
        hl_x86_push(buf, kBase[i]);
        pushed++;
      }
  }
  for (int i = 0; i < b->input_count; i++) scalars += e->scalar_at[i] >= 0;
  // Entry: rsp = 8 mod 16 (the return address); the frame makes rsp 16-byte
  // aligned at the calls (after the CALLER_SAVED, an odd count, pushes
  // around them where those are saved).
  int frame = 0;
  if (e->frame) {
    frame = e->frame + 32 * scalars;
    int pushes_at_call = pushed + (e->save_gprs ? CALLER_SAVED : 0);
    if ((8 + 8 * pushes_at_call + frame) % 16) frame += 8;
  }
  if (frame) hl_x86_sub_imm64(buf, HL_X86_RSP, frame);
  for (int i = 0; i < b->input_count; i++) {
    hl_x86_rm_t ptr = hl_x86_mem(HL_X86_RDI, HL_X86_NONE, 8 * i);
    if (e->scalar_at[i] < 0) {
      hl_x86_mov_load64(buf, e->base[i], ptr);
      continue;
    }
    hl_x86_mov_load64(buf, HL_X86_RAX, ptr);
    hl_x86_vex(buf, HL_X86_MAP_0F38, HL_X86_PP_66, 0, 1, e->pp ? 0x19 : 0x18, S2, HL_X86_NONE,
               hl_x86_mem(HL_X86_RAX, HL_X86_NONE, 0), -1);
    hl_x86_vex(buf, HL_X86_MAP_0F, HL_X86_PP_NONE, 0, 1, 0x11, S2, HL_X86_NONE,
               hl_x86_mem(HL_X86_RSP, HL_X86_NONE, e->scalar_at[i]), -1);
  }
  if (kept) {
    hl_x86_mov64(buf, e->out, HL_X86_RSI);
    hl_x86_mov64(buf, e->end, HL_X86_RDX);
    hl_x86_mov64(buf, e->mask, HL_X86_RCX);
  } else if (e->frame) {
    hl_x86_mov64(buf, HL_X86_RDI, HL_X86_RCX);  // the lane mask, for calls
  }
  hl_x86_xor32(buf, e->idx, e->idx);
  size_t top = buf->len;
  for (int i = 0; i < b->count; i++)
    for (int u = 0; u < e->unroll; u++) emit_value(e, i, u);
  // vmovups / vmovupd, or vmovntps / vmovntpd (aligned) when streaming.
  for (int u = 0; u < e->unroll; u++)
    hl_x86_vex(buf, HL_X86_MAP_0F, e->pp, 0, 1, e->stream ? 0x2B : 0x11,
               reg_of(e, b->count - 1, u), HL_X86_NONE,
               hl_x86_mem(e->out, e->idx, u * e->bytes), -1);
  hl_x86_add_imm64(buf, e->idx, e->unroll * e->bytes);
  hl_x86_cmp64(buf, e->idx, e->end);
  hl_x86_jb(buf, top);
  if (e->stream) {
    // sfence: the weakly ordered stores are visible before the caller
    // reports the block done.
    hl_x86_byte(buf, 0x0F);
    hl_x86_byte(buf, 0xAE);
    hl_x86_byte(buf, 0xF8);
  }
  hl_x86_vzeroupper(buf);
  if (frame) hl_x86_add_imm64(buf, HL_X86_RSP, frame);
  if (kept) {
    for (int k = 5; k >= 0; k--) hl_x86_pop(buf, kKept[k]);
  } else {
    for (int i = b->input_count - 1; i >= 0; i--)
      if (callee_saved(kBase[i])) hl_x86_pop(buf, kBase[i]);
  }
  hl_x86_ret(buf);
}

const char *hl_jit_compile_loop(const hl_jit_body_t *b, hl_jit_code_t *out) {
  memset(out, 0, sizeof(*out));
  const char *why = check_body(b);
  if (why) return why;
  static const int kUnrolls[] = {4, 2, 1};
  plan_t pl_main, pl_single;
  for (int i = 0; i < b->count; i++) pl_main.last[i] = i;
  for (int i = 0; i < b->count; i++) {
    const hl_jit_value_t *v = &b->values[i];
    const int ops[3] = {v->a, v->b, v->c};
    for (int k = 0; k < arity(v->op); k++) pl_main.last[ops[k]] = i;
  }
  pl_main.last[b->count - 1] = b->count;
  pl_single = pl_main;
  if (!allocate(b, 1, &pl_single)) return "a JIT body with too many live values";
  int unroll = 1;
  bool calls = false;
  for (int i = 0; i < b->count; i++) calls |= b->values[i].op == HL_JIT_CALL;
  // A call saves live registers of one copy: calls run one vector per iteration.
  for (int k = 0; k < 3 && unroll == 1 && !calls; k++)
    if (kUnrolls[k] > 1 && allocate(b, kUnrolls[k], &pl_main)) unroll = kUnrolls[k];
  if (unroll == 1) pl_main = pl_single;

  emitter_t *e = calloc(1, sizeof(*e));
  if (!e) return "out of memory compiling a JIT body";
  e->buf = &out->bytes;
  e->b = b;
  e->pp = b->type == HL_JIT_F64 ? HL_X86_PP_66 : HL_X86_PP_NONE;
  e->bytes = 32;
  e->frame = calls ? 32 * VALUE_REGS : 0;
  plan_registers(e, calls);
  out->main_entry = 0;
  e->pl = &pl_main;
  e->unroll = unroll;
  emit_function(e);
  out->single_entry = out->bytes.len;
  e->pl = &pl_single;
  e->unroll = 1;
  emit_function(e);
  // Loops that call out store one vector between calls: half lines, which
  // streaming stores would send to memory piecemeal; they have no stream.
  out->stream_entry = calls ? out->main_entry : out->bytes.len;
  if (!calls) {
    e->pl = &pl_main;
    e->unroll = unroll;
    e->stream = true;
    emit_function(e);
  }
  // Constant pool: sign mask, then abs mask, 32 bytes each.
  while (out->bytes.len % 32) hl_x86_byte(&out->bytes, 0xCC);
  size_t pool = out->bytes.len;
  for (int which = 0; which < 2; which++)
    for (int k = 0; k < 8; k++) {
      uint32_t sign = b->type == HL_JIT_F64 ? (k % 2 ? 0x80000000u : 0) : 0x80000000u;
      hl_x86_u32(&out->bytes, which == 0 ? sign : ~sign);
    }
  if (!out->bytes.failed)
    for (int f = 0; f < e->nfix; f++) {
      int32_t rel = (int32_t)(pool + 32 * (size_t)e->fix[f].which - e->fix[f].end);
      memcpy(out->bytes.data + e->fix[f].disp, &rel, 4);
    }
  out->unroll = unroll;
  free(e);
  if (out->bytes.failed) {
    hl_x86_buf_free(&out->bytes);
    return "out of memory compiling a JIT body";
  }
  return NULL;
}
