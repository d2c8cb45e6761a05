// Recursive-descent JSON parser (RFC 8259 subset: \u escapes outside the
// ASCII range are kept as '?', which no XLA config field needs).
#include "runtime/custom_calls/json.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"

typedef struct {
  const char *s, *p;
  int depth;
} parser_t;

static void skip_ws(parser_t *ps) {
  while (isspace((unsigned char)*ps->p)) ps->p++;
}

static hl_status_t err(parser_t *ps, const char *what) {
  return HL_INVALID("JSON backend_config: expected %s at offset %ld", what, (long)(ps->p - ps->s));
}

static hl_status_t parse_value(parser_t *ps, hl_json_t *v);

static hl_status_t parse_string(parser_t *ps, char **out) {
  if (*ps->p != '"') return err(ps, "a string");
  ps->p++;
  const char *start = ps->p;
  size_t n = 0;
  for (const char *q = start; *q != '"'; q++) {
    if (!*q) return err(ps, "a closing '\"'");
    if (*q == '\\' && q[1]) q++;
    n++;
  }
  char *s = hl_malloc(n + 1), *d = s;
  if (!s) return HL_OOM();
  while (*ps->p != '"') {
    char c = *ps->p++;
    if (c == '\\') {
      char e = *ps->p++;
      switch (e) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          unsigned v = 0;
          for (int i = 0; i < 4 && isxdigit((unsigned char)*ps->p); i++, ps->p++)
            v = v * 16 + (unsigned)(isdigit((unsigned char)*ps->p) ? *ps->p - '0'
                                                                   : (tolower(*ps->p) - 'a' + 10));
          c = v < 128 ? (char)v : '?';
          break;
        }
        default: c = e; break;
      }
    }
    *d++ = c;
  }
  *d = 0;
  ps->p++;
  *out = s;
  return NULL;
}

static hl_status_t push(hl_json_t *v, hl_json_t *item, char *key) {
  hl_json_t *items = hl_realloc(v->items, (size_t)(v->count + 1) * sizeof(*items));
  if (!items) return HL_OOM();
  v->items = items;
  if (v->kind == HL_JSON_OBJECT) {
    char **keys = hl_realloc(v->keys, (size_t)(v->count + 1) * sizeof(*keys));
    if (!keys) return HL_OOM();
    v->keys = keys;
    keys[v->count] = key;
  }
  items[v->count++] = *item;
  return NULL;
}

static hl_status_t parse_container(parser_t *ps, hl_json_t *v, bool object) {
  v->kind = object ? HL_JSON_OBJECT : HL_JSON_ARRAY;
  char close = object ? '}' : ']';
  ps->p++;
  skip_ws(ps);
  if (*ps->p == close) {
    ps->p++;
    return NULL;
  }
  for (;;) {
    char *key = NULL;
    skip_ws(ps);
    if (object) {
      HL_RETURN_IF_ERROR(parse_string(ps, &key));
      skip_ws(ps);
      if (*ps->p != ':') {
        hl_free(key);
        return err(ps, "':'");
      }
      ps->p++;
    }
    hl_json_t item = {0};
    hl_status_t st = parse_value(ps, &item);
    if (!st) st = push(v, &item, key);
    if (st) {
      hl_free(key);
      hl_json_free(&item);
      return st;
    }
    skip_ws(ps);
    if (*ps->p == ',') {
      ps->p++;
      continue;
    }
    if (*ps->p == close) {
      ps->p++;
      return NULL;
    }
    return err(ps, object ? "',' or '}'" : "',' or ']'");
  }
}

static hl_status_t parse_value(parser_t *ps, hl_json_t *v) {
  memset(v, 0, sizeof(*v));
  skip_ws(ps);
  if (++ps->depth > 64) return err(ps, "less nesting");
  hl_status_t st = NULL;
  char c = *ps->p;
  if (c == '{' || c == '[') {
    st = parse_container(ps, v, c == '{');
  } else if (c == '"') {
    v->kind = HL_JSON_STRING;
    st = parse_string(ps, &v->string);
  } else if (strncmp(ps->p, "true", 4) == 0 || strncmp(ps->p, "false", 5) == 0) {
    v->kind = HL_JSON_BOOL;
    v->boolean = c == 't';
    ps->p += v->boolean ? 4 : 5;
  } else if (strncmp(ps->p, "null", 4) == 0) {
    ps->p += 4;
  } else {
    char *end;
    v->number = strtod(ps->p, &end);
    if (end == ps->p) st = err(ps, "a JSON value");
    v->kind = HL_JSON_NUMBER;
    ps->p = end;
  }
  ps->depth--;
  return st;
}

hl_status_t hl_json_parse(const char *text, hl_json_t *out) {
  parser_t ps = {text, text, 0};
  hl_status_t st = parse_value(&ps, out);
  if (!st) {
    skip_ws(&ps);
    if (*ps.p) st = err(&ps, "the end of the text");
  }
  if (st) hl_json_free(out);
  return st;
}

void hl_json_free(hl_json_t *v) {
  for (int i = 0; i < v->count; i++) {
    hl_json_free(&v->items[i]);
    if (v->keys) hl_free(v->keys[i]);
  }
  hl_free(v->items);
  hl_free(v->keys);
  hl_free(v->string);
  memset(v, 0, sizeof(*v));
}

const hl_json_t *hl_json_get(const hl_json_t *obj, const char *key) {
  if (!obj || obj->kind != HL_JSON_OBJECT) return NULL;
  for (int i = 0; i < obj->count; i++)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

bool hl_json_number(const hl_json_t *v, double *out) {
  if (!v) return false;
  if (v->kind == HL_JSON_NUMBER) {
    *out = v->number;
    return true;
  }
  if (v->kind == HL_JSON_STRING) {
    char *end;
    *out = strtod(v->string, &end);
    return end != v->string && *end == 0;
  }
  return false;
}
