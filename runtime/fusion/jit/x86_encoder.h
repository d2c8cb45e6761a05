// A byte encoder for the small x86-64 subset the fusion JIT emits: 256-bit
// AVX/AVX2 instructions in their VEX form (the 2-byte prefix where it
// applies, as assemblers choose it), and the few general-purpose
// instructions of a counted loop. Every emitted byte sequence is the one
// GNU as produces for the same instruction (tests/unit/test_fusion_jit_encoder.c).
#ifndef HL_RUNTIME_FUSION_JIT_X86_ENCODER_H_
#define HL_RUNTIME_FUSION_JIT_X86_ENCODER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// General-purpose registers by their encoding number.
enum {
  HL_X86_RAX, HL_X86_RCX, HL_X86_RDX, HL_X86_RBX, HL_X86_RSP, HL_X86_RBP, HL_X86_RSI,
  HL_X86_RDI, HL_X86_R8, HL_X86_R9, HL_X86_R10, HL_X86_R11, HL_X86_R12, HL_X86_R13,
  HL_X86_R14, HL_X86_R15,
};
#define HL_X86_NONE (-1)

// VEX opcode maps and implied prefixes.
enum { HL_X86_MAP_0F = 1, HL_X86_MAP_0F38 = 2, HL_X86_MAP_0F3A = 3 };
enum { HL_X86_PP_NONE = 0, HL_X86_PP_66 = 1, HL_X86_PP_F3 = 2, HL_X86_PP_F2 = 3 };

// The r/m operand: a register, [base + index + disp] (index scale 1), or
// [rip + disp32].
typedef struct hl_x86_rm {
  enum { HL_X86_RM_REG, HL_X86_RM_MEM, HL_X86_RM_RIP } kind;
  int reg;          // RM_REG
  int base, index;  // RM_MEM; index HL_X86_NONE for none (never rsp)
  int32_t disp;
} hl_x86_rm_t;

hl_x86_rm_t hl_x86_reg(int reg);
hl_x86_rm_t hl_x86_mem(int base, int index, int32_t disp);
hl_x86_rm_t hl_x86_rip(int32_t disp);

// Growing code buffer; `failed` once an allocation failed (bytes are then
// dropped, the caller checks once at the end).
typedef struct hl_x86_buf {
  uint8_t *data;
  size_t len, cap;
  bool failed;
} hl_x86_buf_t;

void hl_x86_buf_free(hl_x86_buf_t *b);
void hl_x86_byte(hl_x86_buf_t *b, uint8_t v);
void hl_x86_u32(hl_x86_buf_t *b, uint32_t v);

// One VEX instruction: `reg` is ModRM.reg (the destination, or the source
// of a store), `vvvv` the second source (HL_X86_NONE: unused), `rm` the
// ModRM.rm operand; an imm8 follows when imm >= 0. Returns the offset of the
// disp32 field of a RIP-relative operand (for the caller to patch), else 0.
size_t hl_x86_vex(hl_x86_buf_t *b, int map, int pp, int w, int l256, uint8_t opcode, int reg,
                  int vvvv, hl_x86_rm_t rm, int imm);

void hl_x86_push(hl_x86_buf_t *b, int reg);
void hl_x86_pop(hl_x86_buf_t *b, int reg);
void hl_x86_mov_load64(hl_x86_buf_t *b, int dst, hl_x86_rm_t src);  // mov dst, qword [src]
void hl_x86_mov64(hl_x86_buf_t *b, int dst, int src);               // mov dst, src
void hl_x86_xor32(hl_x86_buf_t *b, int dst, int src);               // xor dst32, src32
void hl_x86_add_imm64(hl_x86_buf_t *b, int dst, int32_t imm);       // add dst, imm
void hl_x86_cmp64(hl_x86_buf_t *b, int a, int c);                   // cmp a, c (flags of a - c)
// jb (unsigned below) to the absolute code offset `target` (rel8 when it fits).
void hl_x86_jb(hl_x86_buf_t *b, size_t target);
void hl_x86_sub_imm64(hl_x86_buf_t *b, int dst, int32_t imm);      // sub dst, imm32
void hl_x86_mov_imm64(hl_x86_buf_t *b, int dst, uint64_t imm);      // movabs dst, imm64
void hl_x86_call(hl_x86_buf_t *b, int reg);                         // call reg
void hl_x86_vzeroupper(hl_x86_buf_t *b);
void hl_x86_ret(hl_x86_buf_t *b);

#endif  // HL_RUNTIME_FUSION_JIT_X86_ENCODER_H_
