// A small JSON reader for the backend_config of GPU custom-calls (XLA prints
// GpuBackendConfig as JSON: {"gemm_backend_config":{"alpha_real":1,...}}).
#ifndef HL_CUSTOM_CALLS_JSON_H_
#define HL_CUSTOM_CALLS_JSON_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"

typedef enum hl_json_kind {
  HL_JSON_NULL, HL_JSON_BOOL, HL_JSON_NUMBER, HL_JSON_STRING, HL_JSON_ARRAY, HL_JSON_OBJECT,
} hl_json_kind_t;

typedef struct hl_json {
  hl_json_kind_t kind;
  bool boolean;
  double number;
  char *string;              // STRING (owned, decoded)
  struct hl_json *items;     // ARRAY / OBJECT values (owned)
  char **keys;               // OBJECT keys (owned)
  int count;
} hl_json_t;

// Parses text; errors name the offset and what was expected.
hl_status_t hl_json_parse(const char *text, hl_json_t *out);
void hl_json_free(hl_json_t *v);

// The member `key` of an object, or NULL.
const hl_json_t *hl_json_get(const hl_json_t *obj, const char *key);
// A number, or a string holding one (proto3 JSON prints int64 as strings).
bool hl_json_number(const hl_json_t *v, double *out);

#endif  // HL_CUSTOM_CALLS_JSON_H_
