// Pieces shared by the HLO text parser's files (shape, literal, attribute and
// module parsing). Not a public interface: include only from runtime/text/.
#ifndef HL_RUNTIME_TEXT_HLO_PARSER_INTERNAL_H_
#define HL_RUNTIME_TEXT_HLO_PARSER_INTERNAL_H_

#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"
#include "runtime/text/hlo_lexer.h"

//===----------------------------------------------------------------------===//
// Shapes and literals (token level)
//===----------------------------------------------------------------------===//

// True when the current token can start a shape (a type name or '(').
bool hl_lexer_at_shape(const hl_lexer_t *lx);
// Parses a shape at the current token; on error *out_shape is zeroed.
hl_status_t hl_parse_shape_tokens(hl_lexer_t *lx, hl_shape_t *out_shape);
// Parses a literal value of `shape` at the current token (constant(...) form:
// tuple elements may carry an optional shape prefix).
hl_status_t hl_parse_literal_tokens(hl_lexer_t *lx, const hl_shape_t *shape,
                                    hl_literal_t **out_literal);

//===----------------------------------------------------------------------===//
// Module parser state and attribute parsing
//===----------------------------------------------------------------------===//

typedef struct hl_parser {
  hl_lexer_t lx;
  hl_module_t *module;
  int64_t next_instruction_id;
  int depth;  // nesting of inline computations / anonymous operands
  struct name_map *names;  // instructions of the computation being parsed
  bool has_entry_layout;   // the header's entry_computation_layout, checked
  hl_lexer_t entry_layout; // once the entry is parsed (lexer at its '{')
} hl_parser_t;

// Called computations as the attributes name them; assembled into
// called_computations in proto order once all attributes are read.
typedef struct hl_called_slots {
  hl_computation_t *to_apply, *calls, *body, *condition;
  hl_computation_t *true_computation, *false_computation, *select, *scatter;
  hl_computation_t **branches;  // branch_computations (owned array)
  int branch_count;
  hl_computation_t **called;    // called_computations (owned array)
  int called_count;
  bool has_branches, has_called;
} hl_called_slots_t;

void hl_called_slots_deinit(hl_called_slots_t *slots);

// Parses the value of one instruction attribute; the current token is the
// attribute-name token. Unknown attributes are skipped.
hl_status_t hl_parse_instruction_attribute(hl_parser_t *p, hl_instruction_t *inst,
                                           hl_called_slots_t *slots);
// Skips an attribute value whose meaning is unknown: balanced groups, and
// other tokens on the same line up to a ',' or a closing bracket.
hl_status_t hl_skip_attribute_value(hl_lexer_t *lx, int attr_line);
// Skips a balanced (...), [...] or {...} group at the current token.
hl_status_t hl_skip_balanced(hl_lexer_t *lx);

// A computation reference: a name defined earlier, or an inline "{ ... }" body
// (which becomes a new computation named after `hint`).
hl_status_t hl_parse_computation_ref(hl_parser_t *p, const char *hint,
                                     hl_computation_t **out_computation);
// Parses "{ instructions }" as a new computation (defined in hlo_parser.c).
hl_status_t hl_parse_inline_computation(hl_parser_t *p, const char *hint,
                                        hl_computation_t **out_computation);
// Looks up an instruction by name in the computation being parsed.
hl_instruction_t *hl_parser_find_instruction(hl_parser_t *p, const char *name, size_t len);

// Small token helpers (all report "<file>:<line>:<col>: ... near '...'").
hl_status_t hl_expect(hl_lexer_t *lx, hl_tok_kind_t kind, const char *what);
hl_status_t hl_parse_int64(hl_lexer_t *lx, int64_t *out_value);
hl_status_t hl_parse_i64_list(hl_lexer_t *lx, hl_i64_list_t *out_list);  // {a,b,...}
// A token's text (the name for NAME/LABEL/ATTR tokens) as a new string.
char *hl_token_strdup(const hl_token_t *tok);

#endif  // HL_RUNTIME_TEXT_HLO_PARSER_INTERNAL_H_
