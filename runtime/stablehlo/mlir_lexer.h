// Lexer for MLIR's textual format as StableHLO programs use it. Tokens point
// into the source (no copies); positions are 1-based line:column for MLIR
// style diagnostics ("file:line:col: error: ...").
#ifndef HL_RUNTIME_STABLEHLO_MLIR_LEXER_H_
#define HL_RUNTIME_STABLEHLO_MLIR_LEXER_H_

#include <stdbool.h>
#include <stddef.h>

#include "runtime/base/status.h"

typedef enum hl_mlir_tok_kind {
  HL_MTOK_EOF = 0,
  HL_MTOK_ERROR,
  HL_MTOK_IDENT,     // bare identifier / keyword: func.func, tensor, GT, dense, x
  HL_MTOK_VALUE,     // %name or %name#3 (text includes '%')
  HL_MTOK_BLOCK,     // ^bb0
  HL_MTOK_SYMBOL,    // @name or @"quoted"
  HL_MTOK_HASH,      // #alias or #dialect.attr (text includes '#')
  HL_MTOK_BANG,      // !alias or !dialect.type (text includes '!')
  HL_MTOK_INT,       // 12, -3, 0x1F
  HL_MTOK_FLOAT,     // 1.5, -2.0e-3
  HL_MTOK_STRING,    // "..." (text includes the quotes)
  HL_MTOK_PUNCT,     // one of ( ) [ ] { } < > , : = ? * + | -
  HL_MTOK_ARROW,     // ->
  HL_MTOK_META_BEGIN,  // {-#
  HL_MTOK_META_END,    // #-}
} hl_mlir_tok_kind_t;

typedef struct hl_mlir_token {
  hl_mlir_tok_kind_t kind;
  const char *text;
  size_t length;
  int line, column;
} hl_mlir_token_t;

typedef struct hl_mlir_lexer {
  const char *src;
  size_t size;
  size_t pos;         // next unread byte
  int line;
  size_t line_start;  // offset of the current line's first byte
  const char *file;   // for messages
  int prev_line;      // line where the previous token ended
  hl_mlir_token_t tok;  // current token
} hl_mlir_lexer_t;

void hl_mlir_lexer_init(hl_mlir_lexer_t *lx, const char *src, size_t size, const char *file);
// Advances to the next token (skipping whitespace and // comments).
void hl_mlir_lex_next(hl_mlir_lexer_t *lx);
// Moves the lexer to byte offset `pos` (tracking lines from the current
// place: pos must not be before the current token) and lexes a token there.
void hl_mlir_lex_seek(hl_mlir_lexer_t *lx, size_t pos);
// Moves the lexer to byte offset `pos` whose line number and line start
// are known (saved from an earlier token), in either direction.
void hl_mlir_lex_reset(hl_mlir_lexer_t *lx, size_t pos, int line, size_t line_start);
// Byte offset of the current token in the source.
size_t hl_mlir_tok_offset(const hl_mlir_lexer_t *lx);

bool hl_mlir_tok_is(const hl_mlir_token_t *t, hl_mlir_tok_kind_t kind, const char *text);
bool hl_mlir_tok_is_punct(const hl_mlir_token_t *t, char c);

// "file:line:col: error: <message>" at token t (the current token if NULL).
hl_status_t hl_mlir_error_at(const hl_mlir_lexer_t *lx, const hl_mlir_token_t *t, const char *fmt,
                             ...) __attribute__((format(printf, 3, 4)));
// The same at a line:column.
hl_status_t hl_mlir_error_pos(const char *file, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif  // HL_RUNTIME_STABLEHLO_MLIR_LEXER_H_
