// The fusion JIT's code generator (codegen_api.h): a body becomes LLVM IR of
// explicit vectors (lanes from the host's vector width), compiled by ORC
// LLJIT for the host CPU with its features (LLVMGetHostCPUName /
// LLVMGetHostCPUFeatures): AVX-512, AVX2, NEON, whatever LLVM targets. The
// IR carries no fast-math flags and no fmuladd, so nothing is contracted or
// reassociated; vmath's routines are bound as absolute symbols by name.
// Built as a module of its own (runtime/fusion/jit/llvm/CMakeLists.txt).
#include <errno.h>
#include <fcntl.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm/Config/llvm-config.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/fusion/jit/codegen_api.h"

#define MAX_SYMBOLS 128

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef g_jit;
static LLVMOrcJITDylibRef g_jd;
static const char *g_data_layout, *g_triple;
static int g_vector_bytes, g_vector_regs;
static char g_target[256];
static char *g_symbols[MAX_SYMBOLS];
static int g_symbol_count;
static bool g_log;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}
static bool g_signaling_first;  // NaN operand priority (see nan_rule)
// Emits objects (the JIT links them): the host's CPU and features, as the
// JIT's own target machine. Object files are what the disk cache keeps.
static LLVMTargetMachineRef g_tm;
static char *g_features;

static void log_error(const char *what, LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err);
  if (g_log) fprintf(stderr, "fusion jit: %s: %s\n", what, msg);
  LLVMDisposeErrorMessage(msg);
}

// Whether the comma-separated LLVM feature list has "+name".
static bool has_feature(const char *features, const char *name) {
  size_t n = strlen(name);
  for (const char *p = features; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && memcmp(p + 1, name, n) == 0) return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

static const char *init(int vector_bytes, const char **target) {
  const char *e = getenv("HL_FUSION_JIT_LOG");
  g_log = e && *e && strcmp(e, "0") != 0;
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter())
    return "LLVM has no code generator for this host";
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = LLVMGetHostCPUName(), *host_features = LLVMGetHostCPUFeatures();
  // No SVE: the loops are fixed 16-byte vectors, kept in NEON registers, and
  // LLVM 15 lowers what NEON lacks (integer divide / remainder, 64-bit
  // multiply) through SVE code that assumes 128-bit SVE registers (sunpkhi,
  // uzp1 over the whole register): wrong lanes where they are wider (A64FX
  // 512, Graviton 3 256 bits). "-sve" also clears what implies SVE (sve2).
  bool arm = strncmp(triple, "aarch64", 7) == 0;
  char *features = malloc(strlen(host_features) + 8);
  if (!features) abort();
  sprintf(features, "%s%s", host_features, arm ? (*host_features ? ",-sve" : "-sve") : "");
  LLVMDisposeMessage(host_features);
  LLVMTargetRef t = NULL;
  char *msg = NULL;
  const char *why = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &msg)) {
    why = "LLVM has no target for this host's triple";
    LLVMDisposeMessage(msg);
  }
  // Widest vectors the host runs natively; 64-byte vectors are legal (not
  // split) only where the function asks for them (see min-legal-vector-width).
  int vb = has_feature(features, "avx512f") ? 64 : has_feature(features, "avx") ? 32 : 16;
  g_vector_regs = has_feature(features, "avx512f") || strstr(triple, "aarch64") ? 32 : 16;
  g_signaling_first = strncmp(triple, "aarch64", 7) == 0 || strncmp(triple, "arm", 3) == 0;
  if (vector_bytes > 0) vb = vector_bytes;
  g_vector_bytes = vb;
  if (!why) {
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(t, triple, cpu, features, LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                LLVMCodeModelJITDefault);
    g_tm = LLVMCreateTargetMachine(t, triple, cpu, features, LLVMCodeGenLevelDefault,
                                   LLVMRelocDefault, LLVMCodeModelJITDefault);
    g_features = strdup(features);
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
        builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&g_jit, builder);
    if (err) {
      log_error("creating the LLJIT", err);
      why = "LLVM could not create a JIT for this host";
      g_jit = NULL;
    }
  }
  if (!why) {
    g_jd = LLVMOrcLLJITGetMainJITDylib(g_jit);
    // Library calls the code generator may emit (memcpy, a scalarized
    // floorf on CPUs without a rounding instruction, ...) from the process.
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    LLVMErrorRef err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(g_jit), NULL, NULL);
    if (err) {
      log_error("binding the process's symbols", err);
      why = "LLVM could not bind the process's symbols";
    } else {
      LLVMOrcJITDylibAddGenerator(g_jd, gen);
    }
    g_data_layout = LLVMOrcLLJITGetDataLayoutStr(g_jit);
    g_triple = LLVMOrcLLJITGetTripleString(g_jit);
    snprintf(g_target, sizeof g_target, "LLVM %s, %s %s, %d-byte vectors", LLVM_VERSION_STRING,
             triple, cpu, vb);
    *target = g_target;
  }
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  free(features);
  return why;
}

//===----------------------------------------------------------------------===//
// IR
//===----------------------------------------------------------------------===//

typedef struct gen {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  const hl_jit_body_t *body;
  // The type of the value being emitted (set_type) and what follows from it.
  hl_jit_type_t t;
  int lanes;
  bool is_float, is_half, is_signed;
  int bits;               // width in memory
  LLVMTypeRef elem, vec;  // storage element and its vector
  LLVMTypeRef f32v, i32v, f64v, i64v;
  hl_jit_type_t in_type[HL_JIT_MAX_INPUTS], out_type;
  LLVMValueRef base;  // the loop's base argument (iota)
  LLVMValueRef valid_mask;  // single: lanes below `valid`, else NULL
  LLVMValueRef *val;        // per body value, per unrolled copy
  // exact: NaN results made explicit (nan_rule); else the plain operations
  // and, after each vector, a check that calls `exact_fn` on the vector
  // when its result has a NaN lane.
  bool exact;
  LLVMValueRef exact_fn, fn_in, fn_valid, fn_base;
  LLVMTypeRef exact_ty;
} gen_t;

// A constant vector of the body's lanes, every one `scalar`.
static LLVMValueRef splat(gen_t *g, LLVMValueRef scalar) {
  LLVMValueRef lanes[64];
  for (int i = 0; i < g->lanes; i++) lanes[i] = scalar;
  return LLVMConstVector(lanes, (unsigned)g->lanes);
}

static LLVMValueRef ci(gen_t *g, LLVMTypeRef vec, unsigned long long v) {
  return splat(g, LLVMConstInt(LLVMGetElementType(vec), v, 0));
}

static LLVMValueRef cf(gen_t *g, LLVMTypeRef vec, double v) {
  return splat(g, LLVMConstReal(LLVMGetElementType(vec), v));
}

static LLVMTypeRef storage_type(gen_t *g, hl_jit_type_t t) {
  switch (t) {
    case HL_JIT_F32: return LLVMFloatTypeInContext(g->c);
    case HL_JIT_F64: return LLVMDoubleTypeInContext(g->c);
    default: return LLVMIntTypeInContext(g->c, (unsigned)(8 * hl_jit_type_size(t)));
  }
}

// Makes t the type of what is emitted next.
static void set_type(gen_t *g, hl_jit_type_t t) {
  g->t = t;
  g->is_float = hl_jit_type_is_float(t);
  g->is_half = t == HL_JIT_BF16 || t == HL_JIT_F16;
  g->is_signed = hl_jit_type_is_signed(t);
  g->bits = (int)(8 * hl_jit_type_size(t));
  g->elem = storage_type(g, t);
  g->vec = LLVMVectorType(g->elem, (unsigned)g->lanes);
}

static LLVMValueRef intrinsic(gen_t *g, const char *name, LLVMValueRef x) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef ty = LLVMTypeOf(x);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->m, id, &ty, 1);
  return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->c, id, &ty, 1), fn, &x, 1, "");
}

// 16-bit patterns <-> f32, with the bits of runtime/base/half_arrays.c.
static LLVMValueRef widen_from(gen_t *g, hl_jit_type_t t, LLVMValueRef h) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef x = LLVMBuildZExt(b, h, g->i32v, "");
  if (t == HL_JIT_BF16)
    return LLVMBuildBitCast(b, LLVMBuildShl(b, x, ci(g, g->i32v, 16), ""), g->f32v, "");
  LLVMValueRef sign =
      LLVMBuildShl(b, LLVMBuildAnd(b, x, ci(g, g->i32v, 0x8000), ""), ci(g, g->i32v, 16), "");
  LLVMValueRef e =
      LLVMBuildAnd(b, LLVMBuildLShr(b, x, ci(g, g->i32v, 10), ""), ci(g, g->i32v, 0x1f), "");
  LLVMValueRef m = LLVMBuildAnd(b, x, ci(g, g->i32v, 0x3ff), "");
  LLVMValueRef m13 = LLVMBuildShl(b, m, ci(g, g->i32v, 13), "");
  LLVMValueRef normal = LLVMBuildOr(
      b,
      LLVMBuildOr(
          b, sign,
          LLVMBuildShl(b, LLVMBuildAdd(b, e, ci(g, g->i32v, 112), ""), ci(g, g->i32v, 23), ""), ""),
      m13, "");
  LLVMValueRef special =
      LLVMBuildOr(b, LLVMBuildOr(b, sign, ci(g, g->i32v, 0x7f800000u), ""), m13, "");
  LLVMValueRef subf = LLVMBuildFMul(b, LLVMBuildSIToFP(b, m, g->f32v, ""),
                                    cf(g, g->f32v, 5.9604644775390625e-08), "");
  LLVMValueRef sub = LLVMBuildOr(b, sign, LLVMBuildBitCast(b, subf, g->i32v, ""), "");
  LLVMValueRef r = LLVMBuildSelect(
      b, LLVMBuildICmp(b, LLVMIntEQ, e, ci(g, g->i32v, 0x1f), ""), special,
      LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, ci(g, g->i32v, 0), ""), sub, normal, ""),
      "");
  return LLVMBuildBitCast(b, r, g->f32v, "");
}

static LLVMValueRef widen(gen_t *g, LLVMValueRef h) { return widen_from(g, g->t, h); }

// f32 -> the 16-bit type t, rounded to nearest even; a NaN becomes t's
// canonical quiet NaN with its sign, or (keep: bf16 only, convert.c's
// f32 -> bf16) keeps its upper bits, quieted.
static LLVMValueRef narrow_to(gen_t *g, hl_jit_type_t t, LLVMValueRef f, bool keep) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef v = g->i32v;
  LLVMValueRef u = LLVMBuildBitCast(b, f, v, "");
  LLVMValueRef a = LLVMBuildAnd(b, u, ci(g, v, 0x7fffffffu), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, a, ci(g, v, 0x7f800000u), "");
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci(g, v, 16), ""), ci(g, v, 0x8000), "");
  LLVMValueRef r;
  if (t == HL_JIT_BF16) {
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci(g, v, 16), ""), ci(g, v, 1), "");
    LLVMValueRef rne = LLVMBuildLShr(
        b, LLVMBuildAdd(b, LLVMBuildAdd(b, u, ci(g, v, 0x7fff), ""), odd, ""), ci(g, v, 16), "");
    LLVMValueRef nan_bits =
        keep ? LLVMBuildOr(b, LLVMBuildLShr(b, u, ci(g, v, 16), ""), ci(g, v, 0x40), "")
             : LLVMBuildOr(b, sign, ci(g, v, 0x7fc0), "");
    r = LLVMBuildSelect(b, nan, nan_bits, rne, "");
  } else {
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, a, ci(g, v, 13), ""), ci(g, v, 1), "");
    LLVMValueRef normal = LLVMBuildLShr(
        b,
        LLVMBuildAdd(
            b, LLVMBuildAdd(b, LLVMBuildSub(b, a, ci(g, v, 0x38000000u), ""), ci(g, v, 0xfff), ""),
            odd, ""),
        ci(g, v, 13), "");
    LLVMValueRef sum =
        LLVMBuildFAdd(b, LLVMBuildBitCast(b, a, g->f32v, ""), cf(g, g->f32v, 0.5), "");
    LLVMValueRef sub = LLVMBuildSub(b, LLVMBuildBitCast(b, sum, v, ""), ci(g, v, 0x3f000000u), "");
    LLVMValueRef mag = LLVMBuildSelect(
        b, nan, ci(g, v, 0x7e00),
        LLVMBuildSelect(
            b, LLVMBuildICmp(b, LLVMIntUGE, a, ci(g, v, 0x477ff000u), ""), ci(g, v, 0x7c00),
            LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, a, ci(g, v, 0x38800000u), ""), sub,
                            normal, ""),
            ""),
        "");
    r = LLVMBuildOr(b, sign, mag, "");
  }
  return LLVMBuildTrunc(b, r, LLVMVectorType(LLVMInt16TypeInContext(g->c), (unsigned)g->lanes), "");
}

static LLVMValueRef narrow(gen_t *g, LLVMValueRef f) { return narrow_to(g, g->t, f, false); }

// XLA maximum / minimum (float_minmax.h): a NaN a, else a NaN b, else for
// equal operands the one whose sign bit says it is larger (+0 > -0).
static LLVMValueRef float_minmax(gen_t *g, LLVMValueRef a, LLVMValueRef c, bool max) {
  LLVMBuilderRef b = g->b;
  bool f64 = LLVMGetTypeKind(LLVMGetElementType(LLVMTypeOf(a))) == LLVMDoubleTypeKind;
  LLVMTypeRef iv = LLVMVectorType(LLVMIntTypeInContext(g->c, f64 ? 64 : 32), (unsigned)g->lanes);
  LLVMValueRef neg_a =
      LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, a, iv, ""), LLVMConstNull(iv), "");
  LLVMValueRef r =
      LLVMBuildSelect(b, LLVMBuildFCmp(b, max ? LLVMRealOGT : LLVMRealOLT, a, c, ""), a, c, "");
  LLVMValueRef eq_pick =
      max ? LLVMBuildSelect(b, neg_a, c, a, "") : LLVMBuildSelect(b, neg_a, a, c, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, a, c, ""), eq_pick, r, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, c, c, ""), c, r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), a, r, "");
}

// The external routine named name (bound to its address in the JITDylib).
static LLVMValueRef routine(gen_t *g, const char *name, LLVMTypeRef fty) {
  LLVMValueRef f = LLVMGetNamedFunction(g->m, name);
  return f ? f : LLVMAddFunction(g->m, name, fty);
}

static LLVMValueRef shuffle_range(gen_t *g, LLVMValueRef x, LLVMValueRef y, int from, int n) {
  LLVMValueRef idx[64];
  LLVMTypeRef i32 = LLVMInt32TypeInContext(g->c);
  for (int i = 0; i < n; i++) idx[i] = LLVMConstInt(i32, (unsigned long long)(from + i), 0);
  return LLVMBuildShuffleVector(g->b, x, y ? y : LLVMGetUndef(LLVMTypeOf(x)),
                                LLVMConstVector(idx, (unsigned)n), "");
}

// fn over x (and y for a routine of two arguments; floats of the compute
// type): SLEEF's 32-byte vector routine on groups of its lanes, or the
// scalar routine lane by lane.
static LLVMValueRef call_routine(gen_t *g, const hl_jit_value_t *v, LLVMValueRef x,
                                 LLVMValueRef y) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef ft = LLVMGetElementType(LLVMTypeOf(x));
  int nargs = v->op == HL_JIT_CALL2 ? 2 : 1;
  LLVMValueRef xs[2] = {x, y};
  if (v->scalar_fn) {
    LLVMTypeRef params[2] = {ft, ft};
    LLVMTypeRef fty = LLVMFunctionType(ft, params, (unsigned)nargs, 0);
    LLVMValueRef f = routine(g, v->fn_name, fty);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(g->c);
    LLVMValueRef r = x;
    for (int i = 0; i < g->lanes; i++) {
      LLVMValueRef k = LLVMConstInt(i32, (unsigned long long)i, 0);
      LLVMValueRef e[2];
      for (int a = 0; a < nargs; a++) e[a] = LLVMBuildExtractElement(b, xs[a], k, "");
      r = LLVMBuildInsertElement(b, r, LLVMBuildCall2(b, fty, f, e, (unsigned)nargs, ""), k, "");
    }
    return r;
  }
  for (int a = 0; a < nargs && g->valid_mask; a++)
    xs[a] = LLVMBuildSelect(b, g->valid_mask, xs[a], LLVMConstNull(LLVMTypeOf(x)), "");
  int per = LLVMGetTypeKind(ft) == LLVMDoubleTypeKind ? 4 : 8;
  LLVMTypeRef pv = LLVMVectorType(ft, (unsigned)per);
  LLVMTypeRef params[2] = {pv, pv};
  LLVMTypeRef fty = LLVMFunctionType(pv, params, (unsigned)nargs, 0);
  LLVMValueRef f = routine(g, v->fn_name, fty);
  if (per == g->lanes) return LLVMBuildCall2(b, fty, f, xs, (unsigned)nargs, "");
  LLVMValueRef parts[16];
  int n = g->lanes / per;
  for (int i = 0; i < n; i++) {
    LLVMValueRef args[2];
    for (int a = 0; a < nargs; a++) args[a] = shuffle_range(g, xs[a], NULL, i * per, per);
    parts[i] = LLVMBuildCall2(b, fty, f, args, (unsigned)nargs, "");
  }
  for (int w = per; n > 1; w *= 2, n /= 2)  // concatenate pairwise
    for (int i = 0; i < n / 2; i++)
      parts[i] = shuffle_range(g, parts[2 * i], parts[2 * i + 1], 0, 2 * w);
  return parts[0];
}

// The NaN an arithmetic instruction of this CPU gives for `a op c`, made
// explicit: LLVM counts a NaN result's sign and payload as unspecified and
// commutes operands or folds negations (fdiv(-x, -y) -> fdiv(x, y)), while
// the kernels' compiled loops give what the hardware gives for their operand
// order. x86: the first NaN operand, quieted; AArch64 (default-NaN mode off,
// as Linux runs it): a signaling NaN first, then the first NaN, quieted.
static LLVMValueRef nan_rule(gen_t *g, LLVMValueRef a, LLVMValueRef c, LLVMValueRef r) {
  LLVMBuilderRef b = g->b;
  bool f64 = LLVMGetTypeKind(LLVMGetElementType(LLVMTypeOf(a))) == LLVMDoubleTypeKind;
  LLVMTypeRef iv = LLVMVectorType(LLVMIntTypeInContext(g->c, f64 ? 64 : 32), (unsigned)g->lanes);
  LLVMValueRef quiet = ci(g, iv, f64 ? 0x0008000000000000ull : 0x00400000ull);
  LLVMValueRef ia = LLVMBuildBitCast(b, a, iv, ""), ic = LLVMBuildBitCast(b, c, iv, "");
  LLVMValueRef qa = LLVMBuildBitCast(b, LLVMBuildOr(b, ia, quiet, ""), LLVMTypeOf(a), "");
  LLVMValueRef qc = LLVMBuildBitCast(b, LLVMBuildOr(b, ic, quiet, ""), LLVMTypeOf(a), "");
  LLVMValueRef na = LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
  LLVMValueRef nc = LLVMBuildFCmp(b, LLVMRealUNO, c, c, "");
  LLVMValueRef pick = LLVMBuildSelect(b, na, qa, qc, "");
  if (g_signaling_first) {
    LLVMValueRef zero = LLVMConstNull(iv);
    LLVMValueRef sa = LLVMBuildAnd(
        b, na, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, ia, quiet, ""), zero, ""), "");
    LLVMValueRef sc = LLVMBuildAnd(
        b, nc, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, ic, quiet, ""), zero, ""), "");
    pick = LLVMBuildSelect(b, sa, qa, LLVMBuildSelect(b, sc, qc, pick, ""), "");
  }
  return LLVMBuildSelect(b, LLVMBuildOr(b, na, nc, ""), pick, r, "");
}

// A NaN result's bits matter only where they reach the output: if no lane
// of a vector's result is NaN, every NaN among its intermediates went into
// a compare (whose answer does not depend on the bits) or an unselected
// operand, and the plain operations give the output's bits. So loops run the
// plain operations and recompute, exactly, the rare vectors whose result
// has a NaN lane (emit_exact).
static LLVMValueRef arith(gen_t *g, LLVMValueRef a, LLVMValueRef c, LLVMValueRef r) {
  return g->exact ? nan_rule(g, a, c, r) : r;
}

static LLVMValueRef float_op(gen_t *g, const hl_jit_value_t *v, LLVMValueRef a, LLVMValueRef c) {
  LLVMBuilderRef b = g->b;
  switch (v->op) {
    case HL_JIT_ADD:
      return arith(g, a, c, LLVMBuildFAdd(b, a, c, ""));
    case HL_JIT_SUB:
      return arith(g, a, c, LLVMBuildFSub(b, a, c, ""));
    case HL_JIT_MUL:
      return arith(g, a, c, LLVMBuildFMul(b, a, c, ""));
    case HL_JIT_DIV:
      return arith(g, a, c, LLVMBuildFDiv(b, a, c, ""));
    case HL_JIT_MAX:
      return float_minmax(g, a, c, true);
    case HL_JIT_MIN:
      return float_minmax(g, a, c, false);
    case HL_JIT_NEG:
      return LLVMBuildFNeg(b, a, "");
    case HL_JIT_ABS:
      return intrinsic(g, "llvm.fabs", a);
    case HL_JIT_SQRT:
      return intrinsic(g, "llvm.sqrt", a);
    case HL_JIT_FLOOR:
      return intrinsic(g, "llvm.floor", a);
    case HL_JIT_CEIL:
      return intrinsic(g, "llvm.ceil", a);
    case HL_JIT_RSQRT: {
      LLVMTypeRef dv = LLVMVectorType(LLVMDoubleTypeInContext(g->c), (unsigned)g->lanes);
      LLVMValueRef d = intrinsic(g, "llvm.sqrt", LLVMBuildFPExt(b, a, dv, ""));
      return LLVMBuildFPTrunc(b, LLVMBuildFDiv(b, cf(g, dv, 1.0), d, ""), LLVMTypeOf(a), "");
    }
    case HL_JIT_CALL:
    case HL_JIT_CALL2:
      return call_routine(g, v, a, c);
    default:
      return NULL;
  }
}

static LLVMValueRef int_op(gen_t *g, const hl_jit_value_t *v, LLVMValueRef a, LLVMValueRef c) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef t = g->vec;
  bool s = g->is_signed;
  switch (v->op) {
    case HL_JIT_ADD:
      return LLVMBuildAdd(b, a, c, "");
    case HL_JIT_SUB:
      return LLVMBuildSub(b, a, c, "");
    case HL_JIT_MUL:
      return LLVMBuildMul(b, a, c, "");
    case HL_JIT_AND:
      return LLVMBuildAnd(b, a, c, "");
    case HL_JIT_OR:
      return LLVMBuildOr(b, a, c, "");
    case HL_JIT_XOR:
      return LLVMBuildXor(b, a, c, "");
    case HL_JIT_NOT:
      return LLVMBuildNot(b, a, "");
    case HL_JIT_NEG:
      return LLVMBuildSub(b, LLVMConstNull(t), a, "");
    case HL_JIT_ABS:
      if (!s) return a;
      return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a, LLVMConstNull(t), ""),
                             LLVMBuildSub(b, LLVMConstNull(t), a, ""), a, "");
    case HL_JIT_MAX:
    case HL_JIT_MIN: {
      LLVMIntPredicate p =
          v->op == HL_JIT_MAX ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT);
      return LLVMBuildSelect(b, LLVMBuildICmp(b, p, a, c, ""), a, c, "");
    }
    case HL_JIT_DIV:
    case HL_JIT_REM: {
      // elementwise.c: x / 0 = -1, x % 0 = x; signed x / -1 = 0 - x (wraps
      // at INT_MIN), x % -1 = 0. The divisor is made 1 where those apply.
      LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, c, LLVMConstNull(t), "");
      LLVMValueRef special = zero, m1 = NULL;
      if (s) {
        m1 = LLVMBuildICmp(b, LLVMIntEQ, c, LLVMConstAllOnes(t), "");
        special = LLVMBuildOr(b, zero, m1, "");
      }
      LLVMValueRef safe = LLVMBuildSelect(b, special, ci(g, t, 1), c, "");
      LLVMValueRef r;
      if (v->op == HL_JIT_DIV) {
        r = s ? LLVMBuildSDiv(b, a, safe, "") : LLVMBuildUDiv(b, a, safe, "");
        if (s) r = LLVMBuildSelect(b, m1, LLVMBuildSub(b, LLVMConstNull(t), a, ""), r, "");
        return LLVMBuildSelect(b, zero, LLVMConstAllOnes(t), r, "");
      }
      r = s ? LLVMBuildSRem(b, a, safe, "") : LLVMBuildURem(b, a, safe, "");
      if (s) r = LLVMBuildSelect(b, m1, LLVMConstNull(t), r, "");
      return LLVMBuildSelect(b, zero, a, r, "");
    }
    case HL_JIT_SHL:
    case HL_JIT_SRA:
    case HL_JIT_SRL: {
      // The amount read unsigned; from the width on: 0, or the sign fill.
      LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, c, ci(g, t, (unsigned)g->bits), "");
      if (v->op == HL_JIT_SRA)
        return LLVMBuildAShr(b, a, LLVMBuildSelect(b, big, ci(g, t, (unsigned)g->bits - 1), c, ""),
                             "");
      LLVMValueRef amt = LLVMBuildSelect(b, big, LLVMConstNull(t), c, "");
      LLVMValueRef r =
          v->op == HL_JIT_SHL ? LLVMBuildShl(b, a, amt, "") : LLVMBuildLShr(b, a, amt, "");
      return LLVMBuildSelect(b, big, LLVMConstNull(t), r, "");
    }
    default:
      return NULL;
  }
}

// A compare of the current type (EQ, NE, LT, LE, GT, GE): floats IEEE,
// false with a NaN operand except NE (16-bit types compared in f32);
// integers signed or unsigned as the type is.
static LLVMValueRef compare(gen_t *g, hl_jit_op_t op, LLVMValueRef a, LLVMValueRef c) {
  static const LLVMRealPredicate kReal[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                            LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  static const LLVMIntPredicate kInt[2][6] = {
      {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE},
      {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE}};
  int k = (int)(op - HL_JIT_CMP_EQ);
  if (!g->is_float) return LLVMBuildICmp(g->b, kInt[g->is_signed][k], a, c, "");
  if (g->is_half) {
    a = widen(g, a);
    c = widen(g, c);
  }
  return LLVMBuildFCmp(g->b, kReal[k], a, c, "");
}

//===----------------------------------------------------------------------===//
// Converts (convert.c's semantics, jit_body.h) and iota
//===----------------------------------------------------------------------===//

static LLVMValueRef call2(gen_t *g, const char *name, LLVMTypeRef *types, int ntypes,
                          LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->m, id, types, (size_t)ntypes);
  return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->c, id, types, (size_t)ntypes), fn, args,
                        (unsigned)nargs, "");
}

// A 64-bit integer as a double of at most 53 significant bits, the dropped
// bits folded into the lowest kept one (convert.c's u64_to_f64_sticky):
// rounding it to a narrower float is rounding the integer once.
static LLVMValueRef int64_to_f64_sticky(gen_t *g, LLVMValueRef x, bool is_signed) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef v = g->i64v;
  LLVMValueRef neg = NULL, u = x;
  if (is_signed) {
    neg = LLVMBuildICmp(b, LLVMIntSLT, x, LLVMConstNull(v), "");
    u = LLVMBuildSelect(b, neg, LLVMBuildSub(b, LLVMConstNull(v), x, ""), x, "");
  }
  LLVMValueRef args[2] = {u, LLVMConstInt(LLVMInt1TypeInContext(g->c), 0, 0)};
  LLVMValueRef lz = call2(g, "llvm.ctlz", &v, 1, args, 2);
  LLVMValueRef shift = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, lz, ci(g, v, 11), ""),
                                       LLVMBuildSub(b, ci(g, v, 11), lz, ""), LLVMConstNull(v), "");
  LLVMValueRef low_mask = LLVMBuildSub(b, LLVMBuildShl(b, ci(g, v, 1), shift, ""), ci(g, v, 1), "");
  LLVMValueRef sticky = LLVMBuildZExt(
      b, LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, u, low_mask, ""), LLVMConstNull(v), ""), v,
      "");
  LLVMValueRef kept = LLVMBuildOr(b, LLVMBuildLShr(b, u, shift, ""), sticky, "");
  LLVMValueRef scale = LLVMBuildBitCast(
      b, LLVMBuildShl(b, LLVMBuildAdd(b, shift, ci(g, v, 1023), ""), ci(g, v, 52), ""), g->f64v,
      "");
  LLVMValueRef d = LLVMBuildFMul(b, LLVMBuildUIToFP(b, kept, g->f64v, ""), scale, "");  // exact
  return neg ? LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, d, ""), d, "") : d;
}

// f64 -> the 16-bit type t rounded once to nearest even, NaN its quiet NaN
// with the sign (element_access.h hl_elem_f64_to_half, on the bits).
static LLVMValueRef f64_to_half(gen_t *g, LLVMValueRef d, hl_jit_type_t t) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef v = g->i64v;
  int man = t == HL_JIT_F16 ? 10 : 7, expb = t == HL_JIT_F16 ? 5 : 8;
  int bias = (1 << (expb - 1)) - 1;
  unsigned long long exp_all = ((1ull << expb) - 1) << man;
  LLVMValueRef u = LLVMBuildBitCast(b, d, v, "");
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci(g, v, 48), ""), ci(g, v, 0x8000), "");
  LLVMValueRef a = LLVMBuildAnd(b, u, ci(g, v, 0x7fffffffffffffffull), "");
  LLVMValueRef infnan = LLVMBuildICmp(b, LLVMIntUGE, a, ci(g, v, 0x7ff0000000000000ull), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, a, ci(g, v, 0x7ff0000000000000ull), "");
  LLVMValueRef special =
      LLVMBuildSelect(b, nan, ci(g, v, exp_all | (1ull << (man - 1))), ci(g, v, exp_all), "");
  LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, a, ci(g, v, 52), ""), ci(g, v, 1023), "");
  LLVMValueRef tiny = LLVMBuildICmp(b, LLVMIntSLT, e, ci(g, v, (unsigned long long)(1 - bias)), "");
  // Subnormal results: scaled by a power of two (exact), rounded to an integer.
  LLVMValueRef scaled = LLVMBuildFMul(b, LLVMBuildBitCast(b, a, g->f64v, ""),
                                      cf(g, g->f64v, ldexp(1.0, bias - 1 + man)), "");
  LLVMValueRef sub = LLVMBuildFPToUI(b, intrinsic(g, "llvm.rint", scaled), v, "");
  int shift = 52 - man;
  LLVMValueRef m = LLVMBuildLShr(b, a, ci(g, v, (unsigned long long)shift), "");
  LLVMValueRef rem = LLVMBuildAnd(b, a, ci(g, v, (1ull << shift) - 1), "");
  LLVMValueRef half = ci(g, v, 1ull << (shift - 1));
  LLVMValueRef odd =
      LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, m, ci(g, v, 1), ""), LLVMConstNull(v), "");
  LLVMValueRef up =
      LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rem, half, ""),
                  LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rem, half, ""), odd, ""), "");
  m = LLVMBuildAdd(b, m, LLVMBuildZExt(b, up, v, ""), "");
  LLVMValueRef r = LLVMBuildSub(b, m, ci(g, v, (unsigned long long)(1023 - bias) << man), "");
  LLVMValueRef over =
      LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntSGT, e, ci(g, v, (unsigned long long)bias), ""),
                  LLVMBuildICmp(b, LLVMIntUGE, r, ci(g, v, exp_all), ""), "");
  LLVMValueRef mag = LLVMBuildSelect(
      b, infnan, special,
      LLVMBuildSelect(b, tiny, sub, LLVMBuildSelect(b, over, ci(g, v, exp_all), r, ""), ""), "");
  return LLVMBuildTrunc(b, LLVMBuildOr(b, sign, mag, ""),
                        LLVMVectorType(LLVMInt16TypeInContext(g->c), (unsigned)g->lanes), "");
}

// f32 <-> f64; exact: a NaN's result made explicit (quieted, payload kept,
// as cvtss2sd / cvtsd2ss and AArch64's fcvt give it).
static LLVMValueRef f32_to_f64(gen_t *g, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef r = LLVMBuildFPExt(b, x, g->f64v, "");
  if (!g->exact) return r;
  LLVMValueRef u = LLVMBuildZExt(b, LLVMBuildBitCast(b, x, g->i32v, ""), g->i64v, "");
  LLVMValueRef sign =
      LLVMBuildShl(b, LLVMBuildLShr(b, u, ci(g, g->i64v, 31), ""), ci(g, g->i64v, 63), "");
  LLVMValueRef pay =
      LLVMBuildShl(b, LLVMBuildAnd(b, u, ci(g, g->i64v, 0x7fffff), ""), ci(g, g->i64v, 29), "");
  LLVMValueRef bits =
      LLVMBuildOr(b, LLVMBuildOr(b, sign, ci(g, g->i64v, 0x7ff8000000000000ull), ""), pay, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""),
                         LLVMBuildBitCast(b, bits, g->f64v, ""), r, "");
}

static LLVMValueRef f64_to_f32(gen_t *g, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef r = LLVMBuildFPTrunc(b, x, g->f32v, "");
  if (!g->exact) return r;
  LLVMValueRef u = LLVMBuildBitCast(b, x, g->i64v, "");
  LLVMValueRef sign =
      LLVMBuildShl(b, LLVMBuildLShr(b, u, ci(g, g->i64v, 63), ""), ci(g, g->i64v, 31), "");
  LLVMValueRef pay =
      LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci(g, g->i64v, 29), ""), ci(g, g->i64v, 0x7fffff), "");
  LLVMValueRef bits = LLVMBuildTrunc(
      b, LLVMBuildOr(b, LLVMBuildOr(b, sign, ci(g, g->i64v, 0x7fc00000), ""), pay, ""), g->i32v,
      "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""),
                         LLVMBuildBitCast(b, bits, g->f32v, ""), r, "");
}

// x (of type from) as the type `to` (set as the current type).
static LLVMValueRef convert(gen_t *g, hl_jit_type_t from, hl_jit_type_t to, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  set_type(g, to);
  if (from == to) return x;
  bool src_float = hl_jit_type_is_float(from), src_signed = hl_jit_type_is_signed(from);
  if (!src_float && !g->is_float) {  // keep the low bits
    int from_bits = (int)(8 * hl_jit_type_size(from));
    if (g->bits < from_bits) return LLVMBuildTrunc(b, x, g->vec, "");
    if (g->bits > from_bits)
      return src_signed ? LLVMBuildSExt(b, x, g->vec, "") : LLVMBuildZExt(b, x, g->vec, "");
    return x;
  }
  if (!src_float) {
    // Rounded once: exactly to a double (integers of up to 32 bits), or
    // rounded to odd (64 bits) and then to the type; f64 and signed 32-bit
    // integers to f32 by the instruction (both correctly rounded).
    bool wide = hl_jit_type_size(from) == 8;
    if (to == HL_JIT_F64)
      return src_signed ? LLVMBuildSIToFP(b, x, g->f64v, "") : LLVMBuildUIToFP(b, x, g->f64v, "");
    if (to == HL_JIT_F32 && src_signed && !wide) return LLVMBuildSIToFP(b, x, g->f32v, "");
    LLVMValueRef d = wide         ? int64_to_f64_sticky(g, x, src_signed)
                     : src_signed ? LLVMBuildSIToFP(b, x, g->f64v, "")
                                  : LLVMBuildUIToFP(b, x, g->f64v, "");
    return to == HL_JIT_F32 ? LLVMBuildFPTrunc(b, d, g->f32v, "") : f64_to_half(g, d, to);
  }
  // Floats: 16-bit types through f32 (exact).
  bool src_half = from == HL_JIT_BF16 || from == HL_JIT_F16;
  if (src_half) x = widen_from(g, from, x);
  bool src_f64 = from == HL_JIT_F64;
  if (!g->is_float) {  // truncate, saturate, NaN -> 0: LLVM's fpto[su]i.sat
    LLVMTypeRef types[2] = {g->vec, LLVMTypeOf(x)};
    return call2(g, g->is_signed ? "llvm.fptosi.sat" : "llvm.fptoui.sat", types, 2, &x, 1);
  }
  switch (to) {
    case HL_JIT_F64:
      return f32_to_f64(g, x);
    case HL_JIT_F32:
      return src_f64 ? f64_to_f32(g, x) : x;
    default:
      // From f64: rounded on its bits; from f32 (or the other 16-bit type,
      // exact in f32): narrowed (convert.c: f32 -> bf16 keeps NaN payloads).
      if (src_f64) return f64_to_half(g, x, to);
      return narrow_to(g, to, x, to == HL_JIT_BF16 && from == HL_JIT_F32);
  }
}

// ((base + elem + lane) / inner) % size as the current type.
static LLVMValueRef iota(gen_t *g, const hl_jit_value_t *v, LLVMValueRef elem) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef i64 = LLVMInt64TypeInContext(g->c);
  LLVMValueRef lanes[64];
  for (int i = 0; i < g->lanes; i++) lanes[i] = LLVMConstInt(i64, (unsigned long long)i, 0);
  LLVMValueRef first = LLVMBuildAdd(b, g->base, elem, "");
  LLVMValueRef s = LLVMBuildInsertElement(b, LLVMGetUndef(g->i64v), first,
                                          LLVMConstInt(LLVMInt32TypeInContext(g->c), 0, 0), "");
  s = LLVMBuildShuffleVector(b, s, LLVMGetUndef(g->i64v), LLVMConstNull(g->i32v), "");
  LLVMValueRef idx = LLVMBuildAdd(b, s, LLVMConstVector(lanes, (unsigned)g->lanes), "");
  if (v->iota_inner > 1)
    idx = LLVMBuildUDiv(b, idx, ci(g, g->i64v, (unsigned long long)v->iota_inner), "");
  idx = LLVMBuildURem(b, idx, ci(g, g->i64v, (unsigned long long)v->iota_size), "");
  if (g->t == HL_JIT_F64) return LLVMBuildSIToFP(b, idx, g->f64v, "");
  if (g->t == HL_JIT_F32)
    return LLVMBuildFPTrunc(b, LLVMBuildSIToFP(b, idx, g->f64v, ""), g->f32v, "");
  return g->bits < 64 ? LLVMBuildTrunc(b, idx, g->vec, "") : idx;
}

// clamp(lo, x, hi) of the current type (jit_body.h).
static LLVMValueRef clamp(gen_t *g, LLVMValueRef lo, LLVMValueRef x, LLVMValueRef hi) {
  LLVMBuilderRef b = g->b;
  if (!g->is_float) {
    hl_jit_value_t op = {.op = HL_JIT_MAX};
    LLVMValueRef r = int_op(g, &op, x, lo);
    op.op = HL_JIT_MIN;
    return int_op(g, &op, r, hi);
  }
  if (g->is_half)
    return narrow(g, float_minmax(g, float_minmax(g, widen(g, x), widen(g, lo), true),
                                  widen(g, hi), false));
  LLVMValueRef r = float_minmax(g, float_minmax(g, x, lo, true), hi, false);
  if (g->t != HL_JIT_F32) return r;
  // The kernel's f32 -> double -> f32 quiets a NaN.
  LLVMValueRef quiet =
      LLVMBuildOr(b, LLVMBuildBitCast(b, r, g->i32v, ""), ci(g, g->i32v, 0x00400000u), "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, r, r, ""),
                         LLVMBuildBitCast(b, quiet, g->f32v, ""), r, "");
}

// One copy of the body at element offset `elem` (i64), stored to out.
static void emit_copy(gen_t *g, LLVMValueRef *inputs, LLVMValueRef *scalars, LLVMValueRef out,
                      LLVMValueRef elem, bool stream, LLVMValueRef *val) {
  LLVMBuilderRef b = g->b;
  for (int i = 0; i < g->body->count; i++) {
    const hl_jit_value_t *v = &g->body->values[i];
    LLVMValueRef a = hl_jit_arity(v->op) > 0 ? val[v->a] : NULL;
    LLVMValueRef c = hl_jit_arity(v->op) > 1 ? val[v->b] : NULL;
    LLVMValueRef r;
    set_type(g, hl_jit_value_type(g->body, i));
    if (v->op == HL_JIT_LOAD) {
      LLVMValueRef p = LLVMBuildGEP2(b, g->elem, inputs[v->a], &elem, 1, "");
      r = LLVMBuildLoad2(b, g->vec, p, "");
      LLVMSetAlignment(r, (unsigned)hl_jit_type_size(g->t));
    } else if (v->op == HL_JIT_CONVERT) {
      r = convert(g, hl_jit_value_type(g->body, v->a), g->t, a);
    } else if (v->op == HL_JIT_IOTA) {
      r = iota(g, v, elem);
    } else if (v->op == HL_JIT_CLAMP) {
      r = clamp(g, a, c, val[v->c]);
    } else if (v->op == HL_JIT_BROADCAST) {
      r = scalars[v->a];
    } else if (v->op == HL_JIT_SELECT) {
      r = LLVMBuildSelect(b, a, c, val[v->c], "");
    } else if (hl_jit_is_mask_op(v->op)) {
      r = compare(g, v->op, a, c);
    } else if (g->is_half) {
      r = narrow(g, float_op(g, v, widen(g, a), c ? widen(g, c) : NULL));
    } else if (g->is_float) {
      r = float_op(g, v, a, c);
    } else {
      r = int_op(g, v, a, c);
    }
    val[i] = r;
  }
  set_type(g, g->out_type);
  size_t es = hl_jit_type_size(g->t);
  LLVMValueRef p = LLVMBuildGEP2(b, g->elem, out, &elem, 1, "");
  LLVMValueRef st = LLVMBuildStore(b, val[g->body->count - 1], p);
  if (stream) {
    LLVMSetAlignment(st, (unsigned)(es * (size_t)g->lanes));
    LLVMValueRef one = LLVMConstInt(LLVMInt32TypeInContext(g->c), 1, 0);
    LLVMSetMetadata(st, LLVMGetMDKindIDInContext(g->c, "nontemporal", 11),
                    LLVMMDNodeInContext(g->c, &one, 1));
  } else {
    LLVMSetAlignment(st, (unsigned)es);
  }
  if (g->exact || !g->exact_fn) return;
  // A NaN lane in the result: the vector again, exactly (it stores over
  // this one).
  LLVMValueRef r = val[g->body->count - 1];
  if (g->is_half) r = widen(g, r);
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, r, r, "");
  LLVMValueRef bits = LLVMBuildBitCast(b, nan, LLVMIntTypeInContext(g->c, (unsigned)g->lanes), "");
  LLVMValueRef any = LLVMBuildICmp(b, LLVMIntNE, bits, LLVMConstNull(LLVMTypeOf(bits)), "");
  LLVMValueRef f = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef fix = LLVMAppendBasicBlockInContext(g->c, f, "nan");
  LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(g->c, f, "cont");
  LLVMBuildCondBr(b, any, fix, cont);
  LLVMPositionBuilderAtEnd(b, fix);
  LLVMValueRef args[5] = {g->fn_in, out, elem, g->fn_valid, g->fn_base};
  LLVMBuildCall2(b, g->exact_ty, g->exact_fn, args, 5, "");
  LLVMBuildBr(b, cont);
  LLVMPositionBuilderAtEnd(b, cont);
}

static void set_width_attributes(gen_t *g, LLVMValueRef f) {
  if (g_vector_bytes * 8 <= 256) return;
  char width[16];
  snprintf(width, sizeof width, "%d", g_vector_bytes * 8);
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(g->c, "min-legal-vector-width", 22, width,
                                                    (unsigned)strlen(width)));
  LLVMAddAttributeAtIndex(
      f, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(g->c, "prefer-vector-width", 19, width, (unsigned)strlen(width)));
}

// Input pointers, broadcast scalars and (with_mask) the lanes below valid.
static void prologue(gen_t *g, LLVMValueRef in, LLVMValueRef valid, bool with_mask,
                     LLVMValueRef *inputs, LLVMValueRef *scalars) {
  LLVMContextRef c = g->c;
  LLVMBuilderRef b = g->b;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  const hl_jit_body_t *body = g->body;
  for (int i = 0; i < body->input_count; i++) {
    LLVMValueRef k = LLVMConstInt(i64, (unsigned long long)i, 0);
    inputs[i] = LLVMBuildLoad2(b, ptr, LLVMBuildGEP2(b, ptr, in, &k, 1, ""), "");
    if (body->input_scalar[i]) {
      set_type(g, g->in_type[i]);
      LLVMValueRef s = LLVMBuildLoad2(b, g->elem, inputs[i], "");
      LLVMValueRef v =
          LLVMBuildInsertElement(b, LLVMGetUndef(g->vec), s, LLVMConstInt(i32, 0, 0), "");
      scalars[i] = LLVMBuildShuffleVector(b, v, LLVMGetUndef(g->vec), LLVMConstNull(g->i32v), "");
    }
  }
  g->valid_mask = NULL;
  if (with_mask) {
    LLVMValueRef idx[64];
    for (int i = 0; i < g->lanes; i++) idx[i] = LLVMConstInt(i32, (unsigned long long)i, 0);
    LLVMValueRef v32 = LLVMBuildTrunc(b, valid, i32, "");
    LLVMValueRef vs =
        LLVMBuildInsertElement(b, LLVMGetUndef(g->i32v), v32, LLVMConstInt(i32, 0, 0), "");
    vs = LLVMBuildShuffleVector(b, vs, LLVMGetUndef(g->i32v), LLVMConstNull(g->i32v), "");
    g->valid_mask = LLVMBuildICmp(b, LLVMIntULT, LLVMConstVector(idx, (unsigned)g->lanes), vs, "");
  }
}

// void exact(in, out, elem, valid): the vector at element elem, with every
// NaN made explicit (nan_rule), stored; out of line and cold.
static void emit_exact(gen_t *g, const char *name) {
  LLVMContextRef c = g->c;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef params[5] = {ptr, ptr, i64, i64, i64};
  g->exact_ty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 5, 0);
  LLVMValueRef f = LLVMAddFunction(g->m, name, g->exact_ty);
  LLVMSetLinkage(f, LLVMInternalLinkage);
  set_width_attributes(g, f);
  static const char *kAttrs[] = {"noinline", "cold"};
  for (int i = 0; i < 2; i++)
    LLVMAddAttributeAtIndex(
        f, LLVMAttributeFunctionIndex,
        LLVMCreateEnumAttribute(c, LLVMGetEnumAttributeKindForName(kAttrs[i], strlen(kAttrs[i])),
                                0));
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(c, f, "entry"));
  LLVMValueRef inputs[HL_JIT_MAX_INPUTS], scalars[HL_JIT_MAX_INPUTS];
  prologue(g, LLVMGetParam(f, 0), LLVMGetParam(f, 3), true, inputs, scalars);
  g->base = LLVMGetParam(f, 4);
  g->exact = true;
  emit_copy(g, inputs, scalars, LLVMGetParam(f, 1), LLVMGetParam(f, 2), false, g->val);
  g->exact = false;
  LLVMBuildRetVoid(g->b);
  g->exact_fn = f;
}

static void emit_function(gen_t *g, const char *name, int unroll, bool single, bool stream) {
  LLVMContextRef c = g->c;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef params[5] = {ptr, ptr, i64, i64, i64};
  LLVMValueRef f =
      LLVMAddFunction(g->m, name, LLVMFunctionType(LLVMVoidTypeInContext(c), params, 5, 0));
  set_width_attributes(g, f);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, f, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c, f, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, f, "done");
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef in = LLVMGetParam(f, 0), out = LLVMGetParam(f, 1);
  LLVMValueRef nvec = LLVMGetParam(f, 2), valid = LLVMGetParam(f, 3);
  LLVMValueRef inputs[HL_JIT_MAX_INPUTS], scalars[HL_JIT_MAX_INPUTS];
  prologue(g, in, valid, single, inputs, scalars);
  g->fn_in = in;
  g->fn_valid = valid;
  g->fn_base = g->base = LLVMGetParam(f, 4);
  LLVMValueRef any = LLVMBuildICmp(b, LLVMIntSGT, nvec, LLVMConstInt(i64, 0, 0), "");
  LLVMBuildCondBr(b, any, loop, done);
  LLVMPositionBuilderAtEnd(b, loop);
  LLVMValueRef k = LLVMBuildPhi(b, i64, "k");
  for (int u = 0; u < unroll; u++) {
    LLVMValueRef vi = LLVMBuildAdd(b, k, LLVMConstInt(i64, (unsigned long long)u, 0), "");
    LLVMValueRef elem = LLVMBuildMul(b, vi, LLVMConstInt(i64, (unsigned long long)g->lanes, 0), "");
    emit_copy(g, inputs, scalars, out, elem, stream, g->val);
  }
  LLVMValueRef next = LLVMBuildAdd(b, k, LLVMConstInt(i64, (unsigned long long)unroll, 0), "");
  LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
  LLVMAddIncoming(k, &zero, &entry, 1);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(b);
  LLVMAddIncoming(k, &next, &here, 1);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, nvec, ""), loop, done);
  LLVMPositionBuilderAtEnd(b, done);
  // Non-temporal stores are weakly ordered: the caller fences after the
  // loop (jit_kernel.c; a seq_cst fence here would be x86's mfence, which
  // also waits for the loads: a 64 MiB axpy ran 1.5x slower).
  LLVMBuildRetVoid(b);
}

// Values live at once (a value dies at its last use), for the unroll that
// keeps every copy in registers.
static int max_live(const hl_jit_body_t *body) {
  int last[HL_JIT_MAX_VALUES];
  for (int i = 0; i < body->count; i++) last[i] = i;
  for (int i = 0; i < body->count; i++) {
    const hl_jit_value_t *v = &body->values[i];
    const int ops[3] = {v->a, v->b, v->c};
    for (int k = 0; k < hl_jit_arity(v->op); k++) last[ops[k]] = i;
  }
  last[body->count - 1] = body->count;
  int live = 0, most = 0;
  for (int i = 0; i < body->count; i++) {
    live++;
    if (live > most) most = live;
    const hl_jit_value_t *v = &body->values[i];
    const int ops[3] = {v->a, v->b, v->c};
    for (int k = 0; k < hl_jit_arity(v->op); k++)
      if (last[ops[k]] == i) {
        bool seen = false;  // an operand used twice by this value dies once
        for (int j = 0; j < k; j++) seen |= ops[j] == ops[k];
        if (!seen) live--;
      }
    if (last[i] == i) live--;
  }
  return most;
}

static bool define_symbol(const char *name, hl_jit_fn_t fn) {
  for (int i = 0; i < g_symbol_count; i++)
    if (strcmp(g_symbols[i], name) == 0) return true;
  if (g_symbol_count == MAX_SYMBOLS) return false;
  uint64_t addr;
  memcpy(&addr, &fn, sizeof(addr));
  LLVMOrcCSymbolMapPair pair = {
      LLVMOrcLLJITMangleAndIntern(g_jit, name),
      {addr, {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0}}};
  LLVMErrorRef err = LLVMOrcJITDylibDefine(g_jd, LLVMOrcAbsoluteSymbols(&pair, 1));
  if (err) {
    log_error("binding a routine", err);
    return false;
  }
  g_symbols[g_symbol_count++] = strdup(name);
  return true;
}

static hl_jit_loop_fn lookup(const char *name) {
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(g_jit, &addr, name);
  if (err) {
    log_error("compiling a loop", err);
    return NULL;
  }
  hl_jit_loop_fn f;
  memcpy(&f, &addr, sizeof(f));
  return f;
}

//===----------------------------------------------------------------------===//
// Disk cache: <dir>/hl-jit-<hash>.o holds a header, the full key (the body,
// this generator's target and version) and the object file. A file is read
// only when its key matches; new files are written to a temporary name and
// linked to theirs (never replacing an existing file: concurrent ranks
// writing the same body leave one whole copy).
//===----------------------------------------------------------------------===//

static const char kMagic[8] = "HLJIT02";

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// The full key: what the object depends on besides the body.
static char *full_key(const char *key, size_t key_len, size_t *len) {
  size_t n = strlen(g_target) + strlen(g_features) + key_len + 64;
  char *k = malloc(n);
  if (!k) return NULL;
  int h = snprintf(k, n, "%s|%s|api%d|", g_target, g_features, HL_JIT_CODEGEN_API_VERSION);
  memcpy(k + h, key, key_len);
  *len = (size_t)h + key_len;
  return k;
}

static LLVMMemoryBufferRef cache_read(const char *path, const char *key, size_t len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  LLVMMemoryBufferRef buf = NULL;
  char magic[8];
  uint64_t klen = 0, olen = 0;
  char *k = NULL, *obj = NULL;
  if (fread(magic, 1, 8, f) == 8 && memcmp(magic, kMagic, 8) == 0 && fread(&klen, 8, 1, f) == 1 &&
      klen == len && fread(&olen, 8, 1, f) == 1 && olen > 0 && olen < (1u << 30) &&
      (k = malloc(len)) && fread(k, 1, len, f) == len && memcmp(k, key, len) == 0 &&
      (obj = malloc(olen)) && fread(obj, 1, olen, f) == olen)
    buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, olen, "hl_fusion_jit_cached");
  free(k);
  free(obj);
  fclose(f);
  return buf;
}

static void cache_write(const char *path, const char *key, size_t len, LLVMMemoryBufferRef obj) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.%lx.tmp", path, (long)getpid(), (unsigned long)pthread_self());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    if (g_log) fprintf(stderr, "fusion jit: cache: %s: %s\n", tmp, strerror(errno));
    return;
  }
  FILE *f = fdopen(fd, "wb");
  uint64_t klen = len, olen = LLVMGetBufferSize(obj);
  bool ok = f && fwrite(kMagic, 1, 8, f) == 8 && fwrite(&klen, 8, 1, f) == 1 &&
            fwrite(&olen, 8, 1, f) == 1 && fwrite(key, 1, len, f) == len &&
            fwrite(LLVMGetBufferStart(obj), 1, olen, f) == olen;
  ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
  // link, not rename: an existing entry (another rank's) is kept.
  if (ok && link(tmp, path) != 0 && errno != EEXIST && g_log)
    fprintf(stderr, "fusion jit: cache: %s: %s\n", path, strerror(errno));
  unlink(tmp);
}

static LLVMMemoryBufferRef emit_object(gen_t *gp, const hl_jit_body_t *body, char names[3][48],
                                       int unroll, bool calls, const char **why);

static const char *compile(const hl_jit_body_t *body, const char *key, size_t key_len,
                           const char *cache_dir, hl_jit_loops_t *out, bool *cached) {
  *cached = false;
  memset(out, 0, sizeof(*out));
  if (!g_jit) return "no code generator";
  const char *why = hl_jit_body_check(body);
  if (why) return why;
  gen_t g = {.body = body};
  // Lanes: a vector of the widest type computed (16-bit types in f32), and
  // whole 32-byte vectors for the routines (8 f32 / 4 f64 lanes).
  size_t compute = 1;
  int min_lanes = 1;
  bool calls = false;
  for (int i = 0; i < body->count; i++) {
    hl_jit_type_t t = hl_jit_value_type(body, i);
    size_t es = t == HL_JIT_BF16 || t == HL_JIT_F16 ? 4 : hl_jit_type_size(t);
    if (es > compute) compute = es;
    if (!hl_jit_is_call(body->values[i].op)) continue;
    calls = true;
    if (body->values[i].fn && min_lanes < (int)(32 / es)) min_lanes = (int)(32 / es);
  }
  for (int i = 0; i < body->input_count; i++) g.in_type[i] = hl_jit_input_type(body, i);
  g.out_type = hl_jit_value_type(body, body->count - 1);
  g.lanes = (int)((size_t)g_vector_bytes / compute);
  if (g.lanes < min_lanes) g.lanes = min_lanes;
  if (g.lanes > 64) g.lanes = 64;
  // Copies per iteration: as many as keep every live value in a register.
  int live = max_live(body), unroll = 1;
  if (!calls)
    for (int u = 4; u > 1 && unroll == 1; u /= 2)
      if (live * u <= g_vector_regs - 3) unroll = u;

  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < body->count && !why; i++) {
    const hl_jit_value_t *v = &body->values[i];
    if (hl_jit_is_call(v->op) && !define_symbol(v->fn_name, v->fn ? v->fn : v->scalar_fn))
      why = "a routine the JIT could not bind";
  }
  pthread_mutex_unlock(&g_mu);
  if (why) return why;
  // Functions named by the key's hash: the same in every process, so a
  // cached object links as it was compiled.
  size_t flen = 0;
  char *fkey = full_key(key, key_len, &flen);
  if (!fkey) return "out of memory compiling a JIT body";
  uint64_t hash = fnv1a(0xcbf29ce484222325ull, fkey, flen);
  char names[3][48];
  snprintf(names[0], sizeof names[0], "hl_jit_%016llx_main", (unsigned long long)hash);
  snprintf(names[1], sizeof names[1], "hl_jit_%016llx_single", (unsigned long long)hash);
  snprintf(names[2], sizeof names[2], "hl_jit_%016llx_stream", (unsigned long long)hash);
  char path[4096] = "";
  if (cache_dir && *cache_dir)
    snprintf(path, sizeof path, "%s/hl-jit-%016llx.o", cache_dir, (unsigned long long)hash);
  LLVMMemoryBufferRef obj = path[0] ? cache_read(path, fkey, flen) : NULL;
  *cached = obj != NULL;
  if (!obj) {
    obj = emit_object(&g, body, names, unroll, calls, &why);
    if (obj && path[0]) cache_write(path, fkey, flen, obj);
  }
  free(fkey);
  if (!obj) return why;
  double t_link = now_ms();
  pthread_mutex_lock(&g_mu);
  LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(g_jit, g_jd, obj);
  if (err) {
    log_error("adding an object", err);
    why = "LLVM refused a JIT object";
  } else {
    out->main_fn = lookup(names[0]);
    out->single_fn = lookup(names[1]);
    out->stream_fn = calls ? out->main_fn : lookup(names[2]);
    if (!out->main_fn || !out->single_fn || !out->stream_fn) why = "LLVM failed to link a loop";
  }
  pthread_mutex_unlock(&g_mu);
  if (g_log) fprintf(stderr, "fusion jit: linked in %.2f ms\n", now_ms() - t_link);
  out->lanes = g.lanes;
  out->unroll = unroll;
  return why;
}

// The body's IR, compiled to an object file for the host.
static LLVMMemoryBufferRef emit_object(gen_t *gp, const hl_jit_body_t *body, char names[3][48],
                                       int unroll, bool calls, const char **why) {
  gen_t g = *gp;
  double t_ir = now_ms();
  g.c = LLVMContextCreate();
  g.m = LLVMModuleCreateWithNameInContext("hl_fusion_jit", g.c);
  LLVMSetDataLayout(g.m, g_data_layout);
  LLVMSetTarget(g.m, g_triple);
  g.b = LLVMCreateBuilderInContext(g.c);
  g.f32v = LLVMVectorType(LLVMFloatTypeInContext(g.c), (unsigned)g.lanes);
  g.i32v = LLVMVectorType(LLVMInt32TypeInContext(g.c), (unsigned)g.lanes);
  g.f64v = LLVMVectorType(LLVMDoubleTypeInContext(g.c), (unsigned)g.lanes);
  g.i64v = LLVMVectorType(LLVMInt64TypeInContext(g.c), (unsigned)g.lanes);
  set_type(&g, g.out_type);
  g.val = malloc(sizeof(LLVMValueRef) * (size_t)body->count);
  g.exact_fn = NULL;
  // A NaN's bits matter only in a float result (into integers it converts
  // to 0, into a compare it is a NaN whatever its bits).
  if (hl_jit_type_is_float(g.out_type)) emit_exact(&g, "exact");
  emit_function(&g, names[0], unroll, false, false);
  emit_function(&g, names[1], 1, true, false);
  // Loops that call out have no streaming variant (stream = main): their
  // stores, between calls, would leave write-combining buffers half full.
  if (!calls) emit_function(&g, names[2], unroll, false, true);
  free(g.val);
  LLVMDisposeBuilder(g.b);
  char *msg = NULL;
  LLVMMemoryBufferRef obj = NULL;
  double t_verify = now_ms(), t_emit = t_verify;
  if (LLVMVerifyModule(g.m, LLVMReturnStatusAction, &msg)) {
    if (g_log) fprintf(stderr, "fusion jit: invalid IR: %s\n", msg);
    *why = "the JIT built invalid IR";
  } else {
    if (getenv("HL_FUSION_JIT_DUMP_IR")) LLVMDumpModule(g.m);
    LLVMDisposeMessage(msg);
    msg = NULL;
    pthread_mutex_lock(&g_mu);  // one code generation at a time on g_tm
    t_emit = now_ms();
    if (LLVMTargetMachineEmitToMemoryBuffer(g_tm, g.m, LLVMObjectFile, &msg, &obj)) {
      if (g_log) fprintf(stderr, "fusion jit: code generation: %s\n", msg);
      *why = "LLVM failed to compile a loop";
      obj = NULL;
    }
    pthread_mutex_unlock(&g_mu);
  }
  if (g_log)
    fprintf(stderr, "fusion jit: IR %.2f ms, verified in %.2f ms, machine code in %.2f ms\n",
            t_verify - t_ir, t_emit - t_verify, now_ms() - t_emit);
  LLVMDisposeMessage(msg);
  LLVMDisposeModule(g.m);
  LLVMContextDispose(g.c);
  return obj;
}

static const hl_jit_codegen_api_t kApi = {HL_JIT_CODEGEN_API_VERSION, init, compile};

__attribute__((visibility("default"))) const hl_jit_codegen_api_t *hl_jit_codegen_api(void) {
  return &kApi;
}
