// The MLIR bytecode container (mlir_bytecode.h). The structure follows
// llvm-project mlir/lib/Bytecode/Reader/BytecodeReader.cpp: sections first,
// then strings, properties, dialects and op names, the attribute/type offset
// table, and the IR section read depth-first (an op's regions follow it
// directly; isolated regions sit in a nested section from version 2).
#include "runtime/bytecode/mlir_bytecode.h"

#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"

// Versions that changed the encoding (BytecodeReader.cpp's names).
enum {
  kDialectVersioning = 1,
  kLazyLoading = 2,
  kUseListOrdering = 3,
  kElideUnknownBlockArgLocation = 4,
  kNativePropertiesEncoding = 5,
};
enum {
  kString = 0, kDialect = 1, kAttrType = 2, kAttrTypeOffset = 3, kIR = 4,
  kResource = 5, kResourceOffset = 6, kDialectVersions = 7, kProperties = 8, kNumSections = 9,
};
enum {
  kHasAttrs = 0x01, kHasResults = 0x02, kHasOperands = 0x04, kHasSuccessors = 0x08,
  kHasInlineRegions = 0x10, kHasUseListOrders = 0x20, kHasProperties = 0x40,
};
// Regions nest at most this deep (a hostile file cannot exhaust the stack).
enum { kMaxDepth = 200 };

bool hl_bc_looks_like(const uint8_t *d, size_t n) {
  return n >= 4 && d[0] == 'M' && d[1] == 'L' && d[2] == 0xEF && d[3] == 'R';
}

bool hl_bc_read_byte(hl_bc_reader_t *r, uint8_t *out) {
  if (r->p >= r->end) return false;
  *out = *r->p++;
  return true;
}

bool hl_bc_read_bytes(hl_bc_reader_t *r, size_t n, const uint8_t **out) {
  if (n > (size_t)(r->end - r->p)) return false;
  *out = r->p;
  r->p += n;
  return true;
}

// PrefixVarInt: the count of trailing zero bits of the first byte is the
// number of bytes that follow; 0x00 means 8 whole bytes follow.
bool hl_bc_read_varint(hl_bc_reader_t *r, uint64_t *out) {
  uint8_t first;
  if (!hl_bc_read_byte(r, &first)) return false;
  if (first & 1) {
    *out = first >> 1;
    return true;
  }
  int extra = first == 0 ? 8 : __builtin_ctz(first);
  const uint8_t *b;
  if (!hl_bc_read_bytes(r, (size_t)extra, &b)) return false;
  uint64_t v = 0;
  for (int i = extra - 1; i >= 0; i--) v = v << 8 | b[i];
  if (first == 0) {
    *out = v;
  } else {
    v = v << 8 | first;
    *out = v >> (extra + 1);
  }
  return true;
}

bool hl_bc_read_svarint(hl_bc_reader_t *r, int64_t *out) {
  uint64_t u;
  if (!hl_bc_read_varint(r, &u)) return false;
  *out = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
  return true;
}

typedef struct ctx {
  hl_bc_module_t *m;
  const uint8_t *base;  // start of the file, for offsets in messages
  size_t size;          // of the file: every value takes at least a byte of it
  // Value scopes: ids[k] is the file-wide value number of slot k of the
  // innermost isolated scope; scope_starts marks where each scope begins.
  uint32_t *ids;
  size_t id_count, id_cap;
  size_t scope_start;
  int depth;
} ctx_t;

static hl_status_t bc_error(const ctx_t *c, const hl_bc_reader_t *r, const char *what) {
  long off = r && c->base ? (long)(r->p - c->base) : -1;
  return HL_INVALID("%s: MLIR bytecode: %s (at byte offset %ld)", c->m->path, what, off);
}

#define NEED(expr, what)                             \
  do {                                               \
    if (!(expr)) return bc_error(c, r, (what));      \
  } while (0)

// A count of items that each take at least one byte must fit in what is left.
static bool count_fits(const hl_bc_reader_t *r, uint64_t n) {
  return n <= (uint64_t)(r->end - r->p) && n < (1u << 30);
}

static hl_status_t read_section(ctx_t *c, hl_bc_reader_t *r, uint8_t *id, hl_bc_bytes_t *data) {
  uint8_t id_align;
  uint64_t length;
  NEED(hl_bc_read_byte(r, &id_align) && hl_bc_read_varint(r, &length), "truncated section header");
  *id = id_align & 0x7f;
  NEED(*id < kNumSections, "unknown section id");
  if (id_align & 0x80) {
    uint64_t alignment;
    NEED(hl_bc_read_varint(r, &alignment), "truncated section alignment");
    NEED(alignment && !(alignment & (alignment - 1)) && alignment <= 4096,
         "section alignment is not a power of two up to 4096");
    // Padding bytes (0xCB) up to the alignment, counted from the file start
    // (MLIR aligns real addresses; the writer aligned the file start).
    while ((size_t)(r->p - c->base) & (alignment - 1)) {
      uint8_t pad;
      NEED(hl_bc_read_byte(r, &pad) && pad == 0xCB, "bad section alignment padding");
    }
  }
  NEED(length <= (uint64_t)(r->end - r->p), "section runs past the end of its parent");
  data->data = r->p;
  data->size = (size_t)length;
  r->p += length;
  return NULL;
}

static hl_status_t read_strings(ctx_t *c, hl_bc_bytes_t sec) {
  hl_bc_module_t *m = c->m;
  hl_bc_reader_t rr = {sec.data, sec.data + sec.size}, *r = &rr;
  uint64_t n;
  NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad string count");
  m->strings = hl_calloc(n + 1, sizeof(char *));
  m->string_lengths = hl_calloc(n + 1, sizeof(uint32_t));
  if (!m->strings || !m->string_lengths) return HL_OOM();
  m->string_count = (uint32_t)n;
  // Sizes (each counting its NUL) come in reverse order; the data ends the section.
  size_t end = sec.size;
  for (uint64_t k = n; k-- > 0;) {
    uint64_t len;
    NEED(hl_bc_read_varint(r, &len), "truncated string sizes");
    NEED(len >= 1 && len <= end, "string size exceeds the section");
    size_t off = end - (size_t)len;
    NEED(sec.data[off + len - 1] == 0, "string is not NUL-terminated");
    m->strings[k] = (const char *)sec.data + off;
    m->string_lengths[k] = (uint32_t)(len - 1);
    end = off;
  }
  NEED((size_t)(r->p - sec.data) == end, "trailing data between string sizes and strings");
  return NULL;
}

static hl_status_t read_string_ref(ctx_t *c, hl_bc_reader_t *r, uint64_t idx, const char **out) {
  NEED(idx < c->m->string_count, "string index out of range");
  *out = c->m->strings[idx];
  return NULL;
}

static hl_status_t read_dialects(ctx_t *c, hl_bc_bytes_t sec) {
  hl_bc_module_t *m = c->m;
  hl_bc_reader_t rr = {sec.data, sec.data + sec.size}, *r = &rr;
  uint64_t n;
  NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad dialect count");
  m->dialects = hl_calloc(n + 1, sizeof(char *));
  m->dialect_versions = hl_calloc(n + 1, sizeof(hl_bc_bytes_t));
  if (!m->dialects || !m->dialect_versions) return HL_OOM();
  m->dialect_count = (uint32_t)n;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t v;
    NEED(hl_bc_read_varint(r, &v), "truncated dialect entry");
    bool versioned = false;
    if (m->version >= kDialectVersioning) {
      versioned = v & 1;
      v >>= 1;
    }
    HL_RETURN_IF_ERROR(read_string_ref(c, r, v, &m->dialects[i]));
    if (versioned) {
      uint8_t id = 0;
      HL_RETURN_IF_ERROR(read_section(c, r, &id, &m->dialect_versions[i]));
      NEED(id == kDialectVersions, "expected a dialect version section");
    }
  }
  if (m->version >= kElideUnknownBlockArgLocation) {
    uint64_t num_ops;
    NEED(hl_bc_read_varint(r, &num_ops), "truncated op name count");
  }
  size_t cap = 0;
  while (r->p < r->end) {
    uint64_t dialect, count;
    NEED(hl_bc_read_varint(r, &dialect) && dialect < m->dialect_count, "bad op name dialect");
    NEED(hl_bc_read_varint(r, &count) && count_fits(r, count), "bad op name count");
    for (uint64_t k = 0; k < count; k++) {
      uint64_t v;
      NEED(hl_bc_read_varint(r, &v), "truncated op name");
      bool registered = true;
      if (m->version >= kNativePropertiesEncoding) {
        registered = v & 1;
        v >>= 1;
      }
      if (m->op_name_count == cap) {
        cap = cap ? 2 * cap : 32;
        hl_bc_op_name_t *g = hl_realloc(m->op_names, cap * sizeof(*g));
        if (!g) return HL_OOM();
        m->op_names = g;
      }
      hl_bc_op_name_t *on = &m->op_names[m->op_name_count++];
      on->dialect = (uint32_t)dialect;
      on->registered = registered;
      HL_RETURN_IF_ERROR(read_string_ref(c, r, v, &on->name));
    }
  }
  return NULL;
}

static hl_status_t read_attr_type_offsets(ctx_t *c, hl_bc_bytes_t data, hl_bc_bytes_t sec) {
  hl_bc_module_t *m = c->m;
  hl_bc_reader_t rr = {sec.data, sec.data + sec.size}, *r = &rr;
  uint64_t na, nt;
  NEED(hl_bc_read_varint(r, &na) && hl_bc_read_varint(r, &nt), "truncated attribute/type counts");
  NEED(na <= data.size && nt <= data.size && na + nt <= data.size + 1 && na < (1u << 30),
       "more attributes and types than bytes to hold them");
  m->attrs = hl_calloc(na + 1, sizeof(hl_bc_entry_t));
  m->types = hl_calloc(nt + 1, sizeof(hl_bc_entry_t));
  if (!m->attrs || !m->types) return HL_OOM();
  m->attr_count = (uint32_t)na;
  m->type_count = (uint32_t)nt;
  size_t offset = 0;
  for (int kind = 0; kind < 2; kind++) {
    hl_bc_entry_t *entries = kind ? m->types : m->attrs;
    uint64_t total = kind ? nt : na, done = 0;
    while (done < total) {
      uint64_t dialect, count;
      NEED(hl_bc_read_varint(r, &dialect) && dialect < m->dialect_count, "bad attribute/type dialect");
      NEED(hl_bc_read_varint(r, &count) && count <= total - done, "bad attribute/type group size");
      NEED(count > 0, "empty attribute/type group");
      for (uint64_t k = 0; k < count; k++) {
        uint64_t v;
        NEED(hl_bc_read_varint(r, &v), "truncated attribute/type offset");
        uint64_t size = v >> 1;
        NEED(offset <= data.size && size <= data.size - offset,
             "attribute/type entry points past the end of its section");
        hl_bc_entry_t *e = &entries[done++];
        e->dialect = (uint32_t)dialect;
        e->custom = v & 1;
        e->bytes.data = data.data + offset;
        e->bytes.size = (size_t)size;
        offset += (size_t)size;
      }
    }
  }
  NEED(r->p == r->end, "trailing data in the attribute/type offset section");
  return NULL;
}

static hl_status_t read_properties_section(ctx_t *c, hl_bc_bytes_t sec) {
  hl_bc_module_t *m = c->m;
  if (sec.size == 0) return NULL;
  hl_bc_reader_t rr = {sec.data, sec.data + sec.size}, *r = &rr;
  uint64_t n;
  NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad properties count");
  m->properties = hl_calloc(n + 1, sizeof(hl_bc_bytes_t));
  if (!m->properties) return HL_OOM();
  m->property_count = (uint32_t)n;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t size;
    NEED(hl_bc_read_varint(r, &size), "truncated properties entry");
    NEED(hl_bc_read_bytes(r, (size_t)size, &m->properties[i].data) && size <= sec.size,
         "properties entry runs past its section");
    m->properties[i].size = (size_t)size;
  }
  NEED(r->p == r->end, "trailing data in the properties section");
  return NULL;
}

// ---- IR ----

static hl_status_t new_values(ctx_t *c, hl_bc_reader_t *r, uint64_t n) {
  hl_bc_module_t *m = c->m;
  NEED(n <= (uint64_t)(r->end - r->p) && m->value_count + n <= c->size, "more values than bytes");
  hl_bc_value_t *v = hl_realloc(m->values, (m->value_count + n + 1) * sizeof(*v));
  if (!v) return HL_OOM();
  m->values = v;
  memset(&v[m->value_count], 0, (size_t)n * sizeof(*v));
  if (c->id_count + n > c->id_cap) {
    size_t cap = (c->id_count + n) * 2 + 16;
    uint32_t *ids = hl_realloc(c->ids, cap * sizeof(uint32_t));
    if (!ids) return HL_OOM();
    c->ids = ids;
    c->id_cap = cap;
  }
  for (uint64_t k = 0; k < n; k++) c->ids[c->id_count++] = m->value_count++;
  return NULL;
}

// Region-local definition cursor: the next slot to define within the
// innermost region's reserved range.
typedef struct region_state {
  size_t next_slot, end_slot;
  bool has_values;
} region_state_t;

static hl_status_t define(ctx_t *c, hl_bc_reader_t *r, region_state_t *rs, uint64_t n,
                          uint32_t *first, bool group) {
  NEED(rs->next_slot + n <= rs->end_slot, "value defined outside its region's range");
  *first = c->ids[rs->next_slot];
  for (uint64_t k = 0; k < n; k++) {
    uint32_t id = c->ids[rs->next_slot + k];
    hl_bc_value_t *v = &c->m->values[id];
    v->defined = true;
    v->group = group ? *first : id;
    v->index = group ? (uint32_t)k : 0;
  }
  rs->next_slot += (size_t)n;
  return NULL;
}

static hl_status_t read_use_list(ctx_t *c, hl_bc_reader_t *r, uint64_t range) {
  uint64_t count = 1;
  if (range > 1) NEED(hl_bc_read_varint(r, &count) && count_fits(r, count), "bad use-list count");
  for (uint64_t i = 0; i < count; i++) {
    uint64_t idx = 0, n;
    if (range > 1) NEED(hl_bc_read_varint(r, &idx), "truncated use-list");
    NEED(hl_bc_read_varint(r, &n) && count_fits(r, n >> 1), "bad use-list size");
    for (uint64_t k = 0; k < (n >> 1); k++) {
      uint64_t skip;
      NEED(hl_bc_read_varint(r, &skip), "truncated use-list");
    }
  }
  return NULL;
}

static hl_status_t read_block_header(ctx_t *c, hl_bc_reader_t *r, region_state_t *rs,
                                     hl_bc_block_t *b, uint64_t *num_ops) {
  hl_bc_module_t *m = c->m;
  uint64_t v;
  NEED(hl_bc_read_varint(r, &v), "truncated block header");
  *num_ops = v >> 1;
  NEED(count_fits(r, *num_ops) || *num_ops == 0, "block op count exceeds the data");
  bool has_args = v & 1;
  if (has_args) {
    uint64_t n;
    NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad block argument count");
    b->arg_types = hl_calloc(n + 1, sizeof(uint64_t));
    b->arg_locations = hl_calloc(n + 1, sizeof(int64_t));
    if (!b->arg_types || !b->arg_locations) return HL_OOM();
    b->arg_count = (int)n;
    for (uint64_t k = 0; k < n; k++) {
      uint64_t t, loc;
      b->arg_locations[k] = -1;
      if (m->version >= kElideUnknownBlockArgLocation) {
        NEED(hl_bc_read_varint(r, &t), "truncated block argument");
        if (t & 1) {
          NEED(hl_bc_read_varint(r, &loc) && loc < m->attr_count, "bad block argument location");
          b->arg_locations[k] = (int64_t)loc;
        }
        t >>= 1;
      } else {
        NEED(hl_bc_read_varint(r, &t) && hl_bc_read_varint(r, &loc), "truncated block argument");
        NEED(loc < m->attr_count, "bad block argument location");
        b->arg_locations[k] = (int64_t)loc;
      }
      NEED(t < m->type_count, "block argument type index out of range");
      b->arg_types[k] = t;
    }
    if (n) HL_RETURN_IF_ERROR(define(c, r, rs, n, &b->first_arg, false));
  }
  if (m->version >= kUseListOrdering && has_args) {
    uint8_t has_orders;
    NEED(hl_bc_read_byte(r, &has_orders), "truncated block use-list flag");
    if (has_orders) HL_RETURN_IF_ERROR(read_use_list(c, r, (uint64_t)b->arg_count));
  }
  return NULL;
}

static hl_status_t read_region(ctx_t *c, hl_bc_reader_t *r, hl_bc_region_t *region);

static hl_status_t read_op(ctx_t *c, hl_bc_reader_t *r, region_state_t *rs, hl_bc_op_t *op) {
  hl_bc_module_t *m = c->m;
  uint64_t v;
  uint8_t mask;
  NEED(hl_bc_read_varint(r, &v) && v < m->op_name_count, "bad op name index");
  op->name = (uint32_t)v;
  op->attr_dict = op->properties_attr = -1;
  NEED(hl_bc_read_byte(r, &mask), "truncated op");
  NEED(!(mask & 0x80), "unknown op encoding bits");
  NEED(hl_bc_read_varint(r, &op->location) && op->location < m->attr_count, "bad op location");
  if (mask & kHasAttrs) {
    NEED(hl_bc_read_varint(r, &v) && v < m->attr_count, "bad op attribute dictionary index");
    op->attr_dict = (int64_t)v;
  }
  if (mask & kHasProperties) {
    NEED(m->version >= kNativePropertiesEncoding, "op properties before bytecode version 5");
    op->has_properties = true;
    NEED(hl_bc_read_varint(r, &v), "truncated op properties");
    if (m->op_names[op->name].registered) {
      NEED(v < m->property_count, "op properties index out of range");
      op->properties = m->properties[v];
    } else {
      NEED(v < m->attr_count, "op properties attribute out of range");
      op->properties_are_attr = true;
      op->properties_attr = (int64_t)v;
    }
  }
  if (mask & kHasResults) {
    uint64_t n;
    NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad result count");
    op->result_types = hl_calloc(n + 1, sizeof(uint64_t));
    if (!op->result_types) return HL_OOM();
    op->result_count = (int)n;
    for (uint64_t k = 0; k < n; k++)
      NEED(hl_bc_read_varint(r, &op->result_types[k]) && op->result_types[k] < m->type_count,
           "result type index out of range");
  }
  if (mask & kHasOperands) {
    uint64_t n;
    NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad operand count");
    op->operands = hl_calloc(n + 1, sizeof(uint32_t));
    if (!op->operands) return HL_OOM();
    op->operand_count = (int)n;
    for (uint64_t k = 0; k < n; k++) {
      NEED(hl_bc_read_varint(r, &v), "truncated operand");
      NEED(v < c->id_count - c->scope_start, "operand refers to a value outside its scope");
      op->operands[k] = c->ids[c->scope_start + v];
    }
  }
  if (mask & kHasSuccessors) {
    uint64_t n;
    NEED(hl_bc_read_varint(r, &n) && count_fits(r, n), "bad successor count");
    op->successors = hl_calloc(n + 1, sizeof(uint32_t));
    if (!op->successors) return HL_OOM();
    op->successor_count = (int)n;
    for (uint64_t k = 0; k < n; k++) {
      NEED(hl_bc_read_varint(r, &v) && v < (1u << 30), "bad successor");
      op->successors[k] = (uint32_t)v;
    }
  }
  if (m->version >= kUseListOrdering && (mask & kHasUseListOrders))
    HL_RETURN_IF_ERROR(read_use_list(c, r, (uint64_t)op->result_count));
  uint64_t num_regions = 0;
  if (mask & kHasInlineRegions) {
    NEED(hl_bc_read_varint(r, &v), "truncated region count");
    num_regions = v >> 1;
    op->isolated = v & 1;
    NEED(count_fits(r, num_regions) || num_regions == 0, "region count exceeds the data");
  }
  if (op->result_count && rs->has_values)
    HL_RETURN_IF_ERROR(define(c, r, rs, (uint64_t)op->result_count, &op->first_result, true));
  if (!num_regions) return NULL;
  op->regions = hl_calloc(num_regions + 1, sizeof(hl_bc_region_t));
  if (!op->regions) return HL_OOM();
  op->region_count = (int)num_regions;
  NEED(++c->depth <= kMaxDepth, "regions nest too deeply");
  hl_bc_reader_t sub = *r, *rr = r;
  size_t saved_scope = c->scope_start, saved_ids = c->id_count;
  if (op->isolated) {
    if (m->version >= kLazyLoading) {
      uint8_t id = 0;
      hl_bc_bytes_t data;
      HL_RETURN_IF_ERROR(read_section(c, r, &id, &data));
      NEED(id == kIR, "expected an IR section for an isolated region");
      sub.p = data.data;
      sub.end = data.data + data.size;
      rr = &sub;
    }
    c->scope_start = c->id_count;
  }
  hl_status_t st = NULL;
  for (uint64_t k = 0; !st && k < num_regions; k++) st = read_region(c, rr, &op->regions[k]);
  if (!st && rr == &sub && sub.p != sub.end) st = bc_error(c, &sub, "trailing data in a region section");
  c->scope_start = saved_scope;
  c->id_count = saved_ids;
  c->depth--;
  return st;
}

static hl_status_t read_block_ops(ctx_t *c, hl_bc_reader_t *r, region_state_t *rs,
                                  hl_bc_block_t *b, uint64_t num_ops) {
  b->ops = hl_calloc(num_ops + 1, sizeof(hl_bc_op_t));
  if (!b->ops) return HL_OOM();
  for (uint64_t k = 0; k < num_ops; k++) {
    b->op_count = (int)k + 1;
    HL_RETURN_IF_ERROR(read_op(c, r, rs, &b->ops[k]));
  }
  return NULL;
}

static hl_status_t read_region(ctx_t *c, hl_bc_reader_t *r, hl_bc_region_t *region) {
  uint64_t num_blocks, num_values;
  NEED(hl_bc_read_varint(r, &num_blocks), "truncated region");
  if (num_blocks == 0) return NULL;
  NEED(count_fits(r, num_blocks), "region block count exceeds the data");
  NEED(hl_bc_read_varint(r, &num_values), "truncated region value count");
  region->blocks = hl_calloc(num_blocks + 1, sizeof(hl_bc_block_t));
  if (!region->blocks) return HL_OOM();
  size_t start = c->id_count;
  HL_RETURN_IF_ERROR(new_values(c, r, num_values));
  region_state_t rs = {start, c->id_count, num_values > 0};
  for (uint64_t k = 0; k < num_blocks; k++) {
    region->block_count = (int)k + 1;
    uint64_t num_ops;
    HL_RETURN_IF_ERROR(read_block_header(c, r, &rs, &region->blocks[k], &num_ops));
    HL_RETURN_IF_ERROR(read_block_ops(c, r, &rs, &region->blocks[k], num_ops));
  }
  c->id_count = start;  // the region's values go out of scope
  return NULL;
}

static hl_status_t read_ir(ctx_t *c, hl_bc_bytes_t sec) {
  hl_bc_reader_t rr = {sec.data, sec.data + sec.size}, *r = &rr;
  region_state_t rs = {0, 0, false};
  uint64_t num_ops;
  HL_RETURN_IF_ERROR(read_block_header(c, r, &rs, &c->m->top, &num_ops));
  HL_RETURN_IF_ERROR(read_block_ops(c, r, &rs, &c->m->top, num_ops));
  NEED(r->p == r->end, "trailing data in the IR section");
  for (uint32_t i = 0; i < c->m->value_count; i++)
    if (!c->m->values[i].defined) return bc_error(c, NULL, "an operand refers to a value never defined");
  return NULL;
}

static hl_status_t read_module(const uint8_t *data, size_t size, const char *path,
                               hl_bc_module_t *out) {
  out->path = path;
  ctx_t cc = {out, data, size, NULL, 0, 0, 0, 0}, *c = &cc;
  hl_bc_reader_t rr = {data, data + size}, *r = &rr;
  hl_status_t st = NULL;
  NEED(hl_bc_looks_like(data, size), "missing the magic 'ML\\xEFR'");
  r->p += 4;
  NEED(hl_bc_read_varint(r, &out->version), "truncated version");
  if (out->version > HL_BC_MAX_VERSION)
    return HL_INVALID("%s: MLIR bytecode version %llu is newer than the newest this reader "
                      "knows (%d)", path, (unsigned long long)out->version, HL_BC_MAX_VERSION);
  const uint8_t *nul = memchr(r->p, 0, (size_t)(r->end - r->p));
  NEED(nul, "producer string is not NUL-terminated");
  out->producer = (const char *)r->p;
  r->p = nul + 1;
  hl_bc_bytes_t sections[kNumSections];
  bool present[kNumSections] = {false};
  while (r->p < r->end) {
    uint8_t id = 0;
    hl_bc_bytes_t d;
    HL_RETURN_IF_ERROR(read_section(c, r, &id, &d));
    NEED(!present[id], "a top-level section appears twice");
    present[id] = true;
    sections[id] = d;
  }
  static const char *const kNames[] = {"string", "dialect", "attribute/type",
                                       "attribute/type offset", "IR"};
  for (int i = 0; i <= kIR; i++)
    if (!present[i])
      return HL_INVALID("%s: MLIR bytecode: the %s section is missing", path, kNames[i]);
  if (out->version >= kNativePropertiesEncoding && !present[kProperties])
    return HL_INVALID("%s: MLIR bytecode: the properties section is missing", path);
  st = read_strings(c, sections[kString]);
  if (!st && present[kProperties]) st = read_properties_section(c, sections[kProperties]);
  if (!st) st = read_dialects(c, sections[kDialect]);
  if (!st) st = read_attr_type_offsets(c, sections[kAttrType], sections[kAttrTypeOffset]);
  if (!st) st = read_ir(c, sections[kIR]);
  hl_free(c->ids);
  return st;
}

hl_status_t hl_bc_read(const uint8_t *data, size_t size, const char *path, hl_bc_module_t *out) {
  memset(out, 0, sizeof(*out));
  hl_status_t st = read_module(data, size, path, out);
  if (st) hl_bc_module_deinit(out);
  return st;
}

static void block_deinit(hl_bc_block_t *b);

static void op_deinit(hl_bc_op_t *op) {
  hl_free(op->result_types);
  hl_free(op->operands);
  hl_free(op->successors);
  for (int i = 0; i < op->region_count; i++) {
    for (int k = 0; k < op->regions[i].block_count; k++) block_deinit(&op->regions[i].blocks[k]);
    hl_free(op->regions[i].blocks);
  }
  hl_free(op->regions);
}

static void block_deinit(hl_bc_block_t *b) {
  hl_free(b->arg_types);
  hl_free(b->arg_locations);
  for (int i = 0; i < b->op_count; i++) op_deinit(&b->ops[i]);
  hl_free(b->ops);
}

void hl_bc_module_deinit(hl_bc_module_t *m) {
  if (!m) return;
  hl_free(m->strings);
  hl_free(m->string_lengths);
  hl_free(m->dialects);
  hl_free(m->dialect_versions);
  hl_free(m->op_names);
  hl_free(m->attrs);
  hl_free(m->types);
  hl_free(m->properties);
  block_deinit(&m->top);
  hl_free(m->values);
  memset(m, 0, sizeof(*m));
}

const char *hl_bc_op_full_name(const hl_bc_module_t *m, const hl_bc_op_t *op, char *buf,
                               size_t cap) {
  const hl_bc_op_name_t *n = &m->op_names[op->name];
  snprintf(buf, cap, "%s.%s", m->dialects[n->dialect], n->name);
  return buf;
}
