// The kernels' scratch declarations by opcode (kernel_scratch.h).
#include "runtime/kernels/kernel_scratch.h"

void hl_kernel_scratch_of(const hl_instruction_t *inst, int threads, hl_kernel_scratch_t *out) {
  out->count = 0;
  if (threads < 1) threads = 1;
  for (int i = 0; i < inst->operand_count; i++)
    if (!inst->operands[i]) return;
  switch (inst->opcode) {
    case HL_OP_DOT: hl_dot_scratch(inst, threads, out); break;
    case HL_OP_CONVOLUTION: hl_convolution_scratch(inst, out); break;
    case HL_OP_SORT: hl_sort_scratch(inst, threads, out); break;
    case HL_OP_FFT: hl_fft_scratch(inst, out); break;
    case HL_OP_BITCAST: hl_bitcast_scratch(inst, out); break;
    default: break;
  }
}
