// A growable NUL-terminated string, for printers and messages.
#ifndef HL_RUNTIME_BASE_STRBUF_H_
#define HL_RUNTIME_BASE_STRBUF_H_

#include <stdbool.h>
#include <stddef.h>

typedef struct hl_strbuf {
  char *data;      // always NUL-terminated once anything was appended
  size_t length;
  size_t capacity;
  bool failed;     // an allocation failed; further appends are ignored
} hl_strbuf_t;

void hl_strbuf_init(hl_strbuf_t *sb);
void hl_strbuf_deinit(hl_strbuf_t *sb);
void hl_strbuf_append(hl_strbuf_t *sb, const char *s);
void hl_strbuf_append_n(hl_strbuf_t *sb, const char *s, size_t n);
void hl_strbuf_appendf(hl_strbuf_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hl_strbuf_append_char(hl_strbuf_t *sb, char c);
// Hands the string to the caller (free with hl_free); the buffer is reset.
// Returns NULL if any allocation failed.
char *hl_strbuf_take(hl_strbuf_t *sb);
const char *hl_strbuf_cstr(const hl_strbuf_t *sb);  // "" when empty

// "" for one, "s" otherwise: "%lld element%s", n, hl_plural(n).
static inline const char *hl_plural(long long n) { return n == 1 ? "" : "s"; }

#endif  // HL_RUNTIME_BASE_STRBUF_H_
