// Shapes in HLO text: f32[2,3]{1,0}, (s32[], f32[4]), token[], f32[<=8,?],
// and layouts with every part XLA prints after ':' ({1,0:T(8,128)(2,1)E(4)S(1)},
// runtime/base/layout.h), kept in the shape so the printer writes them back.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_parser_internal.h"

bool hl_lexer_at_shape(const hl_lexer_t *lx) {
  return lx->tok.kind == HL_TOK_TYPE || lx->tok.kind == HL_TOK_LPAREN;
}

static hl_status_t parse_shape(hl_lexer_t *lx, hl_shape_t *s, int depth);

// "(n)" after a one-letter layout part: a non-negative integer.
static hl_status_t parse_paren_int(hl_lexer_t *lx, const char *part, int64_t *out) {
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' after the layout part"));
  if (lx->tok.kind != HL_TOK_INT || lx->tok.int_negative)
    return hl_lexer_error(lx, NULL, "layout part %s needs a non-negative integer", part);
  HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, out));
  hl_lexer_next(lx);
  return hl_expect(lx, HL_TOK_RPAREN, "')' to close the layout part");
}

// "(type)" after '#' or '*': an integer element type.
static hl_status_t parse_paren_type(hl_lexer_t *lx, const char *part, hl_dtype_t *out) {
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' after the layout part"));
  if (lx->tok.kind != HL_TOK_TYPE || !hl_dtype_is_integer(lx->tok.dtype))
    return hl_lexer_error(lx, NULL, "layout part %s needs an integer type", part);
  *out = lx->tok.dtype;
  hl_lexer_next(lx);
  return hl_expect(lx, HL_TOK_RPAREN, "')' to close the layout part");
}

static bool at_punct(const hl_lexer_t *lx, char c) {
  return lx->tok.kind == HL_TOK_PUNCT && lx->tok.length == 1 && lx->tok.text[0] == c;
}

// D(D,C+,S~,H): dense / compressed / singleton / loose-compressed levels;
// '+' marks a non-unique and '~' a non-ordered dimension.
static hl_status_t parse_dim_levels(hl_lexer_t *lx, hl_layout_ext_t *e) {
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' after D"));
  bool all_unique = true, all_ordered = true;
  while (lx->tok.kind != HL_TOK_RPAREN) {
    if (e->dim_level_count == HL_MAX_RANK)
      return hl_lexer_error(lx, NULL, "more than %d dimension levels", HL_MAX_RANK);
    static const char *const kNames[] = {"D", "C", "S", "H"};
    int level = -1;
    for (int i = 0; i < 4; i++)
      if (hl_tok_is_word(&lx->tok, kNames[i])) level = i;
    if (level < 0) return hl_lexer_error(lx, NULL, "expected a dimension level (D, C, S or H)");
    int i = e->dim_level_count++;
    e->dim_level_types[i] = (uint8_t)level;
    e->dim_unique[i] = e->dim_ordered[i] = true;
    hl_lexer_next(lx);
    if (at_punct(lx, '+')) {
      e->dim_unique[i] = all_unique = false;
      hl_lexer_next(lx);
    }
    if (at_punct(lx, '~')) {
      e->dim_ordered[i] = all_ordered = false;
      hl_lexer_next(lx);
    }
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  e->dim_unique_count = all_unique ? 0 : e->dim_level_count;
  e->dim_ordered_count = all_ordered ? 0 : e->dim_level_count;
  return hl_expect(lx, HL_TOK_RPAREN, "')' to close D(...)");
}

// T(8,128)(2,1): one or more tiles; '*' combines dimensions.
static hl_status_t parse_tiles(hl_lexer_t *lx, hl_layout_ext_t *e) {
  if (lx->tok.kind != HL_TOK_LPAREN) return hl_lexer_error(lx, NULL, "expected '(' after T");
  while (lx->tok.kind == HL_TOK_LPAREN) {
    if (e->tile_count == HL_LAYOUT_MAX_TILES)
      return hl_lexer_error(lx, NULL, "more than %d tiles", HL_LAYOUT_MAX_TILES);
    hl_layout_tile_t *t = &e->tiles[e->tile_count++];
    hl_lexer_next(lx);
    while (lx->tok.kind != HL_TOK_RPAREN) {
      if (t->rank == HL_MAX_RANK)
        return hl_lexer_error(lx, NULL, "tile has more than %d dimensions", HL_MAX_RANK);
      if (at_punct(lx, '*')) {
        t->dims[t->rank++] = HL_LAYOUT_COMBINE_DIM;
      } else if (lx->tok.kind == HL_TOK_INT && !lx->tok.int_negative) {
        HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, &t->dims[t->rank++]));
      } else {
        return hl_lexer_error(lx, NULL, "expected a tile dimension (an integer or '*')");
      }
      hl_lexer_next(lx);
      if (lx->tok.kind != HL_TOK_COMMA) break;
      hl_lexer_next(lx);
    }
    HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RPAREN, "')' to close the tile"));
  }
  return NULL;
}

// SC(0:1,2)(1:4): split configs, a dimension and its split indices each.
static hl_status_t parse_split_configs(hl_lexer_t *lx, hl_layout_ext_t *e) {
  if (lx->tok.kind != HL_TOK_LPAREN) return hl_lexer_error(lx, NULL, "expected '(' after SC");
  while (lx->tok.kind == HL_TOK_LPAREN) {
    if (e->split_count == HL_MAX_RANK)
      return hl_lexer_error(lx, NULL, "more than %d split configs", HL_MAX_RANK);
    hl_layout_split_t *sc = &e->splits[e->split_count++];
    hl_lexer_next(lx);
    if (lx->tok.kind != HL_TOK_INT || lx->tok.int_negative)
      return hl_lexer_error(lx, NULL, "expected the split dimension");
    HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, &sc->dimension));
    hl_lexer_next(lx);
    HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_COLON, "':' after the split dimension"));
    while (lx->tok.kind == HL_TOK_INT) {
      if (sc->count == HL_LAYOUT_MAX_SPLIT_INDICES)
        return hl_lexer_error(lx, NULL, "more than %d split indices",
                              HL_LAYOUT_MAX_SPLIT_INDICES);
      HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, &sc->indices[sc->count++]));
      hl_lexer_next(lx);
      if (lx->tok.kind != HL_TOK_COMMA) break;
      hl_lexer_next(lx);
    }
    HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RPAREN, "')' to close the split config"));
  }
  return NULL;
}

// Everything after ':' in a layout, in XLA's order:
// D(..) T(..) L(n) #(t) *(t) E(n) S(n) SC(..) P(shape) M(n).
static hl_status_t parse_layout_suffix(hl_lexer_t *lx, hl_shape_t *s, int depth) {
  hl_layout_ext_t *e = NULL;
  int stage = 0;  // parts must come in order, each at most once
  while (lx->tok.kind != HL_TOK_RBRACE) {
    hl_token_t at = lx->tok;
    int part;
    if (hl_tok_is_word(&at, "D")) part = 1;
    else if (hl_tok_is_word(&at, "T")) part = 2;
    else if (hl_tok_is_word(&at, "L")) part = 3;
    else if (at_punct(lx, '#')) part = 4;
    else if (at_punct(lx, '*')) part = 5;
    else if (hl_tok_is_word(&at, "E")) part = 6;
    else if (hl_tok_is_word(&at, "S")) part = 7;
    else if (hl_tok_is_word(&at, "SC")) part = 8;
    else if (hl_tok_is_word(&at, "P")) part = 9;
    else if (hl_tok_is_word(&at, "M")) part = 10;
    else
      return hl_lexer_error(lx, NULL, "unknown layout part (expected one of D T L # * E S SC "
                            "P M)");
    if (part <= stage)
      return hl_lexer_error(lx, NULL, "layout part out of order or repeated (XLA's order is "
                            "D T L # * E S SC P M)");
    stage = part;
    hl_lexer_next(lx);
    if (part != 6 && part != 7) HL_RETURN_IF_ERROR(hl_layout_ext_ensure(s, &e));
    int64_t v = 0;
    switch (part) {
      case 1: HL_RETURN_IF_ERROR(parse_dim_levels(lx, e)); break;
      case 2: HL_RETURN_IF_ERROR(parse_tiles(lx, e)); break;
      case 3:
        HL_RETURN_IF_ERROR(parse_paren_int(lx, "L", &v));
        if (v < 1) return hl_lexer_error(lx, &at, "tail padding alignment L(n) needs n >= 1");
        e->tail_padding_alignment = v;
        break;
      case 4: HL_RETURN_IF_ERROR(parse_paren_type(lx, "#", &e->index_type)); break;
      case 5: HL_RETURN_IF_ERROR(parse_paren_type(lx, "*", &e->pointer_type)); break;
      case 6:
        HL_RETURN_IF_ERROR(parse_paren_int(lx, "E", &s->element_size_in_bits));
        break;
      case 7: HL_RETURN_IF_ERROR(parse_paren_int(lx, "S", &s->memory_space)); break;
      case 8: HL_RETURN_IF_ERROR(parse_split_configs(lx, e)); break;
      case 9:
        HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' after P"));
        e->physical_shape = hl_calloc(1, sizeof(hl_shape_t));
        if (!e->physical_shape) return HL_OOM();
        HL_RETURN_IF_ERROR(parse_shape(lx, e->physical_shape, depth + 1));
        HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RPAREN, "')' to close P(...)"));
        break;
      default:
        HL_RETURN_IF_ERROR(parse_paren_int(lx, "M", &e->dynamic_metadata_prefix_bytes));
        break;
    }
  }
  return NULL;
}

static hl_status_t parse_layout(hl_lexer_t *lx, hl_shape_t *s, int depth) {
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
  bool suffix = lx->tok.kind == HL_TOK_COLON;
  if (suffix) {
    hl_lexer_next(lx);
    HL_RETURN_IF_ERROR(parse_layout_suffix(lx, s, depth));
  }
  if (lx->tok.kind != HL_TOK_RBRACE) return hl_lexer_error(lx, NULL, "expected '}' after layout");
  if (n != s->rank && (n != 0 || suffix))
    return hl_lexer_error(lx, &open, "layout has %d entries for a rank-%d shape", n, s->rank);
  s->has_layout = n == s->rank;
  hl_lexer_next(lx);
  return NULL;
}

static hl_status_t parse_array_shape(hl_lexer_t *lx, hl_shape_t *s, int depth) {
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
    if (next.kind == HL_TOK_INT || next.kind == HL_TOK_COLON) return parse_layout(lx, s, depth);
  }
  return NULL;
}

static hl_status_t parse_shape(hl_lexer_t *lx, hl_shape_t *s, int depth) {
  memset(s, 0, sizeof(*s));
  if (depth > 64) return hl_lexer_error(lx, NULL, "shape nested too deeply");
  if (lx->tok.kind == HL_TOK_TYPE) return parse_array_shape(lx, s, depth);
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
