// x86-64 encodings (Intel SDM vol. 2, ch. 2: REX, ModRM/SIB, VEX).
#include "runtime/fusion/jit/x86_encoder.h"

#include <stdlib.h>
#include <string.h>

hl_x86_rm_t hl_x86_reg(int reg) { return (hl_x86_rm_t){.kind = HL_X86_RM_REG, .reg = reg}; }

hl_x86_rm_t hl_x86_mem(int base, int index, int32_t disp) {
  return (hl_x86_rm_t){.kind = HL_X86_RM_MEM, .base = base, .index = index, .disp = disp};
}

hl_x86_rm_t hl_x86_rip(int32_t disp) { return (hl_x86_rm_t){.kind = HL_X86_RM_RIP, .disp = disp}; }

void hl_x86_buf_free(hl_x86_buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

void hl_x86_byte(hl_x86_buf_t *b, uint8_t v) {
  if (b->len == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    uint8_t *d = realloc(b->data, cap);
    if (!d) {
      b->failed = true;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
  b->data[b->len++] = v;
}

void hl_x86_u32(hl_x86_buf_t *b, uint32_t v) {
  for (int i = 0; i < 4; i++) hl_x86_byte(b, (uint8_t)(v >> (8 * i)));
}

// High (REX/VEX extension) bit of an operand's base and index.
static int rm_base_hi(hl_x86_rm_t rm) {
  if (rm.kind == HL_X86_RM_REG) return rm.reg >> 3;
  return rm.kind == HL_X86_RM_MEM ? rm.base >> 3 : 0;
}
static int rm_index_hi(hl_x86_rm_t rm) {
  return rm.kind == HL_X86_RM_MEM && rm.index != HL_X86_NONE ? rm.index >> 3 : 0;
}

// ModRM (+ SIB + displacement); returns the offset of a RIP disp32.
static size_t modrm(hl_x86_buf_t *b, int reg, hl_x86_rm_t rm) {
  int r = reg & 7;
  if (rm.kind == HL_X86_RM_REG) {
    hl_x86_byte(b, (uint8_t)(0xC0 | r << 3 | (rm.reg & 7)));
    return 0;
  }
  if (rm.kind == HL_X86_RM_RIP) {
    hl_x86_byte(b, (uint8_t)(r << 3 | 5));
    size_t at = b->len;
    hl_x86_u32(b, (uint32_t)rm.disp);
    return at;
  }
  int base = rm.base & 7;
  // rbp/r13 as base have no mod=00 form (it means disp32 / no base).
  int mod = rm.disp == 0 && base != 5 ? 0 : (rm.disp >= -128 && rm.disp <= 127 ? 1 : 2);
  bool sib = rm.index != HL_X86_NONE || base == 4;  // rsp/r12 as base need a SIB
  hl_x86_byte(b, (uint8_t)(mod << 6 | r << 3 | (sib ? 4 : base)));
  if (sib) {
    int index = rm.index == HL_X86_NONE ? 4 : (rm.index & 7);
    hl_x86_byte(b, (uint8_t)(index << 3 | base));  // scale 1
  }
  if (mod == 1) hl_x86_byte(b, (uint8_t)(int8_t)rm.disp);
  if (mod == 2) hl_x86_u32(b, (uint32_t)rm.disp);
  return 0;
}

size_t hl_x86_vex(hl_x86_buf_t *b, int map, int pp, int w, int l256, uint8_t opcode, int reg,
                  int vvvv, hl_x86_rm_t rm, int imm) {
  int nr = !(reg >> 3), nx = !rm_index_hi(rm), nb = !rm_base_hi(rm);
  int v = vvvv == HL_X86_NONE ? 15 : (~vvvv & 15);
  if (map == HL_X86_MAP_0F && !w && nx && nb) {
    hl_x86_byte(b, 0xC5);
    hl_x86_byte(b, (uint8_t)(nr << 7 | v << 3 | (l256 ? 4 : 0) | pp));
  } else {
    hl_x86_byte(b, 0xC4);
    hl_x86_byte(b, (uint8_t)(nr << 7 | nx << 6 | nb << 5 | map));
    hl_x86_byte(b, (uint8_t)((w ? 0x80 : 0) | v << 3 | (l256 ? 4 : 0) | pp));
  }
  hl_x86_byte(b, opcode);
  size_t at = modrm(b, reg, rm);
  if (imm >= 0) hl_x86_byte(b, (uint8_t)imm);
  return at;
}

static void rex(hl_x86_buf_t *b, int w, int reg, hl_x86_rm_t rm) {
  int v = 0x40 | (w ? 8 : 0) | (reg >> 3) << 2 | rm_index_hi(rm) << 1 | rm_base_hi(rm);
  if (v != 0x40) hl_x86_byte(b, (uint8_t)v);
}

void hl_x86_push(hl_x86_buf_t *b, int reg) {
  if (reg >> 3) hl_x86_byte(b, 0x41);
  hl_x86_byte(b, (uint8_t)(0x50 + (reg & 7)));
}

void hl_x86_pop(hl_x86_buf_t *b, int reg) {
  if (reg >> 3) hl_x86_byte(b, 0x41);
  hl_x86_byte(b, (uint8_t)(0x58 + (reg & 7)));
}

void hl_x86_mov_load64(hl_x86_buf_t *b, int dst, hl_x86_rm_t src) {
  rex(b, 1, dst, src);
  hl_x86_byte(b, 0x8B);
  modrm(b, dst, src);
}

void hl_x86_mov64(hl_x86_buf_t *b, int dst, int src) {
  rex(b, 1, src, hl_x86_reg(dst));
  hl_x86_byte(b, 0x89);
  modrm(b, src, hl_x86_reg(dst));
}

void hl_x86_xor32(hl_x86_buf_t *b, int dst, int src) {
  rex(b, 0, src, hl_x86_reg(dst));
  hl_x86_byte(b, 0x31);
  modrm(b, src, hl_x86_reg(dst));
}

void hl_x86_add_imm64(hl_x86_buf_t *b, int dst, int32_t imm) {
  rex(b, 1, 0, hl_x86_reg(dst));
  bool small = imm >= -128 && imm <= 127;
  hl_x86_byte(b, small ? 0x83 : 0x81);
  modrm(b, 0, hl_x86_reg(dst));
  if (small)
    hl_x86_byte(b, (uint8_t)(int8_t)imm);
  else
    hl_x86_u32(b, (uint32_t)imm);
}

void hl_x86_cmp64(hl_x86_buf_t *b, int a, int c) {
  rex(b, 1, c, hl_x86_reg(a));
  hl_x86_byte(b, 0x39);
  modrm(b, c, hl_x86_reg(a));
}

void hl_x86_jb(hl_x86_buf_t *b, size_t target) {
  int64_t rel8 = (int64_t)target - (int64_t)(b->len + 2);
  if (rel8 >= -128 && rel8 <= 127) {
    hl_x86_byte(b, 0x72);
    hl_x86_byte(b, (uint8_t)(int8_t)rel8);
    return;
  }
  hl_x86_byte(b, 0x0F);
  hl_x86_byte(b, 0x82);
  hl_x86_u32(b, (uint32_t)(int32_t)((int64_t)target - (int64_t)(b->len + 4)));
}

void hl_x86_sub_imm64(hl_x86_buf_t *b, int dst, int32_t imm) {
  rex(b, 1, 0, hl_x86_reg(dst));
  hl_x86_byte(b, 0x81);
  modrm(b, 5, hl_x86_reg(dst));
  hl_x86_u32(b, (uint32_t)imm);
}

void hl_x86_mov_imm64(hl_x86_buf_t *b, int dst, uint64_t imm) {
  hl_x86_byte(b, (uint8_t)(0x48 | (dst >> 3)));
  hl_x86_byte(b, (uint8_t)(0xB8 + (dst & 7)));
  for (int i = 0; i < 8; i++) hl_x86_byte(b, (uint8_t)(imm >> (8 * i)));
}

void hl_x86_call(hl_x86_buf_t *b, int reg) {
  if (reg >> 3) hl_x86_byte(b, 0x41);
  hl_x86_byte(b, 0xFF);
  modrm(b, 2, hl_x86_reg(reg));
}

void hl_x86_vzeroupper(hl_x86_buf_t *b) {
  hl_x86_byte(b, 0xC5);
  hl_x86_byte(b, 0xF8);
  hl_x86_byte(b, 0x77);
}

void hl_x86_ret(hl_x86_buf_t *b) { hl_x86_byte(b, 0xC3); }
