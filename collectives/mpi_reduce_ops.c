// Mapping reductions onto MPI: built-in MPI_Ops for plain reducers on types
// MPI knows; user MPI_Ops for the rest.
//
//   built-in: min/max/and/or/xor on s8..s64 and u8..u64; add/multiply on
//             s32/s64/u32/u64, f32, f64, c64, c128; pred (bytes 0/1) with
//             or (= add, max), and (= multiply, min), xor as bitwise ops.
//   typed user op: add/multiply/min/max on f16, bf16 and min/max on f32 /
//             f64, computed as the executor's element-wise kernels do (in
//             double, rounded once to the type; min/max propagate NaN and
//             order -0 < +0, which MPI_MIN / MPI_MAX do not); wrapping
//             add/multiply on s8/u8/s16/u16, because Open MPI 4.1's op/avx
//             component saturates MPI_SUM on them (open-mpi/ompi#8045;
//             MPICH's wrap and stay built-in).
//   executor user op: everything else (custom reducer computations, s4 /
//             u4 / f8 / ..., complex with a custom reducer): the user
//             function calls reducer->combine, which runs the reducer
//             computation through the executor, so results equal the
//             executor's own reduce.
//             min/max on u8..u64 under MPICH, whose built-ins compare them
//             as signed (pmodels/mpich#6083).
//   complex min/max: rejected (the spec defines no order on complex).
//
// MPI user functions get no context argument. The context travels as an
// attribute of the datatype handed to the MPI call: typed ops use one cached
// datatype per (dtype, op); executor ops make a datatype per call. The user
// function therefore reads only its own arguments: re-entrant, and several
// pending non-blocking reductions never share state. Executor ops are
// created non-commutative, so MPI combines in rank order, as a sequential
// reduce over the group would.
#include <complex.h>
#include <math.h>
#include <string.h>

#include "collectives/mpi_family.h"
#include "collectives/mpi_internal.h"
#include "runtime/base/alloc.h"
#include "runtime/base/float_minmax.h"

typedef struct hl_mpi_custom_state {
  hl_dtype_t dtype;
  hl_comm_reduce_op_t op;
  bool typed;                 // typed C loop; otherwise reducer->combine
  hl_comm_reducer_t reducer;  // executor path
  hl_status_t error;          // first error inside the user function
} hl_mpi_custom_state_t;

static int g_keyval = MPI_KEYVAL_INVALID;
static MPI_Op g_op_commute = MPI_OP_NULL, g_op_ordered = MPI_OP_NULL;
// Typed states are static data: the attribute points into this table.
static hl_mpi_custom_state_t g_typed_states[HL_DTYPE_COUNT_][8];

static double apply(hl_comm_reduce_op_t op, double a, double b) {
  switch (op) {
    case HL_COMM_REDUCE_ADD: return a + b;
    case HL_COMM_REDUCE_MUL: return a * b;
    case HL_COMM_REDUCE_MIN: return hl_minimum_f64(a, b);
    case HL_COMM_REDUCE_MAX: return hl_maximum_f64(a, b);
    default: return a;
  }
}

// Wrapping integer add / multiply (XLA: two's complement, modulo 2^bits).
// Signed and unsigned share the bits, so the loop runs on the unsigned type;
// operands are widened to unsigned int first so that the integer promotion of
// uint8_t / uint16_t to (signed) int cannot overflow in the multiply.
#define WRAP_LOOP(U)                                                             \
  do {                                                                           \
    const U *a = in;                                                             \
    U *b = inout;                                                                \
    if (op == HL_COMM_REDUCE_MUL)                                                \
      for (int i = 0; i < n; i++) b[i] = (U)((unsigned)a[i] * (unsigned)b[i]);   \
    else                                                                         \
      for (int i = 0; i < n; i++) b[i] = (U)((unsigned)a[i] + (unsigned)b[i]);   \
  } while (0)

// Unsigned minimum / maximum (MPICH's built-ins compare them as signed).
#define MINMAX_LOOP(U)                                                           \
  do {                                                                           \
    const U *a = in;                                                             \
    U *b = inout;                                                                \
    if (op == HL_COMM_REDUCE_MIN)                                                \
      for (int i = 0; i < n; i++) b[i] = a[i] < b[i] ? a[i] : b[i];              \
    else                                                                         \
      for (int i = 0; i < n; i++) b[i] = a[i] > b[i] ? a[i] : b[i];              \
  } while (0)

static void typed_combine(hl_dtype_t t, hl_comm_reduce_op_t op, const void *in, void *inout,
                          int n) {
  bool minmax = op == HL_COMM_REDUCE_MIN || op == HL_COMM_REDUCE_MAX;
  switch (t) {
    case HL_F16: {
      const uint16_t *a = in;
      uint16_t *b = inout;
      for (int i = 0; i < n; i++)
        b[i] = hl_f64_to_f16(apply(op, hl_f16_to_f32(a[i]), hl_f16_to_f32(b[i])));
      break;
    }
    case HL_BF16: {
      const uint16_t *a = in;
      uint16_t *b = inout;
      for (int i = 0; i < n; i++)
        b[i] = hl_f64_to_bf16(apply(op, hl_bf16_to_f32(a[i]), hl_bf16_to_f32(b[i])));
      break;
    }
    case HL_F32: {
      const float *a = in;
      float *b = inout;
      for (int i = 0; i < n; i++) b[i] = (float)apply(op, a[i], b[i]);
      break;
    }
    case HL_F64: {
      const double *a = in;
      double *b = inout;
      for (int i = 0; i < n; i++) b[i] = apply(op, a[i], b[i]);
      break;
    }
    case HL_S8: WRAP_LOOP(uint8_t); break;
    case HL_S16: WRAP_LOOP(uint16_t); break;
    case HL_U8: if (minmax) MINMAX_LOOP(uint8_t); else WRAP_LOOP(uint8_t); break;
    case HL_U16: if (minmax) MINMAX_LOOP(uint16_t); else WRAP_LOOP(uint16_t); break;
    case HL_U32: MINMAX_LOOP(uint32_t); break;
    case HL_U64: MINMAX_LOOP(uint64_t); break;
    default:
      break;
  }
}

static void user_function(void *in, void *inout, int *len, MPI_Datatype *type) {
  void *value = NULL;
  int flag = 0;
  MPI_Type_get_attr(*type, g_keyval, &value, &flag);
  hl_mpi_custom_state_t *s = flag ? value : NULL;
  if (!s || *len <= 0) return;
  if (s->typed) {
    typed_combine(s->dtype, s->op, in, inout, *len);
  } else if (!s->error) {
    s->error = s->reducer.combine(s->reducer.state, s->dtype, in, inout, *len);
  }
}

static hl_status_t ensure_globals(void) {
  if (g_keyval != MPI_KEYVAL_INVALID) return NULL;
  int err = MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &g_keyval,
                                   NULL);
  if (err == MPI_SUCCESS) err = MPI_Op_create(user_function, 1, &g_op_commute);
  if (err == MPI_SUCCESS) err = MPI_Op_create(user_function, 0, &g_op_ordered);
  return err == MPI_SUCCESS ? NULL : hl_mpi_status(err, "creating the reduction operations");
}

// The element of `dtype` as an opaque MPI datatype carrying `state`.
static hl_status_t make_type(hl_dtype_t dtype, hl_mpi_custom_state_t *state,
                             MPI_Datatype *out) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  int err = MPI_Type_contiguous((int)hl_dtype_size(dtype), MPI_BYTE, &t);
  if (err == MPI_SUCCESS) err = MPI_Type_commit(&t);
  if (err == MPI_SUCCESS) err = MPI_Type_set_attr(t, g_keyval, state);
  if (err != MPI_SUCCESS) {
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    return hl_mpi_status(err, "creating a reduction datatype");
  }
  *out = t;
  return NULL;
}

static MPI_Datatype int_type(hl_dtype_t t) {
  switch (t) {
    case HL_PRED: case HL_U8: return MPI_UINT8_T;
    case HL_S8: return MPI_INT8_T;
    case HL_S16: return MPI_INT16_T;
    case HL_S32: return MPI_INT32_T;
    case HL_S64: return MPI_INT64_T;
    case HL_U16: return MPI_UINT16_T;
    case HL_U32: return MPI_UINT32_T;
    case HL_U64: return MPI_UINT64_T;
    default: return MPI_DATATYPE_NULL;
  }
}

static bool small_int(hl_dtype_t t) {
  return t == HL_S8 || t == HL_U8 || t == HL_S16 || t == HL_U16;
}

static bool unsigned_int(hl_dtype_t t) {
  return t == HL_U8 || t == HL_U16 || t == HL_U32 || t == HL_U64;
}

// Whether MPI_MIN / MPI_MAX order unsigned integers as unsigned: MPICH 4.0.2
// (Debian 12's) compares them as signed, so min(200, 100) on u8 is 200
// (pmodels/mpich#6083; unsigned long long again in pmodels/mpich#7507).
// Under MPICH they take the typed user op.
static bool unsigned_minmax_builtin_right(void) {
  static int right = -1;
  if (right < 0) right = hl_mpi_library_family() == HL_MPI_FAMILY_OPENMPI;
  return right;
}

// Whether MPI_SUM / MPI_PROD on 8- and 16-bit integers wrap, as XLA's do:
// MPICH computes them as C does; Open MPI 4.1's op/avx saturates MPI_SUM
// (open-mpi/ompi#8045), and an MPI we do not know gets the wrapping user op.
static bool small_int_builtin_wraps(void) {
  static int wraps = -1;
  if (wraps < 0) wraps = hl_mpi_library_family() == HL_MPI_FAMILY_MPICH;
  return wraps;
}

// A built-in (type, op) pair, or false.
static bool builtin(hl_dtype_t t, hl_comm_reduce_op_t op, MPI_Datatype *type, MPI_Op *mop) {
  if (t == HL_PRED) {
    *type = MPI_UINT8_T;
    switch (op) {
      case HL_COMM_REDUCE_ADD: case HL_COMM_REDUCE_OR: case HL_COMM_REDUCE_MAX:
        *mop = MPI_BOR; return true;
      case HL_COMM_REDUCE_MUL: case HL_COMM_REDUCE_AND: case HL_COMM_REDUCE_MIN:
        *mop = MPI_BAND; return true;
      case HL_COMM_REDUCE_XOR: *mop = MPI_BXOR; return true;
      default: return false;
    }
  }
  MPI_Datatype it = int_type(t);
  if (it != MPI_DATATYPE_NULL) {
    *type = it;
    bool ordered_right = !unsigned_int(t) || unsigned_minmax_builtin_right();
    switch (op) {
      // 8- and 16-bit add / multiply: Open MPI 4.1's op/avx saturates them
      // (s8 127 + 1 -> 127); XLA wraps. There they take the typed user op.
      case HL_COMM_REDUCE_ADD: *mop = MPI_SUM; return !small_int(t) || small_int_builtin_wraps();
      case HL_COMM_REDUCE_MUL: *mop = MPI_PROD; return !small_int(t) || small_int_builtin_wraps();
      case HL_COMM_REDUCE_MIN: *mop = MPI_MIN; return ordered_right;
      case HL_COMM_REDUCE_MAX: *mop = MPI_MAX; return ordered_right;
      case HL_COMM_REDUCE_AND: *mop = MPI_BAND; return true;
      case HL_COMM_REDUCE_OR: *mop = MPI_BOR; return true;
      case HL_COMM_REDUCE_XOR: *mop = MPI_BXOR; return true;
      default: return false;
    }
  }
  switch (t) {
    case HL_F32: *type = MPI_FLOAT; break;
    case HL_F64: *type = MPI_DOUBLE; break;
    case HL_C64: *type = MPI_C_FLOAT_COMPLEX; break;
    case HL_C128: *type = MPI_C_DOUBLE_COMPLEX; break;
    default: return false;
  }
  if (op == HL_COMM_REDUCE_ADD) *mop = MPI_SUM;
  else if (op == HL_COMM_REDUCE_MUL) *mop = MPI_PROD;
  else return false;
  return true;
}

static bool typed_supported(hl_dtype_t t, hl_comm_reduce_op_t op) {
  bool minmax = op == HL_COMM_REDUCE_MIN || op == HL_COMM_REDUCE_MAX;
  if (t == HL_F32 || t == HL_F64) return minmax;
  if (unsigned_int(t) && minmax) return true;
  if (small_int(t)) return op == HL_COMM_REDUCE_ADD || op == HL_COMM_REDUCE_MUL;
  if (t == HL_F16 || t == HL_BF16) return minmax || op == HL_COMM_REDUCE_ADD ||
                                          op == HL_COMM_REDUCE_MUL;
  return false;
}

hl_status_t hl_reduction_check_type(hl_dtype_t dtype, hl_comm_reduce_op_t op) {
  if (hl_dtype_is_complex(dtype) && (op == HL_COMM_REDUCE_MIN || op == HL_COMM_REDUCE_MAX))
    return HL_INVALID("%s reduction of complex values is not defined (complex numbers have no "
                      "order)", op == HL_COMM_REDUCE_MIN ? "minimum" : "maximum");
  if (!hl_dtype_is_array(dtype) || hl_dtype_size(dtype) == 0)
    return HL_INVALID("cannot reduce values of type %s", hl_dtype_name(dtype));
  return NULL;
}

hl_status_t hl_mpi_reduction_begin(hl_mpi_coll_t *coll, hl_dtype_t dtype,
                                   const hl_comm_reducer_t *reducer, hl_mpi_reduction_t *out) {
  memset(out, 0, sizeof(*out));
  out->owned_type = MPI_DATATYPE_NULL;
  hl_comm_reduce_op_t op = reducer->op;
  HL_RETURN_IF_ERROR(hl_reduction_check_type(dtype, op));
  if (builtin(dtype, op, &out->type, &out->op)) return NULL;
  HL_RETURN_IF_ERROR(ensure_globals());
  if (typed_supported(dtype, op)) {
    hl_mpi_typed_op_t *slot = &coll->typed[dtype][op];
    if (slot->type == MPI_DATATYPE_NULL) {
      hl_mpi_custom_state_t *s = &g_typed_states[dtype][op];
      s->dtype = dtype;
      s->op = op;
      s->typed = true;
      HL_RETURN_IF_ERROR(make_type(dtype, s, &slot->type));
    }
    out->type = slot->type;
    out->op = g_op_commute;
    return NULL;
  }
  if (!reducer->combine)
    return HL_INVALID("no way to reduce type %s with this reducer", hl_dtype_name(dtype));
  hl_mpi_custom_state_t *s = hl_calloc(1, sizeof(*s));
  if (!s) return HL_OOM();
  s->dtype = dtype;
  s->op = op;
  s->reducer = *reducer;
  hl_status_t st = make_type(dtype, s, &out->owned_type);
  if (st) {
    hl_free(s);
    return st;
  }
  out->state = s;
  out->type = out->owned_type;
  out->op = g_op_ordered;
  out->calls_executor = true;
  return NULL;
}

hl_status_t hl_mpi_reduction_end(hl_mpi_reduction_t *r) {
  if (!r) return NULL;
  hl_status_t st = NULL;
  if (r->owned_type != MPI_DATATYPE_NULL) MPI_Type_free(&r->owned_type);
  if (r->state) {
    st = r->state->error;
    hl_free(r->state);
  }
  r->state = NULL;
  return st;
}

void hl_mpi_reduce_ops_deinit(hl_mpi_coll_t *coll) {
  for (int t = 0; t < HL_DTYPE_COUNT_; t++)
    for (int o = 0; o < 8; o++)
      if (coll->typed[t][o].type != MPI_DATATYPE_NULL) MPI_Type_free(&coll->typed[t][o].type);
}
