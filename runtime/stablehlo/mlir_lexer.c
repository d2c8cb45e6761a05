// MLIR text lexer (see mlir_lexer.h).
#include "runtime/stablehlo/mlir_lexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/strbuf.h"

void hl_mlir_lexer_init(hl_mlir_lexer_t *lx, const char *src, size_t size, const char *file) {
  memset(lx, 0, sizeof(*lx));
  lx->src = src ? src : "";
  lx->size = src ? size : 0;
  lx->line = 1;
  lx->file = file ? file : "<mlir>";
  hl_mlir_lex_next(lx);
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// MLIR bare-id characters (plus '$' and '.' as MLIR allows after the first).
static bool is_id_char(char c) { return is_alpha(c) || is_digit(c) || c == '$' || c == '.'; }
// Suffix ids after % ^ # ! @ may also contain '-'.
static bool is_suffix_char(char c) { return is_id_char(c) || c == '-'; }

static char peek(const hl_mlir_lexer_t *lx, size_t k) {
  return lx->pos + k < lx->size ? lx->src[lx->pos + k] : '\0';
}

static void skip_space(hl_mlir_lexer_t *lx) {
  while (lx->pos < lx->size) {
    char c = lx->src[lx->pos];
    if (c == '\n') {
      lx->pos++;
      lx->line++;
      lx->line_start = lx->pos;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      lx->pos++;
    } else if (c == '/' && peek(lx, 1) == '/') {
      while (lx->pos < lx->size && lx->src[lx->pos] != '\n') lx->pos++;
    } else {
      return;
    }
  }
}

static void finish(hl_mlir_lexer_t *lx, hl_mlir_tok_kind_t kind, size_t start) {
  lx->tok.kind = kind;
  lx->tok.text = lx->src + start;
  lx->tok.length = lx->pos - start;
}

static void lex_number(hl_mlir_lexer_t *lx, size_t start) {
  if (peek(lx, 0) == '-') lx->pos++;
  if (peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X') && is_hex(peek(lx, 2))) {
    lx->pos += 2;
    while (is_hex(peek(lx, 0))) lx->pos++;
    finish(lx, HL_MTOK_INT, start);
    return;
  }
  bool is_float = false;
  while (is_digit(peek(lx, 0))) lx->pos++;
  if (peek(lx, 0) == '.' && is_digit(peek(lx, 1))) {
    is_float = true;
    lx->pos++;
    while (is_digit(peek(lx, 0))) lx->pos++;
  } else if (peek(lx, 0) == '.' && !is_alpha(peek(lx, 1))) {
    is_float = true;  // "1." as MLIR allows
    lx->pos++;
  }
  if ((peek(lx, 0) == 'e' || peek(lx, 0) == 'E') &&
      (is_digit(peek(lx, 1)) ||
       ((peek(lx, 1) == '+' || peek(lx, 1) == '-') && is_digit(peek(lx, 2))))) {
    is_float = true;
    lx->pos += 2;
    while (is_digit(peek(lx, 0))) lx->pos++;
  }
  finish(lx, is_float ? HL_MTOK_FLOAT : HL_MTOK_INT, start);
}

void hl_mlir_lex_next(hl_mlir_lexer_t *lx) {
  lx->prev_line = lx->line;
  skip_space(lx);
  size_t start = lx->pos;
  lx->tok.line = lx->line;
  lx->tok.column = (int)(start - lx->line_start) + 1;
  if (lx->pos >= lx->size) {
    finish(lx, HL_MTOK_EOF, start);
    return;
  }
  char c = lx->src[lx->pos];
  if (is_alpha(c)) {
    while (is_id_char(peek(lx, 0))) lx->pos++;
    finish(lx, HL_MTOK_IDENT, start);
    return;
  }
  if (is_digit(c) || (c == '-' && is_digit(peek(lx, 1)))) {
    lex_number(lx, start);
    return;
  }
  if (c == '"') {
    lx->pos++;
    while (lx->pos < lx->size && lx->src[lx->pos] != '"') {
      if (lx->src[lx->pos] == '\\' && lx->pos + 1 < lx->size) lx->pos++;
      if (lx->src[lx->pos] == '\n') break;
      lx->pos++;
    }
    if (peek(lx, 0) != '"') {
      finish(lx, HL_MTOK_ERROR, start);
      return;
    }
    lx->pos++;
    finish(lx, HL_MTOK_STRING, start);
    return;
  }
  if (c == '{' && peek(lx, 1) == '-' && peek(lx, 2) == '#') {
    lx->pos += 3;
    finish(lx, HL_MTOK_META_BEGIN, start);
    return;
  }
  if (c == '#' && peek(lx, 1) == '-' && peek(lx, 2) == '}') {
    lx->pos += 3;
    finish(lx, HL_MTOK_META_END, start);
    return;
  }
  if (c == '-' && peek(lx, 1) == '>') {
    lx->pos += 2;
    finish(lx, HL_MTOK_ARROW, start);
    return;
  }
  if (c == '%' || c == '^' || c == '#' || c == '!' || c == '@') {
    lx->pos++;
    if (c == '@' && peek(lx, 0) == '"') {
      lx->pos++;
      while (lx->pos < lx->size && lx->src[lx->pos] != '"' && lx->src[lx->pos] != '\n') lx->pos++;
      if (peek(lx, 0) != '"') {
        finish(lx, HL_MTOK_ERROR, start);
        return;
      }
      lx->pos++;
    } else {
      while (is_suffix_char(peek(lx, 0))) lx->pos++;
    }
    if (lx->pos == start + 1) {
      finish(lx, HL_MTOK_ERROR, start);
      return;
    }
    if (c == '%' && peek(lx, 0) == '#' && is_digit(peek(lx, 1))) {
      lx->pos++;
      while (is_digit(peek(lx, 0))) lx->pos++;
    }
    finish(lx, c == '%'   ? HL_MTOK_VALUE
               : c == '^' ? HL_MTOK_BLOCK
               : c == '#' ? HL_MTOK_HASH
               : c == '!' ? HL_MTOK_BANG
                          : HL_MTOK_SYMBOL,
           start);
    return;
  }
  if (strchr("()[]{}<>,:=?*+|-", c)) {
    lx->pos++;
    finish(lx, HL_MTOK_PUNCT, start);
    return;
  }
  lx->pos++;
  finish(lx, HL_MTOK_ERROR, start);
}

size_t hl_mlir_tok_offset(const hl_mlir_lexer_t *lx) { return (size_t)(lx->tok.text - lx->src); }

void hl_mlir_lex_seek(hl_mlir_lexer_t *lx, size_t pos) {
  // Re-count lines from the current token up to pos.
  size_t from = hl_mlir_tok_offset(lx);
  lx->line = lx->tok.line;
  lx->line_start = from - (size_t)(lx->tok.column - 1);
  // memchr: seeks jump over dense bodies that may be 100 MB of hex.
  size_t end = pos < lx->size ? pos : lx->size;
  for (size_t i = from; i < end;) {
    const char *nl = memchr(lx->src + i, '\n', end - i);
    if (!nl) break;
    lx->line++;
    i = (size_t)(nl - lx->src) + 1;
    lx->line_start = i;
  }
  lx->pos = pos;
  hl_mlir_lex_next(lx);
}

void hl_mlir_lex_reset(hl_mlir_lexer_t *lx, size_t pos, int line, size_t line_start) {
  lx->pos = pos;
  lx->line = line;
  lx->line_start = line_start;
  hl_mlir_lex_next(lx);
}

bool hl_mlir_tok_is(const hl_mlir_token_t *t, hl_mlir_tok_kind_t kind, const char *text) {
  size_t n = strlen(text);
  return t->kind == kind && t->length == n && memcmp(t->text, text, n) == 0;
}

bool hl_mlir_tok_is_punct(const hl_mlir_token_t *t, char c) {
  return t->kind == HL_MTOK_PUNCT && t->text[0] == c;
}

static hl_status_t error_v(const char *file, int line, int column, const char *near,
                           size_t near_len, const char *fmt, va_list ap) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  hl_strbuf_appendf(&sb, "%s:%d:%d: error: %s", file, line, column, msg);
  if (near && near_len) {
    hl_strbuf_append(&sb, " near '");
    hl_strbuf_append_n(&sb, near, near_len > 40 ? 40 : near_len);
    hl_strbuf_append(&sb, near_len > 40 ? "...'" : "'");
  }
  hl_status_t st = HL_INVALID("%s", hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return st;
}

hl_status_t hl_mlir_error_at(const hl_mlir_lexer_t *lx, const hl_mlir_token_t *t, const char *fmt,
                             ...) {
  if (!t) t = &lx->tok;
  va_list ap;
  va_start(ap, fmt);
  hl_status_t st = error_v(lx->file, t->line, t->column,
                           t->kind == HL_MTOK_EOF ? "end of input" : t->text,
                           t->kind == HL_MTOK_EOF ? 12 : t->length, fmt, ap);
  va_end(ap);
  return st;
}

hl_status_t hl_mlir_error_pos(const char *file, int line, int column, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hl_status_t st = error_v(file, line, column, NULL, 0, fmt, ap);
  va_end(ap);
  return st;
}
