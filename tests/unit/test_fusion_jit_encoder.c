// The x86-64 encoder (runtime/fusion/jit/x86_encoder.c) against GNU as:
// every expected byte string below is what `as --64` (binutils) produced for
// the instruction named beside it (Intel syntax, objdump -d -M intel), so an
// encoding bug in a prefix, ModRM/SIB, displacement or VEX field fails here.
// The jb cases are hand-checked (rel8 / rel32 from the end of the jump).
// hl-test-libs: hl_exec hl_base
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "runtime/fusion/jit/x86_encoder.h"
#include "tests/unit/test_util.h"

typedef struct expected {
  const char *text;
  uint8_t bytes[16];
  int len;
} expected_t;

static const expected_t kCases[] = {
    {"vmovups ymm0,YMMWORD PTR [r8+rcx*1]", {0xc4, 0xc1, 0x7c, 0x10, 0x04, 0x08}, 6},
    {"vmovups ymm3,YMMWORD PTR [rax+rcx*1+0x20]", {0xc5, 0xfc, 0x10, 0x5c, 0x08, 0x20}, 6},
    {"vmovups ymm12,YMMWORD PTR [rbp+rcx*1+0x0]", {0xc5, 0x7c, 0x10, 0x64, 0x0d, 0x00}, 6},
    {"vmovups ymm1,YMMWORD PTR [r13+rcx*1+0x60]", {0xc4, 0xc1, 0x7c, 0x10, 0x4c, 0x0d, 0x60}, 7},
    {"vmovups ymm2,YMMWORD PTR [r12+rcx*1+0x80]", {0xc4, 0xc1, 0x7c, 0x10, 0x94, 0x0c, 0x80, 0x00, 0x00, 0x00}, 10},
    {"vmovupd ymm5,YMMWORD PTR [r15+rcx*1]", {0xc4, 0xc1, 0x7d, 0x10, 0x2c, 0x0f}, 6},
    {"vmovups YMMWORD PTR [rsi+rcx*1+0x40],ymm9", {0xc5, 0x7c, 0x11, 0x4c, 0x0e, 0x40}, 6},
    {"vmovupd YMMWORD PTR [rsi+rcx*1],ymm4", {0xc5, 0xfd, 0x11, 0x24, 0x0e}, 5},
    {"vbroadcastss ymm7,DWORD PTR [r13+0x0]", {0xc4, 0xc2, 0x7d, 0x18, 0x7d, 0x00}, 6},
    {"vbroadcastss ymm0,DWORD PTR [r12]", {0xc4, 0xc2, 0x7d, 0x18, 0x04, 0x24}, 6},
    {"vbroadcastsd ymm11,QWORD PTR [rbx]", {0xc4, 0x62, 0x7d, 0x19, 0x1b}, 5},
    {"vbroadcastss ymm1,DWORD PTR [rbp+0x0]", {0xc4, 0xe2, 0x7d, 0x18, 0x4d, 0x00}, 6},
    {"vaddps ymm0,ymm1,ymm2", {0xc5, 0xf4, 0x58, 0xc2}, 4},
    {"vaddps ymm9,ymm10,ymm12", {0xc4, 0x41, 0x2c, 0x58, 0xcc}, 5},
    {"vaddps ymm3,ymm11,ymm4", {0xc5, 0xa4, 0x58, 0xdc}, 4},
    {"vaddpd ymm0,ymm1,ymm2", {0xc5, 0xf5, 0x58, 0xc2}, 4},
    {"vsubps ymm4,ymm5,ymm6", {0xc5, 0xd4, 0x5c, 0xe6}, 4},
    {"vmulps ymm12,ymm0,ymm8", {0xc4, 0x41, 0x7c, 0x59, 0xe0}, 5},
    {"vdivpd ymm1,ymm2,ymm3", {0xc5, 0xed, 0x5e, 0xcb}, 4},
    {"vmaxps ymm14,ymm1,ymm2", {0xc5, 0x74, 0x5f, 0xf2}, 4},
    {"vminpd ymm13,ymm1,ymm2", {0xc5, 0x75, 0x5d, 0xea}, 4},
    {"vandps ymm13,ymm0,ymm1", {0xc5, 0x7c, 0x54, 0xe9}, 4},
    {"vorps ymm13,ymm0,ymm1", {0xc5, 0x7c, 0x56, 0xe9}, 4},
    {"vxorps ymm2,ymm3,YMMWORD PTR [rip+0x100]", {0xc5, 0xe4, 0x57, 0x15, 0x00, 0x01, 0x00, 0x00}, 8},
    {"vandpd ymm2,ymm3,YMMWORD PTR [rip+0xffffffffffffffc0]", {0xc5, 0xe5, 0x54, 0x15, 0xc0, 0xff, 0xff, 0xff}, 8},
    {"vsqrtps ymm5,ymm6", {0xc5, 0xfc, 0x51, 0xee}, 4},
    {"vsqrtpd ymm9,ymm10", {0xc4, 0x41, 0x7d, 0x51, 0xca}, 5},
    {"vcmpeqps ymm15,ymm1,ymm2", {0xc5, 0x74, 0xc2, 0xfa, 0x00}, 5},
    {"vcmpunordps ymm15,ymm1,ymm1", {0xc5, 0x74, 0xc2, 0xf9, 0x03}, 5},
    {"vcmpgtpd ymm2,ymm3,ymm4", {0xc5, 0xe5, 0xc2, 0xd4, 0x0e}, 5},
    {"vblendvps ymm14,ymm14,ymm13,ymm15", {0xc4, 0x43, 0x0d, 0x4a, 0xf5, 0xf0}, 6},
    {"vblendvps ymm0,ymm1,ymm2,ymm3", {0xc4, 0xe3, 0x75, 0x4a, 0xc2, 0x30}, 6},
    {"vblendvpd ymm9,ymm10,ymm11,ymm12", {0xc4, 0x43, 0x2d, 0x4b, 0xcb, 0xc0}, 6},
    {"push rbx", {0x53}, 1},
    {"push r12", {0x41, 0x54}, 2},
    {"pop r15", {0x41, 0x5f}, 2},
    {"pop rbp", {0x5d}, 1},
    {"mov r8,QWORD PTR [rdi+0x8]", {0x4c, 0x8b, 0x47, 0x08}, 4},
    {"mov rax,QWORD PTR [rdi]", {0x48, 0x8b, 0x07}, 3},
    {"mov r13,QWORD PTR [rdi+0x30]", {0x4c, 0x8b, 0x6f, 0x30}, 4},
    {"mov rbp,QWORD PTR [rdi+0x20]", {0x48, 0x8b, 0x6f, 0x20}, 4},
    {"mov r12,QWORD PTR [rdi+0x38]", {0x4c, 0x8b, 0x67, 0x38}, 4},
    {"xor ecx,ecx", {0x31, 0xc9}, 2},
    {"add rcx,0x20", {0x48, 0x83, 0xc1, 0x20}, 4},
    {"add rcx,0x80", {0x48, 0x81, 0xc1, 0x80, 0x00, 0x00, 0x00}, 7},
    {"cmp rcx,rdx", {0x48, 0x39, 0xd1}, 3},
    {"vzeroupper", {0xc5, 0xf8, 0x77}, 3},
    {"ret", {0xc3}, 1},
    {"mov rdi,rcx", {0x48, 0x89, 0xcf}, 3},
    {"vandps ymm0,ymm0,YMMWORD PTR [rdi]", {0xc5, 0xfc, 0x54, 0x07}, 4},
    {"sub rsp,0x1a8", {0x48, 0x81, 0xec, 0xa8, 0x01, 0x00, 0x00}, 7},
    {"add rsp,0x1a8", {0x48, 0x81, 0xc4, 0xa8, 0x01, 0x00, 0x00}, 7},
    {"movabs rax,0x123456789abcdef0", {0x48, 0xb8, 0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12}, 10},
    {"call rax", {0xff, 0xd0}, 2},
    {"vmovaps ymm0,ymm5", {0xc5, 0xfc, 0x28, 0xc5}, 4},
    {"vmovaps ymm15,ymm0", {0xc5, 0x7c, 0x28, 0xf8}, 4},
    {"vmovups YMMWORD PTR [rsp+0x40],ymm3", {0xc5, 0xfc, 0x11, 0x5c, 0x24, 0x40}, 6},
    {"vmovups ymm3,YMMWORD PTR [rsp+0x180]", {0xc5, 0xfc, 0x10, 0x9c, 0x24, 0x80, 0x01, 0x00, 0x00}, 9},
    {"push rdi", {0x57}, 1},
    {"pop rdi", {0x5f}, 1},

};

static void emit(int i, hl_x86_buf_t *b) {
  const int M = HL_X86_MAP_0F, M38 = HL_X86_MAP_0F38, M3A = HL_X86_MAP_0F3A;
  const int PS = HL_X86_PP_NONE, PD = HL_X86_PP_66, N = HL_X86_NONE;
  switch (i) {
    case 0: hl_x86_vex(b, M, PS, 0, 1, 0x10, 0, N, hl_x86_mem(HL_X86_R8, HL_X86_RCX, 0), -1); break;
    case 1: hl_x86_vex(b, M, PS, 0, 1, 0x10, 3, N, hl_x86_mem(HL_X86_RAX, HL_X86_RCX, 32), -1); break;
    case 2: hl_x86_vex(b, M, PS, 0, 1, 0x10, 12, N, hl_x86_mem(HL_X86_RBP, HL_X86_RCX, 0), -1); break;
    case 3: hl_x86_vex(b, M, PS, 0, 1, 0x10, 1, N, hl_x86_mem(HL_X86_R13, HL_X86_RCX, 96), -1); break;
    case 4: hl_x86_vex(b, M, PS, 0, 1, 0x10, 2, N, hl_x86_mem(HL_X86_R12, HL_X86_RCX, 128), -1); break;
    case 5: hl_x86_vex(b, M, PD, 0, 1, 0x10, 5, N, hl_x86_mem(HL_X86_R15, HL_X86_RCX, 0), -1); break;
    case 6: hl_x86_vex(b, M, PS, 0, 1, 0x11, 9, N, hl_x86_mem(HL_X86_RSI, HL_X86_RCX, 64), -1); break;
    case 7: hl_x86_vex(b, M, PD, 0, 1, 0x11, 4, N, hl_x86_mem(HL_X86_RSI, HL_X86_RCX, 0), -1); break;
    case 8: hl_x86_vex(b, M38, PD, 0, 1, 0x18, 7, N, hl_x86_mem(HL_X86_R13, N, 0), -1); break;
    case 9: hl_x86_vex(b, M38, PD, 0, 1, 0x18, 0, N, hl_x86_mem(HL_X86_R12, N, 0), -1); break;
    case 10: hl_x86_vex(b, M38, PD, 0, 1, 0x19, 11, N, hl_x86_mem(HL_X86_RBX, N, 0), -1); break;
    case 11: hl_x86_vex(b, M38, PD, 0, 1, 0x18, 1, N, hl_x86_mem(HL_X86_RBP, N, 0), -1); break;
    case 12: hl_x86_vex(b, M, PS, 0, 1, 0x58, 0, 1, hl_x86_reg(2), -1); break;
    case 13: hl_x86_vex(b, M, PS, 0, 1, 0x58, 9, 10, hl_x86_reg(12), -1); break;
    case 14: hl_x86_vex(b, M, PS, 0, 1, 0x58, 3, 11, hl_x86_reg(4), -1); break;
    case 15: hl_x86_vex(b, M, PD, 0, 1, 0x58, 0, 1, hl_x86_reg(2), -1); break;
    case 16: hl_x86_vex(b, M, PS, 0, 1, 0x5C, 4, 5, hl_x86_reg(6), -1); break;
    case 17: hl_x86_vex(b, M, PS, 0, 1, 0x59, 12, 0, hl_x86_reg(8), -1); break;
    case 18: hl_x86_vex(b, M, PD, 0, 1, 0x5E, 1, 2, hl_x86_reg(3), -1); break;
    case 19: hl_x86_vex(b, M, PS, 0, 1, 0x5F, 14, 1, hl_x86_reg(2), -1); break;
    case 20: hl_x86_vex(b, M, PD, 0, 1, 0x5D, 13, 1, hl_x86_reg(2), -1); break;
    case 21: hl_x86_vex(b, M, PS, 0, 1, 0x54, 13, 0, hl_x86_reg(1), -1); break;
    case 22: hl_x86_vex(b, M, PS, 0, 1, 0x56, 13, 0, hl_x86_reg(1), -1); break;
    case 23: hl_x86_vex(b, M, PS, 0, 1, 0x57, 2, 3, hl_x86_rip(0x100), -1); break;
    case 24: hl_x86_vex(b, M, PD, 0, 1, 0x54, 2, 3, hl_x86_rip(-0x40), -1); break;
    case 25: hl_x86_vex(b, M, PS, 0, 1, 0x51, 5, N, hl_x86_reg(6), -1); break;
    case 26: hl_x86_vex(b, M, PD, 0, 1, 0x51, 9, N, hl_x86_reg(10), -1); break;
    case 27: hl_x86_vex(b, M, PS, 0, 1, 0xC2, 15, 1, hl_x86_reg(2), 0); break;
    case 28: hl_x86_vex(b, M, PS, 0, 1, 0xC2, 15, 1, hl_x86_reg(1), 3); break;
    case 29: hl_x86_vex(b, M, PD, 0, 1, 0xC2, 2, 3, hl_x86_reg(4), 14); break;
    case 30: hl_x86_vex(b, M3A, PD, 0, 1, 0x4A, 14, 14, hl_x86_reg(13), 15 << 4); break;
    case 31: hl_x86_vex(b, M3A, PD, 0, 1, 0x4A, 0, 1, hl_x86_reg(2), 3 << 4); break;
    case 32: hl_x86_vex(b, M3A, PD, 0, 1, 0x4B, 9, 10, hl_x86_reg(11), 12 << 4); break;
    case 33: hl_x86_push(b, HL_X86_RBX); break;
    case 34: hl_x86_push(b, HL_X86_R12); break;
    case 35: hl_x86_pop(b, HL_X86_R15); break;
    case 36: hl_x86_pop(b, HL_X86_RBP); break;
    case 37: hl_x86_mov_load64(b, HL_X86_R8, hl_x86_mem(HL_X86_RDI, N, 8)); break;
    case 38: hl_x86_mov_load64(b, HL_X86_RAX, hl_x86_mem(HL_X86_RDI, N, 0)); break;
    case 39: hl_x86_mov_load64(b, HL_X86_R13, hl_x86_mem(HL_X86_RDI, N, 48)); break;
    case 40: hl_x86_mov_load64(b, HL_X86_RBP, hl_x86_mem(HL_X86_RDI, N, 32)); break;
    case 41: hl_x86_mov_load64(b, HL_X86_R12, hl_x86_mem(HL_X86_RDI, N, 56)); break;
    case 42: hl_x86_xor32(b, HL_X86_RCX, HL_X86_RCX); break;
    case 43: hl_x86_add_imm64(b, HL_X86_RCX, 32); break;
    case 44: hl_x86_add_imm64(b, HL_X86_RCX, 128); break;
    case 45: hl_x86_cmp64(b, HL_X86_RCX, HL_X86_RDX); break;
    case 46: hl_x86_vzeroupper(b); break;
    case 47: hl_x86_ret(b); break;
    case 48: hl_x86_mov64(b, HL_X86_RDI, HL_X86_RCX); break;
    case 49: hl_x86_vex(b, M, PS, 0, 1, 0x54, 0, 0, hl_x86_mem(HL_X86_RDI, N, 0), -1); break;
    case 50: hl_x86_sub_imm64(b, HL_X86_RSP, 424); break;
    case 51: hl_x86_add_imm64(b, HL_X86_RSP, 424); break;
    case 52: hl_x86_mov_imm64(b, HL_X86_RAX, UINT64_C(0x123456789abcdef0)); break;
    case 53: hl_x86_call(b, HL_X86_RAX); break;
    case 54: hl_x86_vex(b, M, PS, 0, 1, 0x28, 0, N, hl_x86_reg(5), -1); break;
    case 55: hl_x86_vex(b, M, PS, 0, 1, 0x28, 15, N, hl_x86_reg(0), -1); break;
    case 56: hl_x86_vex(b, M, PS, 0, 1, 0x11, 3, N, hl_x86_mem(HL_X86_RSP, N, 64), -1); break;
    case 57: hl_x86_vex(b, M, PS, 0, 1, 0x10, 3, N, hl_x86_mem(HL_X86_RSP, N, 384), -1); break;
    case 58: hl_x86_push(b, HL_X86_RDI); break;
    case 59: hl_x86_pop(b, HL_X86_RDI); break;
  }
}

static void test_against_as(void) {
  int n = (int)(sizeof(kCases) / sizeof(kCases[0]));
  CU_ASSERT_EQUAL(n, 60);
  for (int i = 0; i < n; i++) {
    hl_x86_buf_t b = {0};
    emit(i, &b);
    bool same = !b.failed && (int)b.len == kCases[i].len && !memcmp(b.data, kCases[i].bytes, b.len);
    if (!same) {
      printf("\n  %s: got", kCases[i].text);
      for (size_t k = 0; k < b.len; k++) printf(" %02x", b.data[k]);
    }
    CU_ASSERT_TRUE(same);
    hl_x86_buf_free(&b);
  }
}

static void test_jb(void) {
  hl_x86_buf_t b = {0};
  for (int i = 0; i < 16; i++) hl_x86_byte(&b, 0x90);
  hl_x86_jb(&b, 0);  // from 0x10: rel8 = 0 - 0x12 = -18
  CU_ASSERT_EQUAL(b.len, 18);
  CU_ASSERT_EQUAL(b.data[16], 0x72);
  CU_ASSERT_EQUAL(b.data[17], 0xEE);
  while (b.len < 0x100) hl_x86_byte(&b, 0x90);
  hl_x86_jb(&b, 0);  // from 0x100: 0F 82, rel32 = 0 - 0x106
  CU_ASSERT_EQUAL(b.len, 0x106);
  const uint8_t want[6] = {0x0F, 0x82, 0xFA, 0xFE, 0xFF, 0xFF};
  CU_ASSERT_EQUAL(memcmp(b.data + 0x100, want, 6), 0);
  hl_x86_buf_free(&b);
}

static CU_TestInfo tests[] = {
    {"against_as", test_against_as},
    {"jb", test_jb},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fusion_jit_encoder", tests)
