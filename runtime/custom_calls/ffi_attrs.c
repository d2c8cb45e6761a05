// A reader for the scalar entries of an MLIR dictionary attribute: enough for
// jaxlib's attributes (ui8 enum characters, i32 / i64 integers, booleans).
#include "runtime/custom_calls/ffi_attrs.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

// Finds `key` as a top-level entry name of the dictionary; returns the text
// after its '=' or NULL.
static const char *find_entry(const char *cfg, const char *key) {
  size_t kl = strlen(key);
  int depth = 0;
  bool in_string = false;
  for (const char *p = cfg; *p; p++) {
    char c = *p;
    if (in_string) {
      if (c == '\\' && p[1]) p++;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c == '{' || c == '[' || c == '(' || c == '<') {
      depth++;
      if (depth != 1 || c != '{') continue;
    } else if (c == '}' || c == ']' || c == ')' || c == '>') {
      depth--;
      continue;
    } else if (c != ',') {
      continue;
    }
    if (depth != 1) continue;
    // After '{' or ',' at depth 1: an entry name follows.
    const char *q = p + 1;
    while (isspace((unsigned char)*q)) q++;
    if (strncmp(q, key, kl) != 0) continue;
    q += kl;
    while (isspace((unsigned char)*q)) q++;
    if (*q == '=') return q + 1;
  }
  return NULL;
}

hl_status_t hl_ffi_attr_int_opt(const hl_custom_call_t *call, const char *key, int64_t *out,
                                bool *found) {
  *found = false;
  const char *cfg = call->inst->attrs.backend_config;
  const char *v = cfg ? find_entry(cfg, key) : NULL;
  if (!v) return NULL;
  while (isspace((unsigned char)*v)) v++;
  if (strncmp(v, "true", 4) == 0 && !isalnum((unsigned char)v[4])) {
    *out = 1;
  } else if (strncmp(v, "false", 5) == 0 && !isalnum((unsigned char)v[5])) {
    *out = 0;
  } else {
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v)
      return HL_INVALID("%s: custom-call \"%s\" attribute %s is not an integer in "
                        "backend_config %s", hl_instruction_location(call->inst), call->name,
                        key, cfg);
    *out = x;
  }
  *found = true;
  return NULL;
}

hl_status_t hl_ffi_attr_int(const hl_custom_call_t *call, const char *key, int64_t *out) {
  bool found;
  HL_RETURN_IF_ERROR(hl_ffi_attr_int_opt(call, key, out, &found));
  if (!found)
    return HL_INVALID("%s: custom-call \"%s\" needs the attribute %s in its backend_config "
                      "(got %s)", hl_instruction_location(call->inst), call->name, key,
                      call->inst->attrs.backend_config ? call->inst->attrs.backend_config
                                                       : "none");
  return NULL;
}
