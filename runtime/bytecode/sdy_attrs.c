// Shardy (sdy) attributes in their bytecode form (openxla/shardy
// shardy/dialect/sdy/ir/bytecode.td: codes never renumbered) printed back to
// the text the StableHLO parser keeps raw for sharding_attrs.c, e.g.
// `@mesh, [{"a"}, {}]` for #sdy.sharding<...>.
#include "runtime/bytecode/sdy_attrs.h"

#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"

enum { kMaxDepth = 32 };

typedef struct sdy_ctx {
  const hl_bc_module_t *bc;
  uint32_t sdy, builtin;
} sdy_ctx_t;

static hl_status_t serr(const sdy_ctx_t *c, const char *what) {
  return HL_INVALID("%s: portable artifact (%s): Shardy attribute: %s", c->bc->path,
                    c->bc->producer, what);
}

static hl_status_t print_attr(const sdy_ctx_t *c, uint64_t idx, hl_strbuf_t *out, int depth,
                              uint64_t *code_out);

static hl_status_t open_entry(const sdy_ctx_t *c, uint64_t idx, uint32_t dialect,
                              hl_bc_reader_t *r, uint64_t *code) {
  if (idx >= c->bc->attr_count) return serr(c, "attribute index out of range");
  const hl_bc_entry_t *e = &c->bc->attrs[idx];
  if (e->dialect != dialect || !e->custom) return serr(c, "unexpected attribute kind");
  r->p = e->bytes.data;
  r->end = e->bytes.data + e->bytes.size;
  if (!hl_bc_read_varint(r, code)) return serr(c, "empty attribute");
  return NULL;
}

static hl_status_t print_string(const sdy_ctx_t *c, hl_bc_reader_t *r, hl_strbuf_t *out) {
  uint64_t s;
  if (!hl_bc_read_varint(r, &s) || s >= c->bc->string_count) return serr(c, "bad string");
  hl_strbuf_appendf(out, "\"%s\"", c->bc->strings[s]);
  return NULL;
}

// A builtin StringAttr / FlatSymbolRefAttr by index, printed as "x" / @x.
static hl_status_t print_builtin_name(const sdy_ctx_t *c, uint64_t idx, bool symbol,
                                      hl_strbuf_t *out, int depth) {
  hl_bc_reader_t r;
  uint64_t code, s;
  if (depth > kMaxDepth) return serr(c, "nests too deeply");
  HL_RETURN_IF_ERROR(open_entry(c, idx, c->builtin, &r, &code));
  if (code == 4) {  // FlatSymbolRefAttr { StringAttr }
    if (!hl_bc_read_varint(&r, &s)) return serr(c, "bad symbol");
    return print_builtin_name(c, s, true, out, depth + 1);
  }
  if (code != 2 || !hl_bc_read_varint(&r, &s) || s >= c->bc->string_count)
    return serr(c, "expected a name");
  hl_strbuf_appendf(out, symbol ? "@%s" : "\"%s\"", c->bc->strings[s]);
  return NULL;
}

// Array<attribute>: count, then one attribute index each, joined by sep.
static hl_status_t print_list(const sdy_ctx_t *c, hl_bc_reader_t *r, const char *sep,
                              hl_strbuf_t *out, int depth, bool wrap) {
  uint64_t n, idx;
  if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return serr(c, "bad list");
  for (uint64_t k = 0; k < n; k++) {
    if (k) hl_strbuf_append(out, sep);
    if (!hl_bc_read_varint(r, &idx)) return serr(c, "truncated list");
    if (wrap) hl_strbuf_append_char(out, '<');
    HL_RETURN_IF_ERROR(print_attr(c, idx, out, depth + 1, NULL));
    if (wrap) hl_strbuf_append_char(out, '>');
  }
  return NULL;
}

static hl_status_t read_ints(const sdy_ctx_t *c, hl_bc_reader_t *r, int64_t *v, int cap, int *n) {
  uint64_t count;
  if (!hl_bc_read_varint(r, &count) || count > (uint64_t)cap) return serr(c, "bad integer list");
  for (uint64_t k = 0; k < count; k++)
    if (!hl_bc_read_svarint(r, &v[k])) return serr(c, "truncated integer list");
  *n = (int)count;
  return NULL;
}

// Factor i of a sharding rule: i..z, then z_1, z_2, ... (Shardy's names).
static void factor_name(int64_t i, hl_strbuf_t *out) {
  if (i < 18) hl_strbuf_append_char(out, (char)('i' + i));
  else hl_strbuf_appendf(out, "z_%lld", (long long)(i - 17));
}

static hl_status_t print_factor_set(const sdy_ctx_t *c, hl_bc_reader_t *r, const char *label,
                                    hl_strbuf_t *out) {
  int64_t v[256];
  int n;
  HL_RETURN_IF_ERROR(read_ints(c, r, v, 256, &n));
  if (!n) return NULL;
  hl_strbuf_appendf(out, " %s={", label);
  for (int k = 0; k < n; k++) {
    if (k) hl_strbuf_append(out, ", ");
    factor_name(v[k], out);
  }
  hl_strbuf_append_char(out, '}');
  return NULL;
}

// TensorMappingAttr { Array<DimMappingAttr { Array<svarint> }> } -> [ij, k]
static hl_status_t print_tensor_mapping(const sdy_ctx_t *c, uint64_t idx, hl_strbuf_t *out) {
  hl_bc_reader_t r, d;
  uint64_t code, n, dim;
  HL_RETURN_IF_ERROR(open_entry(c, idx, c->sdy, &r, &code));
  if (code != 9 || !hl_bc_read_varint(&r, &n) || n > (uint64_t)(r.end - r.p))
    return serr(c, "expected a tensor mapping");
  hl_strbuf_append_char(out, '[');
  for (uint64_t k = 0; k < n; k++) {
    if (k) hl_strbuf_append(out, ", ");
    if (!hl_bc_read_varint(&r, &dim)) return serr(c, "truncated tensor mapping");
    HL_RETURN_IF_ERROR(open_entry(c, dim, c->sdy, &d, &code));
    int64_t f[64];
    int nf = 0;
    if (code != 8) return serr(c, "expected a dimension mapping");
    HL_RETURN_IF_ERROR(read_ints(c, &d, f, 64, &nf));
    for (int i = 0; i < nf; i++) factor_name(f[i], out);
  }
  hl_strbuf_append_char(out, ']');
  return NULL;
}

static hl_status_t print_mappings(const sdy_ctx_t *c, hl_bc_reader_t *r, hl_strbuf_t *out) {
  uint64_t n, idx;
  if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return serr(c, "bad mappings");
  hl_strbuf_append_char(out, '(');
  for (uint64_t k = 0; k < n; k++) {
    if (k) hl_strbuf_append(out, ", ");
    if (!hl_bc_read_varint(r, &idx)) return serr(c, "truncated mappings");
    HL_RETURN_IF_ERROR(print_tensor_mapping(c, idx, out));
  }
  hl_strbuf_append_char(out, ')');
  return NULL;
}

static hl_status_t print_attr(const sdy_ctx_t *c, uint64_t idx, hl_strbuf_t *out, int depth,
                              uint64_t *code_out) {
  if (depth > kMaxDepth) return serr(c, "nests too deeply");
  hl_bc_reader_t r;
  uint64_t code, u;
  int64_t s;
  uint8_t b;
  HL_RETURN_IF_ERROR(open_entry(c, idx, c->sdy, &r, &code));
  if (code_out) *code_out = code;
  switch (code) {
    case 0:  // ManualAxesAttr { Array<StringAttr> }
      if (!hl_bc_read_varint(&r, &u) || u > (uint64_t)(r.end - r.p)) return serr(c, "bad axes");
      hl_strbuf_append_char(out, '{');
      for (uint64_t k = 0; k < u; k++) {
        uint64_t a;
        if (k) hl_strbuf_append(out, ", ");
        if (!hl_bc_read_varint(&r, &a)) return serr(c, "truncated axes");
        HL_RETURN_IF_ERROR(print_builtin_name(c, a, false, out, depth + 1));
      }
      hl_strbuf_append_char(out, '}');
      break;
    case 1:  // MeshAxisAttr { name: string, size: svarint } -> "a"=2
      HL_RETURN_IF_ERROR(print_string(c, &r, out));
      if (!hl_bc_read_svarint(&r, &s)) return serr(c, "truncated mesh axis");
      hl_strbuf_appendf(out, "=%lld", (long long)s);
      break;
    case 2: {  // MeshAttr { Array<MeshAxisAttr>, device_ids: svarint[] }
      hl_strbuf_append_char(out, '[');
      HL_RETURN_IF_ERROR(print_list(c, &r, ", ", out, depth, false));
      hl_strbuf_append_char(out, ']');
      int64_t ids[4096];
      int n;
      HL_RETURN_IF_ERROR(read_ints(c, &r, ids, 4096, &n));
      if (n) {
        hl_strbuf_append(out, ", device_ids=[");
        for (int k = 0; k < n; k++) hl_strbuf_appendf(out, k ? ", %lld" : "%lld", (long long)ids[k]);
        hl_strbuf_append_char(out, ']');
      }
      break;
    }
    case 3: {  // SubAxisInfoAttr { pre_size, size } -> (pre)size
      int64_t pre;
      if (!hl_bc_read_svarint(&r, &pre) || !hl_bc_read_svarint(&r, &s)) return serr(c, "bad sub-axis");
      hl_strbuf_appendf(out, "(%lld)%lld", (long long)pre, (long long)s);
      break;
    }
    case 4:  // AxisRefAttr { name: string, optional SubAxisInfoAttr } -> "a" / "a":(1)2
      HL_RETURN_IF_ERROR(print_string(c, &r, out));
      if (!hl_bc_read_varint(&r, &u)) return serr(c, "truncated axis ref");
      if (u & 1) {
        hl_strbuf_append_char(out, ':');
        HL_RETURN_IF_ERROR(print_attr(c, u >> 1, out, depth + 1, NULL));
      }
      break;
    case 5: {  // DimensionShardingAttr { axes, is_closed: bool, optional priority }
      hl_strbuf_append_char(out, '{');
      size_t before = out->length;
      HL_RETURN_IF_ERROR(print_list(c, &r, ", ", out, depth, false));
      if (!hl_bc_read_byte(&r, &b) || !hl_bc_read_varint(&r, &u)) return serr(c, "truncated dimension");
      if (!b) hl_strbuf_append(out, out->length > before ? ", ?" : "?");
      hl_strbuf_append_char(out, '}');
      if (u & 1) hl_strbuf_appendf(out, "p%llu", (unsigned long long)(u >> 1));
      break;
    }
    case 6: case 15: case 17: {  // TensorShardingAttr V1 / V2 / V3
      if (!hl_bc_read_varint(&r, &u)) return serr(c, "truncated sharding");
      if (u < c->bc->attr_count && c->bc->attrs[u].dialect == c->sdy) {  // an inline mesh
        hl_strbuf_append(out, "mesh<");
        HL_RETURN_IF_ERROR(print_attr(c, u, out, depth + 1, NULL));
        hl_strbuf_append_char(out, '>');
      } else {
        HL_RETURN_IF_ERROR(print_builtin_name(c, u, true, out, depth + 1));
      }
      hl_strbuf_append(out, ", [");
      HL_RETURN_IF_ERROR(print_list(c, &r, ", ", out, depth, false));
      hl_strbuf_append_char(out, ']');
      static const char *const kLists[] = {"replicated", "unreduced"};
      for (int k = 0; k < (code == 6 ? 1 : 2); k++) {
        hl_strbuf_t part;
        hl_strbuf_init(&part);
        hl_status_t st = print_list(c, &r, ", ", &part, depth, false);
        if (!st && part.length) hl_strbuf_appendf(out, ", %s={%s}", kLists[k], hl_strbuf_cstr(&part));
        hl_strbuf_deinit(&part);
        HL_RETURN_IF_ERROR(st);
      }
      if (code == 17) {
        if (!hl_bc_read_svarint(&r, &s)) return serr(c, "truncated reduction");
        return serr(c, "sharding with a reduction other than sum is not supported");
      }
      break;
    }
    case 7: case 16:  // TensorShardingPerValueAttr { Array<TensorShardingAttr> }
      hl_strbuf_append_char(out, '[');
      HL_RETURN_IF_ERROR(print_list(c, &r, ", ", out, depth, true));
      hl_strbuf_append_char(out, ']');
      break;
    case 10: {  // OpShardingRuleAttr
      int64_t sizes[256];
      int n;
      HL_RETURN_IF_ERROR(read_ints(c, &r, sizes, 256, &n));
      HL_RETURN_IF_ERROR(print_mappings(c, &r, out));
      hl_strbuf_append(out, "->");
      HL_RETURN_IF_ERROR(print_mappings(c, &r, out));
      hl_strbuf_append(out, " {");
      for (int k = 0; k < n; k++) {
        if (k) hl_strbuf_append(out, ", ");
        factor_name(k, out);
        hl_strbuf_appendf(out, "=%lld", (long long)sizes[k]);
      }
      hl_strbuf_append_char(out, '}');
      static const char *const kSets[] = {"reduction", "need_replication", "permutation",
                                          "blocked_propagation"};
      for (int k = 0; k < 4; k++) HL_RETURN_IF_ERROR(print_factor_set(c, &r, kSets[k], out));
      if (!hl_bc_read_byte(&r, &b)) return serr(c, "truncated sharding rule");
      if (b) hl_strbuf_append(out, ", custom");
      break;
    }
    default:
      return serr(c, "this kind of Shardy attribute is not supported");
  }
  if (r.p != r.end) return serr(c, "trailing bytes");
  return NULL;
}

hl_status_t hl_sdy_attr_text(const hl_bc_module_t *bc, uint64_t idx, hl_mlir_attr_t *out) {
  sdy_ctx_t c = {bc, UINT32_MAX, UINT32_MAX};
  for (uint32_t i = 0; i < bc->dialect_count; i++) {
    if (strcmp(bc->dialects[i], "sdy") == 0) c.sdy = i;
    if (strcmp(bc->dialects[i], "builtin") == 0) c.builtin = i;
  }
  static const struct { uint64_t code; const char *name; } kNames[] = {
      {0, "sdy.manual_axes"}, {2, "sdy.mesh"}, {6, "sdy.sharding"}, {15, "sdy.sharding"},
      {17, "sdy.sharding"}, {7, "sdy.sharding_per_value"}, {16, "sdy.sharding_per_value"},
      {10, "sdy.op_sharding_rule"},
  };
  hl_strbuf_t text;
  hl_strbuf_init(&text);
  uint64_t code = 0;
  hl_status_t st = print_attr(&c, idx, &text, 0, &code);
  const char *name = NULL;
  for (size_t i = 0; !st && i < sizeof(kNames) / sizeof(kNames[0]); i++)
    if (kNames[i].code == code) name = kNames[i].name;
  if (!st && !name) st = serr(&c, "not an attribute an op carries");
  if (!st && text.failed) st = HL_OOM();
  if (st) {
    hl_strbuf_deinit(&text);
    return st;
  }
  memset(out, 0, sizeof(*out));
  out->kind = HL_MATTR_RAW;
  out->s = hl_strdup(name);
  out->raw_len = text.length;
  out->blob_len = text.length;
  char *owned = hl_strbuf_take(&text);
  if (!out->s || !owned) {
    hl_free(out->s);
    hl_free(owned);
    out->s = NULL;
    return HL_OOM();
  }
  out->raw = owned;
  out->blob = (const uint8_t *)owned;  // the text is owned through blob
  out->blob_owned = true;
  return NULL;
}
