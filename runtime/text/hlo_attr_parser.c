// Instruction attributes (HLO_FORMAT_FACTS.md §3.7) decoded into the
// HloInstructionProto-shaped fields of hl_attrs_t (runtime/ir/module.h).
// Unknown attribute names are skipped, as real dumps carry attributes this
// runtime does not use; a malformed value of a known attribute is an error.
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser_internal.h"

typedef hl_status_t (*attr_fn_t)(hl_parser_t *p, hl_instruction_t *inst, hl_called_slots_t *s,
                                 const hl_token_t *name);

//===----------------------------------------------------------------------===//
// Value helpers
//===----------------------------------------------------------------------===//

static hl_status_t parse_bool(hl_lexer_t *lx, bool *out) {
  if (hl_tok_is_word(&lx->tok, "true") || hl_tok_is_word(&lx->tok, "false")) {
    *out = hl_tok_is_word(&lx->tok, "true");
    hl_lexer_next(lx);
    return NULL;
  }
  return hl_lexer_error(lx, NULL, "expected true or false");
}

static hl_status_t parse_string(hl_lexer_t *lx, char **out) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_status_t st = hl_lexer_decode_string(lx, &lx->tok, &sb);
  if (!st) {
    char *v = hl_strbuf_take(&sb);
    if (!v) v = hl_strdup("");
    if (!v) st = HL_OOM();
    hl_free(*out);
    *out = v;
    hl_lexer_next(lx);
  }
  hl_strbuf_deinit(&sb);
  return st;
}

// String or raw {...} (JSON dict) value, stored as text.
static hl_status_t parse_string_or_dict(hl_lexer_t *lx, char **out) {
  if (lx->tok.kind != HL_TOK_LBRACE) return parse_string(lx, out);
  const char *t;
  size_t n;
  HL_RETURN_IF_ERROR(hl_lexer_take_braced_raw(lx, &t, &n));
  char *v = hl_strndup(t, n);
  if (!v) return HL_OOM();
  hl_free(*out);
  *out = v;
  return NULL;
}

static hl_status_t parse_int32(hl_lexer_t *lx, int32_t *out) {
  hl_token_t at = lx->tok;
  int64_t v;
  HL_RETURN_IF_ERROR(hl_parse_int64(lx, &v));
  if (v < INT32_MIN || v > INT32_MAX) return hl_lexer_error(lx, &at, "value out of int32 range");
  *out = (int32_t)v;
  return NULL;
}

// Case-insensitive match of the current identifier against names[]; the
// value is the index unless values[] is given.
static hl_status_t parse_enum(hl_lexer_t *lx, const char *const *names, int count, int *out,
                              const char *what) {
  if (lx->tok.kind == HL_TOK_IDENT) {
    for (int i = 0; i < count; i++) {
      if (!names[i] || strlen(names[i]) != lx->tok.length) continue;
      size_t k = 0;
      while (k < lx->tok.length && tolower((unsigned char)lx->tok.text[k]) ==
                                       tolower((unsigned char)names[i][k]))
        k++;
      if (k == lx->tok.length) {
        *out = i;
        hl_lexer_next(lx);
        return NULL;
      }
    }
  }
  return hl_lexer_error(lx, NULL, "expected %s", what);
}

// {{a,b},{c}} -> array of lists.
static hl_status_t parse_list_of_lists(hl_lexer_t *lx, hl_i64_list_t **out, int *out_count) {
  *out = NULL;
  *out_count = 0;
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LBRACE, "'{'"));
  int cap = 0;
  while (lx->tok.kind != HL_TOK_RBRACE) {
    if (*out_count == cap) {
      cap = cap ? cap * 2 : 8;
      hl_i64_list_t *v = hl_realloc(*out, (size_t)cap * sizeof(hl_i64_list_t));
      if (!v) return HL_OOM();
      *out = v;
    }
    memset(&(*out)[*out_count], 0, sizeof(hl_i64_list_t));
    (*out_count)++;
    HL_RETURN_IF_ERROR(hl_parse_i64_list(lx, &(*out)[*out_count - 1]));
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  return hl_expect(lx, HL_TOK_RBRACE, "',' or '}'");
}

static void free_lists(hl_i64_list_t *lists, int n) {
  for (int i = 0; i < n; i++) hl_i64_list_deinit(&lists[i]);
  hl_free(lists);
}

// [a,b,c] (square-bracketed integers).
static hl_status_t parse_square_list(hl_lexer_t *lx, hl_i64_list_t *out) {
  hl_i64_list_deinit(out);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LSQUARE, "'['"));
  int64_t buf[HL_MAX_RANK * 4];
  int n = 0;
  while (lx->tok.kind != HL_TOK_RSQUARE) {
    if (n == (int)(sizeof(buf) / sizeof(buf[0]))) return hl_lexer_error(lx, NULL, "too many");
    HL_RETURN_IF_ERROR(hl_parse_int64(lx, &buf[n]));
    n++;
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RSQUARE, "',' or ']'"));
  return hl_i64_list_set(out, buf, n);
}

// T(p0,p1,...) after an iota device list; absent means identity.
static hl_status_t parse_iota_transpose(hl_lexer_t *lx, hl_i64_list_t *out) {
  if (!hl_tok_is_word(&lx->tok, "T")) return NULL;
  hl_lexer_next(lx);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' after T"));
  int64_t buf[HL_MAX_RANK * 4];
  int n = 0;
  while (lx->tok.kind != HL_TOK_RPAREN) {
    if (n == (int)(sizeof(buf) / sizeof(buf[0]))) return hl_lexer_error(lx, NULL, "too many");
    HL_RETURN_IF_ERROR(hl_parse_int64(lx, &buf[n]));
    n++;
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RPAREN, "',' or ')'"));
  return hl_i64_list_set(out, buf, n);
}

//===----------------------------------------------------------------------===//
// Attribute handlers
//===----------------------------------------------------------------------===//

#define ATTR_FN(fn) \
  static hl_status_t fn(hl_parser_t *p, hl_instruction_t *inst, hl_called_slots_t *s, \
                        const hl_token_t *name)
#define LX (&p->lx)
#define A (&inst->attrs)

ATTR_FN(attr_dimensions) { return hl_parse_i64_list(LX, &A->dimensions); }

ATTR_FN(attr_single_dimension) {  // iota_dimension=, inferred_dimension=
  int64_t d;
  HL_RETURN_IF_ERROR(hl_parse_int64(LX, &d));
  return hl_i64_list_set(&A->dimensions, &d, 1);
}

ATTR_FN(attr_index) { return hl_parse_int64(LX, &A->tuple_index); }
ATTR_FN(attr_channel_id) { return hl_parse_int64(LX, &A->channel_id); }
ATTR_FN(attr_feature_group_count) { return hl_parse_int64(LX, &A->feature_group_count); }
ATTR_FN(attr_batch_group_count) { return hl_parse_int64(LX, &A->batch_group_count); }
ATTR_FN(attr_feature_index) { return hl_parse_int64(LX, &A->feature_index); }
ATTR_FN(attr_k) { return hl_parse_int64(LX, &A->k); }
ATTR_FN(attr_delta) { return hl_parse_int64(LX, &A->delta); }
ATTR_FN(attr_exponent_bits) { return parse_int32(LX, &A->exponent_bits); }
ATTR_FN(attr_mantissa_bits) { return parse_int32(LX, &A->mantissa_bits); }

ATTR_FN(attr_epsilon) {
  hl_token_t *t = &LX->tok;
  if (t->kind == HL_TOK_INT)
    A->epsilon = t->int_negative ? -(float)t->int_magnitude : (float)t->int_magnitude;
  else if (t->kind == HL_TOK_DECIMAL)
    A->epsilon = (float)t->decimal;
  else
    return hl_lexer_error(LX, NULL, "expected a number");
  hl_lexer_next(LX);
  return NULL;
}

ATTR_FN(attr_use_global_device_ids) { return parse_bool(LX, &A->use_global_device_ids); }
ATTR_FN(attr_constrain_layout) { return parse_bool(LX, &A->constrain_layout); }
ATTR_FN(attr_is_host_transfer) { return parse_bool(LX, &A->is_host_transfer); }
ATTR_FN(attr_is_stable) { return parse_bool(LX, &A->is_stable); }
ATTR_FN(attr_indices_are_sorted) { return parse_bool(LX, &A->indices_are_sorted); }
ATTR_FN(attr_unique_indices) { return parse_bool(LX, &A->unique_indices); }
ATTR_FN(attr_is_composite) { return parse_bool(LX, &A->is_composite); }
ATTR_FN(attr_has_side_effect) { return parse_bool(LX, &A->custom_call_has_side_effect); }
ATTR_FN(attr_largest) { return parse_bool(LX, &A->largest); }
ATTR_FN(attr_is_reverse) { return parse_bool(LX, &A->is_reverse); }
ATTR_FN(attr_num_carries) { return hl_parse_int64(LX, &A->num_carries); }
ATTR_FN(attr_is_associative) {  // proto TriState: TRUE=1, FALSE=2 (0: not given)
  bool v = false;
  HL_RETURN_IF_ERROR(parse_bool(LX, &v));
  A->is_associative = v ? 1 : 2;
  return NULL;
}
ATTR_FN(attr_has_dynamic_root) { return parse_bool(LX, &A->has_dynamic_root); }

// shuffle's mode=, shifts= and indices= (newest XLA's shuffle_expander_test.cc
// spelling). Other ops' `mode` (an all-reduce attribute XLA parses and
// ignores), `shifts` and `indices` are skipped as before.
ATTR_FN(attr_mode) {
  if (inst->opcode != HL_OP_SHUFFLE) return hl_skip_attribute_value(LX, name->line);
  if (hl_tok_is_word(&LX->tok, "rotate")) {
    A->shuffle_mode = HL_SHUFFLE_ROTATE;
  } else if (hl_tok_is_word(&LX->tok, "permute")) {
    A->shuffle_mode = HL_SHUFFLE_PERMUTE;
  } else {
    return hl_lexer_error(LX, NULL, "unsupported shuffle mode (supported: rotate, permute)");
  }
  hl_lexer_next(LX);
  return NULL;
}

ATTR_FN(attr_shifts) {
  if (inst->opcode != HL_OP_SHUFFLE) return hl_skip_attribute_value(LX, name->line);
  return hl_parse_i64_list(LX, &A->shuffle_shifts);
}

ATTR_FN(attr_indices) {  // a literal with its shape: s32[3,1]{1,0} { {2}, {0}, {1} }
  if (inst->opcode != HL_OP_SHUFFLE) return hl_skip_attribute_value(LX, name->line);
  hl_shape_t shape;
  HL_RETURN_IF_ERROR(hl_parse_shape_tokens(LX, &shape));
  hl_literal_t *lit = NULL;
  hl_status_t st = hl_parse_literal_tokens(LX, &shape, &lit);
  hl_shape_deinit(&shape);
  if (st) return st;
  hl_literal_release(A->shuffle_indices);
  A->shuffle_indices = lit;
  return NULL;
}

ATTR_FN(attr_left_side) { return parse_bool(LX, &A->triangular_left_side); }
ATTR_FN(attr_unit_diagonal) { return parse_bool(LX, &A->triangular_unit_diagonal); }
ATTR_FN(attr_lower) {  // cholesky and triangular-solve both spell it lower=
  bool v = false;
  HL_RETURN_IF_ERROR(parse_bool(LX, &v));
  if (inst->opcode == HL_OP_CHOLESKY)
    A->cholesky_lower = v;
  else
    A->triangular_lower = v;
  return NULL;
}

ATTR_FN(attr_transpose_a) {
  static const char *const names[] = {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
  int v = 0;
  HL_RETURN_IF_ERROR(parse_enum(LX, names, 4, &v, "NO_TRANSPOSE, TRANSPOSE or ADJOINT"));
  A->triangular_transpose_a = (hl_triangular_transpose_t)v;
  return NULL;
}

ATTR_FN(attr_custom_call_target) { return parse_string(LX, &A->custom_call_target); }
ATTR_FN(attr_infeed_config) { return parse_string(LX, &A->infeed_config); }
ATTR_FN(attr_outfeed_config) { return parse_string(LX, &A->outfeed_config); }
ATTR_FN(attr_async_thread) { return parse_string(LX, &A->async_execution_thread); }
ATTR_FN(attr_backend_config) { return parse_string_or_dict(LX, &A->backend_config); }

ATTR_FN(attr_outfeed_shape) {
  hl_shape_t *shape = hl_calloc(1, sizeof(*shape));
  if (!shape) return HL_OOM();
  hl_status_t st = hl_parse_shape_tokens(LX, shape);
  if (st) {
    hl_free(shape);
    return st;
  }
  A->outfeed_shape = shape;
  return NULL;
}

ATTR_FN(attr_kind) {
  if (LX->tok.kind != HL_TOK_IDENT) return hl_lexer_error(LX, NULL, "expected a fusion kind");
  char *v = hl_token_strdup(&LX->tok);
  if (!v) return HL_OOM();
  A->fusion_kind = v;
  hl_lexer_next(LX);
  return NULL;
}

ATTR_FN(attr_api_version) {
  static const char *const names[] = {"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL",
                                      "API_VERSION_STATUS_RETURNING",
                                      "API_VERSION_STATUS_RETURNING_UNIFIED",
                                      "API_VERSION_TYPED_FFI"};
  return parse_enum(LX, names, 5, &A->custom_call_api_version, "an API_VERSION_* name");
}

ATTR_FN(attr_distribution) {
  static const char *const names[] = {"rng_invalid", "rng_uniform", "rng_normal"};
  return parse_enum(LX, names, 3, &A->distribution, "rng_uniform or rng_normal");
}

ATTR_FN(attr_fft_type) {
  static const char *const names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  return parse_enum(LX, names, 4, &A->fft_type, "FFT, IFFT, RFFT or IRFFT");
}
ATTR_FN(attr_fft_length) { return hl_parse_i64_list(LX, &A->fft_length); }

ATTR_FN(attr_algorithm) {
  if (inst->opcode == HL_OP_RNG_BIT_GENERATOR) {
    static const char *const names[] = {"rng_default", "rng_three_fry", "rng_philox"};
    return parse_enum(LX, names, 3, &A->rng_algorithm, "rng_default, rng_three_fry or rng_philox");
  }
  static const char *const names[] = {
      "alg_unset", "alg_dot_any_f8_any_f8_f32", "alg_dot_any_f8_any_f8_f32_fast_accum",
      "alg_dot_f16_f16_f16", "alg_dot_f16_f16_f32", "alg_dot_bf16_bf16_bf16",
      "alg_dot_bf16_bf16_f32", "alg_dot_bf16_bf16_f32_x3", "alg_dot_bf16_bf16_f32_x6",
      "alg_dot_tf32_tf32_f32", "alg_dot_tf32_tf32_f32_x3", "alg_dot_f32_f32_f32",
      "alg_dot_f64_f64_f64", "alg_dot_bf16_bf16_f32_x9"};
  // The text drops the "alg_" prefix: match against names + 4.
  const char *short_names[14];
  for (int i = 0; i < 14; i++) short_names[i] = names[i] + 4;
  return parse_enum(LX, short_names, 14, &A->precision_algorithm, "a dot algorithm name");
}

ATTR_FN(attr_operand_precision) {
  static const char *const names[] = {"default", "high", "highest"};
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{'"));
  int64_t buf[16];
  int n = 0;
  while (LX->tok.kind != HL_TOK_RBRACE) {
    int v = 0;
    if (n == 16) return hl_lexer_error(LX, NULL, "too many operand precisions");
    HL_RETURN_IF_ERROR(parse_enum(LX, names, 3, &v, "default, high or highest"));
    buf[n++] = v;
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_RBRACE, "',' or '}'"));
  return hl_i64_list_set(&A->operand_precision, buf, n);
}

// custom-call operand_layout_constraints={f32[3,3]{0,1}, s32[]}: the memory
// order each operand is handed to the target in.
ATTR_FN(attr_operand_layout_constraints) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{'"));
  while (LX->tok.kind != HL_TOK_RBRACE) {
    int n = A->operand_shapes_with_layout_count;
    hl_shape_t *grown = hl_realloc(A->operand_shapes_with_layout, (size_t)(n + 1) * sizeof(hl_shape_t));
    if (!grown) return HL_OOM();
    A->operand_shapes_with_layout = grown;
    memset(&grown[n], 0, sizeof(hl_shape_t));
    A->operand_shapes_with_layout_count = n + 1;
    HL_RETURN_IF_ERROR(hl_parse_shape_tokens(LX, &grown[n]));
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "',' or '}'");
}

// custom-call output_to_operand_aliasing={{0}: (0, {}), {1}: (1, {})} ({}: for
// an array result): result k shares operand j's buffer. Operands and results
// are arrays or tuples of arrays here, so deeper shape indices are refused.
ATTR_FN(attr_output_to_operand_aliasing) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{'"));
  while (LX->tok.kind != HL_TOK_RBRACE) {
    hl_i64_list_t out = {0}, operand_index = {0};
    int64_t operand = -1;
    hl_token_t at = LX->tok;
    hl_status_t st = hl_parse_i64_list(LX, &out);
    if (!st) st = hl_expect(LX, HL_TOK_COLON, "':'");
    if (!st) st = hl_expect(LX, HL_TOK_LPAREN, "'('");
    if (!st) st = hl_parse_int64(LX, &operand);
    if (!st) st = hl_expect(LX, HL_TOK_COMMA, "','");
    if (!st) st = hl_parse_i64_list(LX, &operand_index);
    if (!st) st = hl_expect(LX, HL_TOK_RPAREN, "')'");
    int64_t k = out.n == 1 ? out.v[0] : 0;
    if (!st && (out.n > 1 || operand_index.n > 0 || k < 0 || k > INT32_MAX || operand < 0 ||
                operand > INT32_MAX))
      st = hl_lexer_error(LX, &at, "output_to_operand_aliasing: only {k}: (operand, {}) entries "
                          "(array operands, results at most one tuple level deep) are supported");
    hl_i64_list_deinit(&out);
    hl_i64_list_deinit(&operand_index);
    HL_RETURN_IF_ERROR(st);
    int n = A->output_operand_alias_count;
    hl_output_operand_alias_t *grown =
        hl_realloc(A->output_operand_aliases, (size_t)(n + 1) * sizeof(*grown));
    if (!grown) return HL_OOM();
    A->output_operand_aliases = grown;
    grown[n] = (hl_output_operand_alias_t){(int)k, (int)operand};
    A->output_operand_alias_count = n + 1;
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "',' or '}'");
}

ATTR_FN(attr_direction) {
  static const char *const names[] = {NULL, "EQ", "NE", "GE", "GT", "LE", "LT"};
  int v = 0;
  HL_RETURN_IF_ERROR(parse_enum(LX, names, 7, &v, "EQ, NE, GE, GT, LE or LT"));
  A->comparison_direction = (hl_comparison_direction_t)v;
  return NULL;
}

ATTR_FN(attr_type) {
  static const char *const names[] = {NULL, "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
  int v = 0;
  HL_RETURN_IF_ERROR(parse_enum(LX, names, 5, &v, "FLOAT, TOTALORDER, SIGNED or UNSIGNED"));
  A->comparison_type = (hl_comparison_type_t)v;
  return NULL;
}

ATTR_FN(attr_slice) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{' to open the slice"));
  int cap = 0;
  while (LX->tok.kind != HL_TOK_RBRACE) {
    if (A->slice_count == cap) {
      cap = cap ? cap * 2 : 4;
      hl_slice_dim_t *v = hl_realloc(A->slice_dimensions, (size_t)cap * sizeof(*v));
      if (!v) return HL_OOM();
      A->slice_dimensions = v;
    }
    hl_slice_dim_t *d = &A->slice_dimensions[A->slice_count];
    HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LSQUARE, "'[' to open a slice dimension"));
    HL_RETURN_IF_ERROR(hl_parse_int64(LX, &d->start));
    HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_COLON, "':' between start and limit"));
    HL_RETURN_IF_ERROR(hl_parse_int64(LX, &d->limit));
    d->stride = 1;
    if (LX->tok.kind == HL_TOK_COLON) {
      hl_lexer_next(LX);
      HL_RETURN_IF_ERROR(hl_parse_int64(LX, &d->stride));
      if (d->stride == 0) d->stride = 1;
    }
    HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_RSQUARE, "']' to close a slice dimension"));
    A->slice_count++;
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "',' or '}' in the slice");
}

// Reads a signed integer from [*p, end) and advances *p.
static bool read_i64(const char **p, const char *end, int64_t *out) {
  const char *q = *p;
  bool neg = false;
  if (q < end && *q == '-') neg = true, q++;
  if (q >= end || *q < '0' || *q > '9') return false;
  uint64_t v = 0;
  while (q < end && *q >= '0' && *q <= '9') {
    if (v > (uint64_t)INT64_MAX / 10) return false;
    v = v * 10 + (uint64_t)(*q++ - '0');
  }
  if (v > (uint64_t)INT64_MAX) return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  *p = q;
  return true;
}

// Splits "a_bxc_d" style tokens: groups separated by 'x', fields by '_'.
// fields[g][f]; returns false on malformed text.
static bool split_groups(const hl_token_t *t, int64_t fields[][3], int *field_counts,
                         int max_groups, int *out_groups) {
  const char *p = t->text, *end = t->text + t->length;
  int g = 0;
  for (;;) {
    if (g == max_groups) return false;
    int f = 0;
    for (;;) {
      if (f == 3 || !read_i64(&p, end, &fields[g][f])) return false;
      f++;
      if (p < end && *p == '_') {
        p++;
        continue;
      }
      break;
    }
    field_counts[g++] = f;
    if (p < end && *p == 'x') {
      p++;
      continue;
    }
    break;
  }
  *out_groups = g;
  return p == end;
}

ATTR_FN(attr_padding) {
  hl_token_t t = LX->tok;
  if (t.kind != HL_TOK_PAD) return hl_lexer_error(LX, NULL, "expected padding low_high[_interior]");
  int64_t fields[HL_MAX_RANK][3];
  int counts[HL_MAX_RANK], n;
  if (!split_groups(&t, fields, counts, HL_MAX_RANK, &n))
    return hl_lexer_error(LX, NULL, "malformed padding");
  A->padding_config = hl_calloc((size_t)n, sizeof(hl_padding_dim_t));
  if (!A->padding_config) return HL_OOM();
  A->padding_count = n;
  for (int i = 0; i < n; i++) {
    if (counts[i] < 2) return hl_lexer_error(LX, NULL, "expected low_high per dimension");
    A->padding_config[i].edge_padding_low = fields[i][0];
    A->padding_config[i].edge_padding_high = fields[i][1];
    A->padding_config[i].interior_padding = counts[i] == 3 ? fields[i][2] : 0;
    if (A->padding_config[i].interior_padding < 0)
      return hl_lexer_error(LX, NULL, "interior padding must not be negative");
  }
  hl_lexer_next(LX);
  return NULL;
}

// Values of a window sub-attribute: INT (1-D), NxM, or a padding token.
static hl_status_t window_values(hl_lexer_t *lx, bool is_pad, int64_t vals[][3], int *n) {
  hl_token_t t = lx->tok;
  int counts[HL_MAX_RANK];
  bool ok;
  if (is_pad) {
    ok = t.kind == HL_TOK_PAD && split_groups(&t, vals, counts, HL_MAX_RANK, n);
    for (int i = 0; ok && i < *n; i++) ok = counts[i] == 2;
    if (!ok)
      return hl_lexer_error(lx, NULL, "expects padding_low and padding_high separated by '_'");
  } else {
    ok = (t.kind == HL_TOK_INT || t.kind == HL_TOK_DXD) &&
         split_groups(&t, vals, counts, HL_MAX_RANK, n);
    if (!ok) return hl_lexer_error(lx, NULL, "expected a size such as 3 or 3x3");
  }
  hl_lexer_next(lx);
  return NULL;
}

ATTR_FN(attr_window) {
  static const char *const keys[] = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate",
                                     "rhs_reversal"};
  int64_t vals[6][HL_MAX_RANK][3];
  int n[6] = {-1, -1, -1, -1, -1, -1};
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{' to open the window"));
  while (LX->tok.kind != HL_TOK_RBRACE) {
    hl_token_t key = LX->tok;
    int which = -1;
    if (key.kind == HL_TOK_ATTR)
      for (int i = 0; i < 6; i++)
        if (hl_tok_text_equals(&key, keys[i])) which = i;
    if (which < 0) return hl_lexer_error(LX, NULL, "unknown window sub-attribute");
    if (n[which] >= 0) return hl_lexer_error(LX, NULL, "window sub-attribute given twice");
    hl_lexer_next(LX);
    HL_RETURN_IF_ERROR(window_values(LX, which == 2, vals[which], &n[which]));
    if (LX->tok.kind == HL_TOK_COMMA) hl_lexer_next(LX);
  }
  hl_token_t close = LX->tok;
  hl_lexer_next(LX);
  A->has_window = true;
  int rank = n[0] < 0 ? 0 : n[0];
  for (int i = 1; i < 6; i++)
    if (n[i] >= 0 && n[i] != rank)
      return hl_lexer_error(LX, &close, "window %s has %d dimensions but size has %d", keys[i],
                            n[i], rank);
  if (rank == 0) return NULL;
  A->window.dims = hl_calloc((size_t)rank, sizeof(hl_window_dim_t));
  if (!A->window.dims) return HL_OOM();
  A->window.n = rank;
  for (int d = 0; d < rank; d++) {
    hl_window_dim_t *w = &A->window.dims[d];
    w->size = vals[0][d][0];
    w->stride = n[1] >= 0 && vals[1][d][0] ? vals[1][d][0] : 1;
    w->padding_low = n[2] >= 0 ? vals[2][d][0] : 0;
    w->padding_high = n[2] >= 0 ? vals[2][d][1] : 0;
    w->base_dilation = n[3] >= 0 && vals[3][d][0] ? vals[3][d][0] : 1;
    w->window_dilation = n[4] >= 0 && vals[4][d][0] ? vals[4][d][0] : 1;
    w->window_reversal = n[5] >= 0 && vals[5][d][0] != 0;
  }
  return NULL;
}

// One side of dim_labels: letters place the batch/feature dims, digits the
// spatial dims, '?' an unused dim. Returns false on a bad or repeated label.
static bool decode_labels(const char *s, size_t n, char a, char b, int64_t *out_a,
                          int64_t *out_b, int64_t *spatial, int *out_spatial) {
  int nsp = 0;
  *out_a = *out_b = -1;
  for (size_t i = 0; i < n; i++)
    if (s[i] >= '0' && s[i] <= '9') nsp++;
  if (nsp > HL_MAX_RANK) return false;
  for (int k = 0; k < nsp; k++) spatial[k] = -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == a) {
      if (*out_a >= 0) return false;
      *out_a = (int64_t)i;
    } else if (c == b) {
      if (*out_b >= 0) return false;
      *out_b = (int64_t)i;
    } else if (c >= '0' && c <= '9') {
      int k = c - '0';
      if (k >= nsp || spatial[k] >= 0) return false;
      spatial[k] = (int64_t)i;
    } else if (c != '?') {
      return false;
    }
  }
  *out_spatial = nsp;
  return *out_a >= 0 && *out_b >= 0;
}

ATTR_FN(attr_dim_labels) {
  hl_token_t t = LX->tok;
  if (t.kind != HL_TOK_DIM_LABELS) return hl_lexer_error(LX, NULL, "expected dim labels");
  const char *txt = t.text, *end = t.text + t.length;
  const char *us = memchr(txt, '_', t.length);
  const char *arrow = NULL;
  for (const char *q = us; q && q + 1 < end; q++)
    if (q[0] == '-' && q[1] == '>') {
      arrow = q;
      break;
    }
  if (!us || !arrow || arrow > end) return hl_lexer_error(LX, NULL, "malformed dim labels");
  hl_conv_dims_t *c = &A->convolution_dimension_numbers;
  int64_t sp_in[HL_MAX_RANK], sp_k[HL_MAX_RANK], sp_out[HL_MAX_RANK];
  int n_in, n_k, n_out;
  bool ok = decode_labels(txt, (size_t)(us - txt), 'b', 'f', &c->input_batch_dimension,
                          &c->input_feature_dimension, sp_in, &n_in) &&
            decode_labels(us + 1, (size_t)(arrow - us - 1), 'i', 'o',
                          &c->kernel_input_feature_dimension,
                          &c->kernel_output_feature_dimension, sp_k, &n_k) &&
            decode_labels(arrow + 2, (size_t)(end - arrow - 2), 'b', 'f',
                          &c->output_batch_dimension, &c->output_feature_dimension, sp_out,
                          &n_out);
  if (!ok) return hl_lexer_error(LX, NULL, "dim labels need unique b/f (i/o) and spatial "
                                 "digits 0..n-1");
  if (n_in != n_k || n_in != n_out)
    return hl_lexer_error(LX, NULL, "dim labels must have the same number of spatial "
                          "dimensions on each side");
  HL_RETURN_IF_ERROR(hl_i64_list_set(&c->input_spatial_dimensions, sp_in, n_in));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&c->kernel_spatial_dimensions, sp_k, n_k));
  HL_RETURN_IF_ERROR(hl_i64_list_set(&c->output_spatial_dimensions, sp_out, n_out));
  A->has_convolution_dimension_numbers = true;
  hl_lexer_next(LX);
  return NULL;
}

// Dot / gather / scatter dimension lists: the field is chosen by name.
static hl_i64_list_t *dims_field(hl_instruction_t *inst, const hl_token_t *name) {
  hl_dot_dims_t *d = &A->dot_dimension_numbers;
  hl_gather_dims_t *g = &A->gather_dimension_numbers;
  hl_scatter_dims_t *s = &A->scatter_dimension_numbers;
  static const char *const dot_names[] = {"lhs_contracting_dims", "rhs_contracting_dims",
                                          "lhs_batch_dims", "rhs_batch_dims"};
  hl_i64_list_t *dot_fields[] = {&d->lhs_contracting_dimensions, &d->rhs_contracting_dimensions,
                                 &d->lhs_batch_dimensions, &d->rhs_batch_dimensions};
  for (int i = 0; i < 4; i++)
    if (hl_tok_text_equals(name, dot_names[i])) {
      A->has_dot_dimension_numbers = true;
      return dot_fields[i];
    }
  if (hl_tok_text_equals(name, "lhs_ragged_dims") || hl_tok_text_equals(name, "rhs_group_dims")) {
    A->has_dot_dimension_numbers = true;
    A->has_ragged_dot_dimension_numbers = true;
    return hl_tok_text_equals(name, "lhs_ragged_dims") ? &A->lhs_ragged_dimensions
                                                       : &A->rhs_group_dimensions;
  }
  static const char *const gather_names[] = {"offset_dims", "collapsed_slice_dims",
                                             "start_index_map", "operand_batching_dims",
                                             "start_indices_batching_dims"};
  hl_i64_list_t *gather_fields[] = {&g->offset_dims, &g->collapsed_slice_dims,
                                    &g->start_index_map, &g->operand_batching_dims,
                                    &g->start_indices_batching_dims};
  for (int i = 0; i < 5; i++)
    if (hl_tok_text_equals(name, gather_names[i])) {
      A->has_gather_dimension_numbers = true;
      return gather_fields[i];
    }
  static const char *const scatter_names[] = {"update_window_dims", "inserted_window_dims",
                                              "scatter_dims_to_operand_dims",
                                              "input_batching_dims",
                                              "scatter_indices_batching_dims"};
  hl_i64_list_t *scatter_fields[] = {&s->update_window_dims, &s->inserted_window_dims,
                                     &s->scatter_dims_to_operand_dims, &s->input_batching_dims,
                                     &s->scatter_indices_batching_dims};
  for (int i = 0; i < 5; i++)
    if (hl_tok_text_equals(name, scatter_names[i])) {
      A->has_scatter_dimension_numbers = true;
      return scatter_fields[i];
    }
  return NULL;
}

ATTR_FN(attr_dims_list) { return hl_parse_i64_list(LX, dims_field(inst, name)); }

ATTR_FN(attr_index_vector_dim) {
  if (inst->opcode == HL_OP_SCATTER) {
    A->has_scatter_dimension_numbers = true;
    return hl_parse_int64(LX, &A->scatter_dimension_numbers.index_vector_dim);
  }
  A->has_gather_dimension_numbers = true;
  return hl_parse_int64(LX, &A->gather_dimension_numbers.index_vector_dim);
}

ATTR_FN(attr_dynamic_slice_sizes) { return hl_parse_i64_list(LX, &A->dynamic_slice_sizes); }

// gather: slice_sizes={1,3}; combined collective-permute: slice_sizes={{2},{2}}
// flattened into dynamic_slice_sizes.
ATTR_FN(attr_slice_sizes) {
  if (hl_lexer_peek(LX).kind != HL_TOK_LBRACE) {
    if (inst->opcode == HL_OP_GATHER) {
      A->has_gather_dimension_numbers = true;
      return hl_parse_i64_list(LX, &A->gather_slice_sizes);
    }
    return hl_parse_i64_list(LX, &A->dynamic_slice_sizes);
  }
  hl_i64_list_t *lists;
  int n;
  hl_status_t st = parse_list_of_lists(LX, &lists, &n);
  int total = 0;
  for (int i = 0; !st && i < n; i++) total += lists[i].n;
  int64_t *flat = st ? NULL : hl_malloc((size_t)(total ? total : 1) * sizeof(int64_t));
  if (!st && !flat) st = HL_OOM();
  if (!st) {
    int k = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < lists[i].n; j++) flat[k++] = lists[i].v[j];
    st = hl_i64_list_set(&A->dynamic_slice_sizes, flat, total);
  }
  hl_free(flat);
  free_lists(lists, n);
  return st;
}

ATTR_FN(attr_replica_groups) {
  hl_replica_groups_t *g = &A->replica_groups;
  hl_replica_groups_deinit(g);
  if (LX->tok.kind == HL_TOK_LSQUARE) {  // [G,S]<=[dims]T(perm)
    hl_i64_list_t gs = {0};
    hl_status_t st = parse_square_list(LX, &gs);
    if (!st && gs.n != 2)
      st = hl_lexer_error(LX, NULL, "iota replica groups need [num_groups,group_size]");
    if (!st) {
      g->kind = HL_GROUPS_IOTA;
      g->iota_num_groups = gs.v[0];
      g->iota_group_size = gs.v[1];
    }
    hl_i64_list_deinit(&gs);
    if (!st) st = hl_expect(LX, HL_TOK_LEQ, "'<=' in iota replica groups");
    if (!st) st = parse_square_list(LX, &g->iota_reshape_dims);
    if (!st) st = parse_iota_transpose(LX, &g->iota_transpose_perm);
    return st;
  }
  hl_i64_list_t *lists;
  int n;
  hl_status_t st = parse_list_of_lists(LX, &lists, &n);
  if (st) {
    free_lists(lists, n);
    return st;
  }
  g->kind = HL_GROUPS_LIST;
  g->groups = lists;
  g->group_count = n;
  return NULL;
}

ATTR_FN(attr_source_target_pairs) {
  hl_token_t at = LX->tok;
  hl_i64_list_t *lists;
  int n;
  hl_status_t st = parse_list_of_lists(LX, &lists, &n);
  for (int i = 0; !st && i < n; i++)
    if (lists[i].n != 2) st = hl_lexer_error(LX, &at, "each source_target_pair needs 2 ids");
  if (!st && n > 0) {
    A->source_target_pairs = hl_calloc((size_t)n, sizeof(hl_source_target_t));
    if (!A->source_target_pairs) st = HL_OOM();
    for (int i = 0; !st && i < n; i++) {
      A->source_target_pairs[i].source = lists[i].v[0];
      A->source_target_pairs[i].target = lists[i].v[1];
    }
    if (!st) A->source_target_count = n;
  }
  free_lists(lists, n);
  return st;
}

ATTR_FN(attr_parameter_replication) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{'"));
  int cap = 0;
  while (LX->tok.kind != HL_TOK_RBRACE) {
    bool v = false;
    HL_RETURN_IF_ERROR(parse_bool(LX, &v));
    if (A->parameter_replication_count == cap) {
      cap = cap ? cap * 2 : 8;
      bool *nv = hl_realloc(A->parameter_replication, (size_t)cap * sizeof(bool));
      if (!nv) return HL_OOM();
      A->parameter_replication = nv;
    }
    A->parameter_replication[A->parameter_replication_count++] = v;
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "',' or '}'");
}

ATTR_FN(attr_control_predecessors) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{'"));
  hl_instruction_t **preds = NULL;
  int n = 0, cap = 0;
  hl_status_t st = NULL;
  while (!st && LX->tok.kind != HL_TOK_RBRACE) {
    hl_token_t t = LX->tok;
    if (t.kind != HL_TOK_IDENT && t.kind != HL_TOK_NAME && t.kind != HL_TOK_TYPE) {
      st = hl_lexer_error(LX, NULL, "expected an instruction name");
      break;
    }
    hl_instruction_t *pred = hl_parser_find_instruction(p, t.text, t.length);
    if (!pred) {
      st = hl_lexer_error(LX, NULL, "instruction '%.*s' is not defined", (int)t.length, t.text);
      break;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 4;
      hl_instruction_t **v = hl_realloc(preds, (size_t)cap * sizeof(*v));
      if (!v) {
        st = HL_OOM();
        break;
      }
      preds = v;
    }
    preds[n++] = pred;
    hl_lexer_next(LX);
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  if (!st) st = hl_expect(LX, HL_TOK_RBRACE, "',' or '}'");
  if (!st) st = hl_instruction_set_control_predecessors(inst, preds, n);
  hl_free(preds);
  return st;
}

ATTR_FN(attr_metadata) {
  hl_metadata_t *m = &A->metadata;
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{' to open metadata"));
  m->present = true;
  while (LX->tok.kind != HL_TOK_RBRACE) {
    hl_token_t key = LX->tok;
    if (key.kind != HL_TOK_ATTR) return hl_lexer_error(LX, NULL, "expected key=value in metadata");
    hl_lexer_next(LX);
    if (hl_tok_text_equals(&key, "op_type")) {
      HL_RETURN_IF_ERROR(parse_string(LX, &m->op_type));
    } else if (hl_tok_text_equals(&key, "op_name")) {
      HL_RETURN_IF_ERROR(parse_string(LX, &m->op_name));
    } else if (hl_tok_text_equals(&key, "source_file")) {
      HL_RETURN_IF_ERROR(parse_string(LX, &m->source_file));
    } else if (hl_tok_text_equals(&key, "source_line")) {
      HL_RETURN_IF_ERROR(parse_int32(LX, &m->source_line));
    } else if (LX->tok.kind == HL_TOK_LBRACE) {
      HL_RETURN_IF_ERROR(hl_skip_balanced(LX));
    } else if (LX->tok.kind == HL_TOK_STRING || LX->tok.kind == HL_TOK_INT ||
               LX->tok.kind == HL_TOK_IDENT || LX->tok.kind == HL_TOK_DECIMAL) {
      hl_lexer_next(LX);
    } else {
      return hl_lexer_error(LX, NULL, "bad metadata value");
    }
    if (LX->tok.kind == HL_TOK_COMMA) hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "'}' to close metadata");
}

ATTR_FN(attr_frontend_attributes) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{'"));
  while (LX->tok.kind != HL_TOK_RBRACE) {
    if (LX->tok.kind != HL_TOK_ATTR) return hl_lexer_error(LX, NULL, "expected key=\"value\"");
    char *key = hl_token_strdup(&LX->tok);
    char *value = NULL;
    if (!key) return HL_OOM();
    hl_lexer_next(LX);
    hl_status_t st = parse_string_or_dict(LX, &value);
    if (!st) st = hl_frontend_attributes_add(&A->frontend_attributes, key, value);
    hl_free(key);
    hl_free(value);
    HL_RETURN_IF_ERROR(st);
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "',' or '}' in frontend_attributes");
}

//===----------------------------------------------------------------------===//
// Sharding
//===----------------------------------------------------------------------===//

// Returns NULL with *unsupported set for forms the IR cannot hold.
static hl_status_t parse_sharding(hl_lexer_t *lx, hl_sharding_t *s, bool *unsupported, int depth) {
  if (depth > 32) return hl_lexer_error(lx, NULL, "sharding nested too deeply");
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LBRACE, "'{' to open a sharding"));
  if (lx->tok.kind == HL_TOK_LBRACE || lx->tok.kind == HL_TOK_RBRACE) {
    s->type = HL_SHARDING_TUPLE;
    int cap = 0;
    while (lx->tok.kind != HL_TOK_RBRACE) {
      if (s->tuple_count == cap) {
        cap = cap ? cap * 2 : 4;
        hl_sharding_t *v = hl_realloc(s->tuple_shardings, (size_t)cap * sizeof(*v));
        if (!v) return HL_OOM();
        s->tuple_shardings = v;
      }
      hl_sharding_t *e = &s->tuple_shardings[s->tuple_count++];
      memset(e, 0, sizeof(*e));
      HL_RETURN_IF_ERROR(parse_sharding(lx, e, unsupported, depth + 1));
      if (*unsupported) return NULL;
      if (lx->tok.kind != HL_TOK_COMMA) break;
      hl_lexer_next(lx);
    }
    return hl_expect(lx, HL_TOK_RBRACE, "',' or '}' in a tuple sharding");
  }
  s->type = HL_SHARDING_REPLICATED;
  while (lx->tok.kind != HL_TOK_RBRACE) {
    hl_token_t t = lx->tok;
    if (hl_tok_is_word(&t, "replicated")) {
      s->type = HL_SHARDING_REPLICATED;
      hl_lexer_next(lx);
    } else if (hl_tok_is_word(&t, "manual")) {
      s->type = HL_SHARDING_MANUAL;
      hl_lexer_next(lx);
    } else if (hl_tok_is_word(&t, "unknown")) {
      s->type = HL_SHARDING_UNKNOWN;
      hl_lexer_next(lx);
    } else if (hl_tok_is_word(&t, "unreduced")) {
      s->type = HL_SHARDING_UNREDUCED;
      hl_lexer_next(lx);
    } else if (hl_tok_is_word(&t, "maximal")) {
      s->type = HL_SHARDING_MAXIMAL;
      hl_lexer_next(lx);
    } else if (hl_tok_is_word(&t, "last_tile_dim_replicate")) {
      s->replicate_on_last_tile_dim = true;
      hl_lexer_next(lx);
    } else if (hl_tok_is_word(&t, "shard_as") || hl_tok_is_word(&t, "shard_like")) {
      hl_lexer_next(lx);
      int64_t id;
      HL_RETURN_IF_ERROR(hl_parse_int64(lx, &id));
    } else if (t.kind == HL_TOK_ATTR && hl_tok_text_equals(&t, "device")) {
      hl_lexer_next(lx);
      int64_t d, one = 1;
      HL_RETURN_IF_ERROR(hl_parse_int64(lx, &d));
      HL_RETURN_IF_ERROR(hl_i64_list_set(&s->tile_assignment_devices, &d, 1));
      HL_RETURN_IF_ERROR(hl_i64_list_set(&s->tile_assignment_dimensions, &one, 1));
    } else if (t.kind == HL_TOK_ATTR && hl_tok_text_equals(&t, "devices")) {
      hl_lexer_next(lx);
      s->type = HL_SHARDING_OTHER;
      HL_RETURN_IF_ERROR(parse_square_list(lx, &s->tile_assignment_dimensions));
      if (lx->tok.kind == HL_TOK_LEQ) {
        hl_lexer_next(lx);
        HL_RETURN_IF_ERROR(parse_square_list(lx, &s->iota_reshape_dims));
        HL_RETURN_IF_ERROR(parse_iota_transpose(lx, &s->iota_transpose_perm));
      } else {
        int64_t *v = NULL;
        int n = 0, cap = 0;
        hl_status_t st = NULL;
        for (;;) {
          int64_t d;
          st = hl_parse_int64(lx, &d);
          if (st) break;
          if (n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *nv = hl_realloc(v, (size_t)cap * sizeof(int64_t));
            if (!nv) {
              st = HL_OOM();
              break;
            }
            v = nv;
          }
          v[n++] = d;
          if (lx->tok.kind != HL_TOK_COMMA) break;
          hl_lexer_next(lx);
        }
        if (!st) st = hl_i64_list_set(&s->tile_assignment_devices, v, n);
        hl_free(v);
        HL_RETURN_IF_ERROR(st);
      }
    } else if (t.kind == HL_TOK_ATTR && hl_tok_text_equals(&t, "last_tile_dims")) {
      hl_lexer_next(lx);
      static const char *const names[] = {"replicated", "maximal", "tuple", "other",
                                          "manual", "unknown", "unreduced"};
      HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LBRACE, "'{'"));
      int64_t buf[HL_MAX_RANK];
      int n = 0;
      while (lx->tok.kind != HL_TOK_RBRACE) {
        int v = 0;
        if (n == HL_MAX_RANK) return hl_lexer_error(lx, NULL, "too many last_tile_dims");
        HL_RETURN_IF_ERROR(parse_enum(lx, names, 7, &v, "a sharding type"));
        buf[n++] = v;
        if (lx->tok.kind != HL_TOK_COMMA) break;
        hl_lexer_next(lx);
      }
      HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RBRACE, "',' or '}'"));
      HL_RETURN_IF_ERROR(hl_i64_list_set(&s->last_tile_dims, buf, n));
    } else if (t.kind == HL_TOK_ATTR && hl_tok_text_equals(&t, "metadata")) {
      hl_lexer_next(lx);
      HL_RETURN_IF_ERROR(hl_skip_balanced(lx));
    } else {
      *unsupported = true;  // named mesh shardings and newer forms
      return NULL;
    }
  }
  hl_lexer_next(lx);
  return NULL;
}

hl_status_t hl_parse_sharding(const char *text, hl_sharding_t *out) {
  memset(out, 0, sizeof(*out));
  if (!text) return HL_INVALID("hl_parse_sharding: no text");
  hl_lexer_t lx;
  hl_lexer_init(&lx, text, strlen(text), "<sharding>");
  bool unsupported = false;
  hl_status_t st = parse_sharding(&lx, out, &unsupported, 0);
  if (!st && unsupported)
    st = HL_UNIMPL("sharding '%s' is not one this runtime reads (named mesh shardings and "
                   "other newer forms are not supported)", text);
  if (!st && lx.tok.kind != HL_TOK_EOF)
    st = hl_lexer_error(&lx, NULL, "unexpected text after the sharding");
  if (st) hl_sharding_deinit(out);
  return st;
}

ATTR_FN(attr_sharding) {
  hl_lexer_t saved = *LX;
  hl_sharding_t *sh = hl_calloc(1, sizeof(*sh));
  if (!sh) return HL_OOM();
  bool unsupported = false;
  hl_status_t st = parse_sharding(LX, sh, &unsupported, 0);
  if (st || unsupported) {
    hl_sharding_deinit(sh);
    hl_free(sh);
    if (st) return st;
    *LX = saved;
    return hl_skip_balanced(LX);
  }
  A->sharding = sh;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Called computations
//===----------------------------------------------------------------------===//

static hl_status_t computation_attr(hl_parser_t *p, hl_instruction_t *inst,
                                    const hl_token_t *name, hl_computation_t **slot) {
  char hint[160];
  snprintf(hint, sizeof(hint), "%s.%.*s", inst->name, (int)name->length, name->text);
  return hl_parse_computation_ref(p, hint, slot);
}

ATTR_FN(attr_to_apply) { return computation_attr(p, inst, name, &s->to_apply); }
ATTR_FN(attr_calls) { return computation_attr(p, inst, name, &s->calls); }
ATTR_FN(attr_body) { return computation_attr(p, inst, name, &s->body); }
ATTR_FN(attr_condition) { return computation_attr(p, inst, name, &s->condition); }
ATTR_FN(attr_true_computation) { return computation_attr(p, inst, name, &s->true_computation); }
ATTR_FN(attr_false_computation) {
  return computation_attr(p, inst, name, &s->false_computation);
}
ATTR_FN(attr_select) { return computation_attr(p, inst, name, &s->select); }
ATTR_FN(attr_scatter) { return computation_attr(p, inst, name, &s->scatter); }

static hl_status_t computation_list(hl_parser_t *p, hl_instruction_t *inst,
                                    const hl_token_t *name, hl_computation_t ***out, int *count) {
  HL_RETURN_IF_ERROR(hl_expect(LX, HL_TOK_LBRACE, "'{' to open a computation list"));
  int cap = 0;
  while (LX->tok.kind != HL_TOK_RBRACE) {
    if (*count == cap) {
      cap = cap ? cap * 2 : 4;
      hl_computation_t **v = hl_realloc(*out, (size_t)cap * sizeof(*v));
      if (!v) return HL_OOM();
      *out = v;
    }
    HL_RETURN_IF_ERROR(computation_attr(p, inst, name, &(*out)[*count]));
    (*count)++;
    if (LX->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(LX);
  }
  return hl_expect(LX, HL_TOK_RBRACE, "',' or '}' in a computation list");
}

ATTR_FN(attr_branch_computations) {
  return computation_list(p, inst, name, &s->branches, &s->branch_count);
}
ATTR_FN(attr_called_computations) {
  return computation_list(p, inst, name, &s->called, &s->called_count);
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

static const struct {
  const char *name;
  attr_fn_t fn;
} kAttrs[] = {
    {"dimensions", attr_dimensions},
    {"iota_dimension", attr_single_dimension},
    {"inferred_dimension", attr_single_dimension},
    {"index", attr_index},
    {"channel_id", attr_channel_id},
    {"feature_group_count", attr_feature_group_count},
    {"batch_group_count", attr_batch_group_count},
    {"feature_index", attr_feature_index},
    {"k", attr_k},
    {"delta", attr_delta},
    {"exponent_bits", attr_exponent_bits},
    {"mantissa_bits", attr_mantissa_bits},
    {"epsilon", attr_epsilon},
    {"use_global_device_ids", attr_use_global_device_ids},
    {"constrain_layout", attr_constrain_layout},
    {"is_host_transfer", attr_is_host_transfer},
    {"is_stable", attr_is_stable},
    {"indices_are_sorted", attr_indices_are_sorted},
    {"unique_indices", attr_unique_indices},
    {"is_composite", attr_is_composite},
    {"custom_call_has_side_effect", attr_has_side_effect},
    {"largest", attr_largest},
    {"is_reverse", attr_is_reverse},
    {"num_carries", attr_num_carries},
    {"is_associative", attr_is_associative},
    {"has_dynamic_root", attr_has_dynamic_root},
    {"mode", attr_mode},
    {"shifts", attr_shifts},
    {"indices", attr_indices},
    {"left_side", attr_left_side},
    {"lower", attr_lower},
    {"unit_diagonal", attr_unit_diagonal},
    {"transpose_a", attr_transpose_a},
    {"custom_call_target", attr_custom_call_target},
    {"infeed_config", attr_infeed_config},
    {"outfeed_config", attr_outfeed_config},
    {"outfeed_shape", attr_outfeed_shape},
    {"async_execution_thread", attr_async_thread},
    {"backend_config", attr_backend_config},
    {"kind", attr_kind},
    {"api_version", attr_api_version},
    {"operand_layout_constraints", attr_operand_layout_constraints},
    {"output_to_operand_aliasing", attr_output_to_operand_aliasing},
    {"distribution", attr_distribution},
    {"fft_type", attr_fft_type},
    {"fft_length", attr_fft_length},
    {"algorithm", attr_algorithm},
    {"operand_precision", attr_operand_precision},
    {"direction", attr_direction},
    {"type", attr_type},
    {"slice", attr_slice},
    {"padding", attr_padding},
    {"window", attr_window},
    {"dim_labels", attr_dim_labels},
    {"lhs_contracting_dims", attr_dims_list},
    {"rhs_contracting_dims", attr_dims_list},
    {"lhs_batch_dims", attr_dims_list},
    {"rhs_batch_dims", attr_dims_list},
    {"lhs_ragged_dims", attr_dims_list},
    {"rhs_group_dims", attr_dims_list},
    {"offset_dims", attr_dims_list},
    {"collapsed_slice_dims", attr_dims_list},
    {"start_index_map", attr_dims_list},
    {"operand_batching_dims", attr_dims_list},
    {"start_indices_batching_dims", attr_dims_list},
    {"update_window_dims", attr_dims_list},
    {"inserted_window_dims", attr_dims_list},
    {"scatter_dims_to_operand_dims", attr_dims_list},
    {"input_batching_dims", attr_dims_list},
    {"scatter_indices_batching_dims", attr_dims_list},
    {"index_vector_dim", attr_index_vector_dim},
    {"slice_sizes", attr_slice_sizes},
    {"dynamic_slice_sizes", attr_dynamic_slice_sizes},
    {"replica_groups", attr_replica_groups},
    {"source_target_pairs", attr_source_target_pairs},
    {"parameter_replication", attr_parameter_replication},
    {"control-predecessors", attr_control_predecessors},
    {"metadata", attr_metadata},
    {"frontend_attributes", attr_frontend_attributes},
    {"sharding", attr_sharding},
    {"to_apply", attr_to_apply},
    {"calls", attr_calls},
    {"body", attr_body},
    {"condition", attr_condition},
    {"true_computation", attr_true_computation},
    {"false_computation", attr_false_computation},
    {"select", attr_select},
    {"scatter", attr_scatter},
    {"branch_computations", attr_branch_computations},
    {"called_computations", attr_called_computations},
};

hl_status_t hl_parse_instruction_attribute(hl_parser_t *p, hl_instruction_t *inst,
                                           hl_called_slots_t *s) {
  hl_token_t name = p->lx.tok;
  hl_lexer_next(&p->lx);
  for (size_t i = 0; i < sizeof(kAttrs) / sizeof(kAttrs[0]); i++)
    if (hl_tok_text_equals(&name, kAttrs[i].name)) return kAttrs[i].fn(p, inst, s, &name);
  // Known attributes without an IR field (statistics, origin, mode, ...) and
  // unknown ones: skip the value.
  return hl_skip_attribute_value(&p->lx, name.line);
}
