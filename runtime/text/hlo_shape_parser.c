// Shapes in HLO text: f32[2,3]{1,0}, (s32[], f32[4]), token[], f32[<=8,?],
// tiled layouts {1,0:T(8,128)} (everything after ':' is accepted and dropped).
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_parser_internal.h"

bool hl_lexer_at_shape(const hl_lexer_t *lx) {
  return lx->tok.kind == HL_TOK_TYPE || lx->tok.kind == HL_TOK_LPAREN;
}

// Everything after ':' in a layout up to its closing '}' (tiles, memory space...).
static hl_status_t skip_layout_suffix(hl_lexer_t *lx) {
  while (lx->tok.kind != HL_TOK_RBRACE) {
    switch (lx->tok.kind) {
      case HL_TOK_EOF:
      case HL_TOK_ERROR:
        return hl_lexer_error(lx, NULL, "unterminated layout");
      case HL_TOK_LPAREN:
      case HL_TOK_LSQUARE:
      case HL_TOK_LBRACE:
        HL_RETURN_IF_ERROR(hl_skip_balanced(lx));
        break;
      case HL_TOK_RPAREN:
      case HL_TOK_RSQUARE:
        return hl_lexer_error(lx, NULL, "unbalanced layout");
      default:
        hl_lexer_next(lx);
    }
  }
  return NULL;
}

static hl_status_t parse_layout(hl_lexer_t *lx, hl_shape_t *s) {
  hl_token_t open = lx->tok;
  hl_lexer_next(lx);  // '{'
  int n = 0;
  bool seen[HL_MAX_RANK] = {false};
  while (lx->tok.kind == HL_TOK_INT) {
    int64_t d;
    HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, &d));
    if (d < 0 || d >= s->rank || seen[d])
      return hl_lexer_error(lx, NULL, "layout entry %lld is not a dimension of rank-%d shape "
                            "(or is repeated)", (long long)d, s->rank);
    seen[d] = true;
    s->minor_to_major[n++] = d;
    hl_lexer_next(lx);
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  if (lx->tok.kind == HL_TOK_COLON) {
    hl_lexer_next(lx);
    HL_RETURN_IF_ERROR(skip_layout_suffix(lx));
  }
  if (lx->tok.kind != HL_TOK_RBRACE) return hl_lexer_error(lx, NULL, "expected '}' after layout");
  if (n != s->rank && !(n == 0))
    return hl_lexer_error(lx, &open, "layout has %d entries for a rank-%d shape", n, s->rank);
  s->has_layout = n == s->rank;
  hl_lexer_next(lx);
  return NULL;
}

static hl_status_t parse_array_shape(hl_lexer_t *lx, hl_shape_t *s) {
  s->dtype = lx->tok.dtype;
  hl_lexer_next(lx);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LSQUARE, "'[' after the element type"));
  if (lx->tok.kind != HL_TOK_RSQUARE) {
    for (;;) {
      if (s->rank >= HL_MAX_RANK)
        return hl_lexer_error(lx, NULL, "shape has more than %d dimensions", HL_MAX_RANK);
      int i = s->rank;
      if (lx->tok.kind == HL_TOK_QUESTION) {
        s->dims[i] = -1;
        s->dynamic_mask |= 1u << i;
        hl_lexer_next(lx);
      } else {
        bool bounded = lx->tok.kind == HL_TOK_LEQ;
        if (bounded) hl_lexer_next(lx);
        if (lx->tok.kind != HL_TOK_INT || lx->tok.int_negative)
          return hl_lexer_error(lx, NULL, "expected a dimension size");
        HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, &s->dims[i]));
        if (bounded) s->dynamic_mask |= 1u << i;
        hl_lexer_next(lx);
      }
      s->rank++;
      if (lx->tok.kind != HL_TOK_COMMA) break;
      hl_lexer_next(lx);
    }
  }
  hl_token_t close = lx->tok;
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RSQUARE, "']' to close the dimensions"));
  // Later stages multiply dimensions in int64 unchecked.
  if (!hl_shape_size_fits(s))
    return hl_lexer_error(lx, &close, "the dimensions of this %s shape are too large (their "
                          "product overflows int64)", hl_dtype_name(s->dtype));
  if (!hl_dtype_is_array(s->dtype) && s->rank != 0)
    return hl_lexer_error(lx, NULL, "%s shapes have no dimensions", hl_dtype_name(s->dtype));
  // A '{' is a layout only when followed by an integer or ':'; otherwise it
  // opens something else (a computation body after "-> f32[2]").
  if (lx->tok.kind == HL_TOK_LBRACE) {
    hl_token_t next = hl_lexer_peek(lx);
    if (next.kind == HL_TOK_INT || next.kind == HL_TOK_COLON) return parse_layout(lx, s);
  }
  return NULL;
}

static hl_status_t parse_shape(hl_lexer_t *lx, hl_shape_t *s, int depth) {
  memset(s, 0, sizeof(*s));
  if (depth > 64) return hl_lexer_error(lx, NULL, "shape nested too deeply");
  if (lx->tok.kind == HL_TOK_TYPE) return parse_array_shape(lx, s);
  if (lx->tok.kind != HL_TOK_LPAREN) return hl_lexer_error(lx, NULL, "expected a shape");
  hl_lexer_next(lx);
  s->dtype = HL_TUPLE;
  int cap = 0;
  while (lx->tok.kind != HL_TOK_RPAREN) {
    if (s->tuple_count == cap) {
      cap = cap ? cap * 2 : 4;
      hl_shape_t *t = hl_realloc(s->tuple, (size_t)cap * sizeof(hl_shape_t));
      if (!t) return HL_OOM();
      s->tuple = t;
    }
    hl_shape_t *elem = &s->tuple[s->tuple_count];
    hl_status_t st = parse_shape(lx, elem, depth + 1);
    s->tuple_count++;  // counted even on error so deinit frees its children
    if (st) return st;
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  return hl_expect(lx, HL_TOK_RPAREN, "')' to close the tuple shape");
}

hl_status_t hl_parse_shape_tokens(hl_lexer_t *lx, hl_shape_t *out) {
  hl_status_t st = parse_shape(lx, out, 0);
  if (st) hl_shape_deinit(out);
  return st;
}

hl_status_t hl_parse_shape(const char *text, hl_shape_t *out) {
  memset(out, 0, sizeof(*out));
  if (!text) return HL_INVALID("hl_parse_shape: no text");
  hl_lexer_t lx;
  hl_lexer_init(&lx, text, strlen(text), "<shape>");
  HL_RETURN_IF_ERROR(hl_parse_shape_tokens(&lx, out));
  if (lx.tok.kind != HL_TOK_EOF) {
    hl_shape_deinit(out);
    return hl_lexer_error(&lx, NULL, "unexpected text after the shape");
  }
  return NULL;
}
