#include "runtime/stablehlo/sharding_attrs.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser.h"

#define SDY_MAX_AXES 16
#define SDY_MAX_DEVICES 4096
#define SDY_MAX_NAME 64

typedef struct sdy_mesh {
  char names[SDY_MAX_AXES][SDY_MAX_NAME];
  int64_t sizes[SDY_MAX_AXES];
  int axis_count;
  int64_t *device_ids;  // owned; NULL: iota
  int64_t device_count;
} sdy_mesh_t;

// One axis (or sub-axis "x":(pre)size) a dimension is split along.
typedef struct sdy_axis_ref {
  int axis;
  int64_t pre, size;
} sdy_axis_ref_t;

// A cursor over Shardy text kept raw by the parser.
typedef struct cursor {
  const char *s;
  size_t n, i;
} cursor_t;

static void skip_ws(cursor_t *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\n' || c->s[c->i] == '\t' || c->s[c->i] == '\r'))
    c->i++;
}

static bool peek(cursor_t *c, char ch) {
  skip_ws(c);
  return c->i < c->n && c->s[c->i] == ch;
}

static bool accept(cursor_t *c, char ch) {
  if (!peek(c, ch)) return false;
  c->i++;
  return true;
}

static bool accept_word(cursor_t *c, const char *w) {
  skip_ws(c);
  size_t len = strlen(w);
  if (c->n - c->i < len || memcmp(c->s + c->i, w, len) != 0) return false;
  c->i += len;
  return true;
}

static hl_status_t expect(cursor_t *c, char ch, const char *what) {
  if (accept(c, ch)) return NULL;
  return HL_INVALID("Shardy %s: expected '%c' at \"%.*s\"", what, ch, (int)(c->n - c->i > 40 ? 40 : c->n - c->i),
                    c->s + c->i);
}

static hl_status_t read_int(cursor_t *c, int64_t *out, const char *what) {
  skip_ws(c);
  char buf[32];
  size_t k = 0;
  while (c->i < c->n && k < sizeof(buf) - 1 && (c->s[c->i] == '-' || (c->s[c->i] >= '0' && c->s[c->i] <= '9')))
    buf[k++] = c->s[c->i++];
  buf[k] = 0;
  if (k == 0 || (k == 1 && buf[0] == '-')) return HL_INVALID("Shardy %s: expected an integer", what);
  *out = strtoll(buf, NULL, 10);
  return NULL;
}

static hl_status_t read_string(cursor_t *c, char *out, const char *what) {
  HL_RETURN_IF_ERROR(expect(c, '"', what));
  size_t k = 0;
  while (c->i < c->n && c->s[c->i] != '"') {
    if (k + 1 >= SDY_MAX_NAME) return HL_UNIMPL("Shardy axis names of more than %d bytes", SDY_MAX_NAME - 1);
    out[k++] = c->s[c->i++];
  }
  out[k] = 0;
  if (c->i >= c->n) return HL_INVALID("Shardy %s: unterminated string", what);
  c->i++;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

// `["x"=2, "y"=4], device_ids=[...]` (also the older form without the brackets).
static hl_status_t parse_mesh_body(cursor_t *c, sdy_mesh_t *m) {
  memset(m, 0, sizeof(*m));
  bool bracket = accept(c, '[');
  while (peek(c, '"')) {
    if (m->axis_count == SDY_MAX_AXES) return HL_UNIMPL("Shardy meshes of more than %d axes", SDY_MAX_AXES);
    HL_RETURN_IF_ERROR(read_string(c, m->names[m->axis_count], "mesh"));
    HL_RETURN_IF_ERROR(expect(c, '=', "mesh"));
    HL_RETURN_IF_ERROR(read_int(c, &m->sizes[m->axis_count], "mesh"));
    if (m->sizes[m->axis_count] < 1) return HL_INVALID("Shardy mesh axis \"%s\" of size %lld", m->names[m->axis_count],
                                                       (long long)m->sizes[m->axis_count]);
    m->axis_count++;
    if (!accept(c, ',')) break;
  }
  if (bracket) HL_RETURN_IF_ERROR(expect(c, ']', "mesh"));
  int64_t total = 1;
  for (int a = 0; a < m->axis_count; a++) {
    total *= m->sizes[a];
    if (total > SDY_MAX_DEVICES) return HL_UNIMPL("Shardy meshes of more than %d devices", SDY_MAX_DEVICES);
  }
  accept(c, ',');
  if (accept_word(c, "device_ids")) {
    HL_RETURN_IF_ERROR(expect(c, '=', "mesh"));
    HL_RETURN_IF_ERROR(expect(c, '[', "mesh"));
    m->device_ids = hl_calloc((size_t)total + 1, sizeof(int64_t));
    if (!m->device_ids) return HL_OOM();
    while (!peek(c, ']')) {
      if (m->device_count == total) return HL_INVALID("Shardy mesh lists more device ids than its %lld devices", (long long)total);
      HL_RETURN_IF_ERROR(read_int(c, &m->device_ids[m->device_count++], "mesh device_ids"));
      if (!accept(c, ',')) break;
    }
    HL_RETURN_IF_ERROR(expect(c, ']', "mesh"));
    if (m->device_count != total)
      return HL_INVALID("Shardy mesh lists %lld device ids for %lld devices", (long long)m->device_count, (long long)total);
  }
  return NULL;
}

static hl_status_t find_mesh(const hl_lower_t *L, const char *name, sdy_mesh_t *m) {
  const hl_mlir_file_t *f = L->file;
  for (int i = 0; i < f->mesh_count; i++) {
    const hl_mlir_op_t *op = &f->meshes[i];
    if (op->item_count < 2 || op->items[0].kind != HL_MATTR_SYMBOL || op->items[1].kind != HL_MATTR_RAW)
      return hl_lower_op_error(L, op, "expected sdy.mesh @name = <...>");
    if (strcmp(op->items[0].s, name) != 0) continue;
    cursor_t c = {op->items[1].raw, op->items[1].raw_len, 0};
    hl_status_t st = parse_mesh_body(&c, m);
    if (!st && (skip_ws(&c), c.i != c.n)) st = HL_INVALID("Shardy mesh: unexpected text after the axes");
    return st ? hl_status_annotate(st, "sdy.mesh @%s", name) : NULL;
  }
  return HL_INVALID("Shardy sharding names mesh @%s, which the module does not define", name);
}

//===----------------------------------------------------------------------===//
// Shardings
//===----------------------------------------------------------------------===//

static hl_status_t axis_ref(cursor_t *c, const sdy_mesh_t *m, sdy_axis_ref_t *r) {
  char name[SDY_MAX_NAME];
  HL_RETURN_IF_ERROR(read_string(c, name, "sharding"));
  r->axis = -1;
  for (int a = 0; a < m->axis_count; a++)
    if (strcmp(m->names[a], name) == 0) r->axis = a;
  if (r->axis < 0) return HL_INVALID("Shardy sharding names axis \"%s\", which its mesh does not have", name);
  r->pre = 1;
  r->size = m->sizes[r->axis];
  if (accept(c, ':')) {  // sub-axis "x":(pre)size
    HL_RETURN_IF_ERROR(expect(c, '(', "sub-axis"));
    HL_RETURN_IF_ERROR(read_int(c, &r->pre, "sub-axis"));
    HL_RETURN_IF_ERROR(expect(c, ')', "sub-axis"));
    HL_RETURN_IF_ERROR(read_int(c, &r->size, "sub-axis"));
    int64_t full = m->sizes[r->axis];
    if (r->pre < 1 || r->size < 1 || full % (r->pre * r->size))
      return HL_INVALID("Shardy sub-axis \"%s\":(%lld)%lld of an axis of size %lld", name, (long long)r->pre,
                        (long long)r->size, (long long)full);
  }
  return NULL;
}

// `{"x", "y"}`, `{}`, `{"x", ?}`, `{?}`, each optionally followed by `pN`.
static hl_status_t dim_refs(cursor_t *c, const sdy_mesh_t *m, sdy_axis_ref_t *refs, int *count) {
  *count = 0;
  HL_RETURN_IF_ERROR(expect(c, '{', "dimension sharding"));
  while (!peek(c, '}')) {
    if (accept(c, '?')) {  // open: taken as closed (only propagation may split it further)
      accept(c, ',');
      continue;
    }
    if (*count == SDY_MAX_AXES) return HL_UNIMPL("a dimension split along more than %d axes", SDY_MAX_AXES);
    HL_RETURN_IF_ERROR(axis_ref(c, m, &refs[(*count)++]));
    if (!accept(c, ',')) break;
  }
  HL_RETURN_IF_ERROR(expect(c, '}', "dimension sharding"));
  skip_ws(c);
  if (c->i < c->n && c->s[c->i] == 'p') {  // priority: steers propagation only
    c->i++;
    int64_t prio;
    HL_RETURN_IF_ERROR(read_int(c, &prio, "priority"));
  }
  return NULL;
}

// `{"x", ...}` after replicated= / unreduced=: the number of axes listed.
static hl_status_t axis_set(cursor_t *c, const sdy_mesh_t *m, int *count) {
  sdy_axis_ref_t refs[SDY_MAX_AXES];
  return dim_refs(c, m, refs, count);
}

// The mesh a sharding starts with: `@name` or an inline `mesh<...>`.
static hl_status_t sharding_mesh(const hl_lower_t *L, cursor_t *c, sdy_mesh_t *m) {
  if (accept(c, '@')) {
    char name[256];
    size_t k = 0;
    if (peek(c, '"')) return HL_UNIMPL("quoted Shardy mesh names");
    while (c->i < c->n && k < sizeof(name) - 1 &&
           (c->s[c->i] == '_' || c->s[c->i] == '.' || c->s[c->i] == '$' || c->s[c->i] == '-' ||
            (c->s[c->i] >= '0' && c->s[c->i] <= '9') || (c->s[c->i] >= 'a' && c->s[c->i] <= 'z') ||
            (c->s[c->i] >= 'A' && c->s[c->i] <= 'Z')))
      name[k++] = c->s[c->i++];
    name[k] = 0;
    return find_mesh(L, name, m);
  }
  if (accept_word(c, "#sdy.mesh") || accept_word(c, "mesh")) {
    HL_RETURN_IF_ERROR(expect(c, '<', "inline mesh"));
    HL_RETURN_IF_ERROR(parse_mesh_body(c, m));
    return expect(c, '>', "inline mesh");
  }
  return HL_INVALID("Shardy sharding: expected @mesh or mesh<...>");
}

// The IR sharding of a tensor of `rank` dimensions from the text inside a
// `#sdy.sharding<...>` (or a bare `<...>`): `@mesh, [dims], replicated={...}`.
static hl_status_t sdy_sharding(const hl_lower_t *L, cursor_t *c, int rank, hl_sharding_t *out) {
  memset(out, 0, sizeof(*out));
  sdy_mesh_t m;
  memset(&m, 0, sizeof(m));
  sdy_axis_ref_t refs[HL_MAX_RANK][SDY_MAX_AXES];
  int ref_count[HL_MAX_RANK] = {0};
  int dims = 0;
  int64_t *devices = NULL, *tiles_of = NULL;
  int *fill = NULL;
  hl_status_t st = sharding_mesh(L, c, &m);
  if (!st) st = expect(c, ',', "sharding");
  if (!st) st = expect(c, '[', "sharding");
  while (!st && !peek(c, ']')) {
    if (dims == HL_MAX_RANK) {
      st = HL_UNIMPL("Shardy shardings of more than %d dimensions", HL_MAX_RANK);
      break;
    }
    st = dim_refs(c, &m, refs[dims], &ref_count[dims]);
    dims++;
    if (!st && !accept(c, ',')) break;
  }
  if (!st) st = expect(c, ']', "sharding");
  while (!st && accept(c, ',')) {
    int n = 0;
    if (accept_word(c, "replicated")) {
      st = expect(c, '=', "sharding");
      if (!st) st = axis_set(c, &m, &n);
    } else if (accept_word(c, "unreduced")) {
      st = expect(c, '=', "sharding");
      if (!st) st = axis_set(c, &m, &n);
      if (!st && n) st = HL_UNIMPL("Shardy shardings with unreduced axes (partial sums)");
    } else {
      st = HL_INVALID("Shardy sharding: unexpected text \"%.*s\"", (int)(c->n - c->i > 30 ? 30 : c->n - c->i), c->s + c->i);
    }
  }
  if (!st && (skip_ws(c), c->i != c->n)) st = HL_INVALID("Shardy sharding: unexpected text after it");
  if (!st && dims != rank)
    st = HL_INVALID("Shardy sharding has %d dimensions for a tensor of rank %d", dims, rank);
  int64_t total = 1, tile_total = 1, tiles[HL_MAX_RANK];
  for (int a = 0; a < m.axis_count; a++) total *= m.sizes[a];
  for (int d = 0; !st && d < dims; d++) {
    tiles[d] = 1;
    for (int k = 0; k < ref_count[d]; k++) tiles[d] *= refs[d][k].size;
    tile_total *= tiles[d];
  }
  if (st) goto done;
  if (m.axis_count == 0 && m.device_count == 1) {  // maximal mesh: one device holds everything
    out->type = HL_SHARDING_MAXIMAL;
    st = hl_i64_list_set(&out->tile_assignment_devices, &m.device_ids[0], 1);
    goto done;
  }
  if (tile_total == 1) {
    out->type = HL_SHARDING_REPLICATED;
    goto done;
  }
  if (total % tile_total) {
    st = HL_INVALID("Shardy sharding splits into %lld tiles on a mesh of %lld devices", (long long)tile_total,
                    (long long)total);
    goto done;
  }
  int64_t repl = total / tile_total;
  devices = hl_calloc((size_t)total, sizeof(int64_t));
  fill = hl_calloc((size_t)tile_total, sizeof(int));
  tiles_of = hl_calloc((size_t)rank + 2, sizeof(int64_t));
  if (!devices || !fill || !tiles_of) {
    st = HL_OOM();
    goto done;
  }
  // Walk the mesh positions row-major; each device lands in its tile's next
  // replication slot.
  for (int64_t pos = 0; pos < total; pos++) {
    int64_t coord[SDY_MAX_AXES], rest = pos;
    for (int a = m.axis_count - 1; a >= 0; a--) {
      coord[a] = rest % m.sizes[a];
      rest /= m.sizes[a];
    }
    int64_t t = 0;
    for (int d = 0; d < dims; d++) {
      int64_t idx = 0;
      for (int k = 0; k < ref_count[d]; k++) {
        const sdy_axis_ref_t *r = &refs[d][k];
        idx = idx * r->size + (coord[r->axis] / r->pre) % r->size;
      }
      t = t * tiles[d] + idx;
    }
    if (fill[t] == repl) {
      st = HL_INVALID("Shardy sharding uses a mesh axis twice");
      goto done;
    }
    devices[t * repl + fill[t]++] = m.device_ids ? m.device_ids[pos] : pos;
  }
  out->type = HL_SHARDING_OTHER;
  for (int d = 0; d < dims; d++) tiles_of[d] = tiles[d];
  tiles_of[dims] = repl;
  out->replicate_on_last_tile_dim = repl > 1;
  st = hl_i64_list_set(&out->tile_assignment_dimensions, tiles_of, dims + (repl > 1));
  if (!st) st = hl_i64_list_set(&out->tile_assignment_devices, devices, (int)total);
done:
  hl_free(devices);
  hl_free(fill);
  hl_free(tiles_of);
  hl_free(m.device_ids);
  if (st) hl_sharding_deinit(out);
  return st;
}

// The `<...>` groups of a list `[<...>, <...>]` (per-value shardings):
// *out_count of them, each as a cursor over its inside.
static hl_status_t split_groups(cursor_t *c, cursor_t *groups, int max, int *out_count) {
  *out_count = 0;
  HL_RETURN_IF_ERROR(expect(c, '[', "sharding list"));
  while (!peek(c, ']')) {
    HL_RETURN_IF_ERROR(expect(c, '<', "sharding list"));
    size_t start = c->i;
    int depth = 1;
    while (c->i < c->n && depth) {
      char ch = c->s[c->i];
      if (ch == '"') {
        const char *q = memchr(c->s + c->i + 1, '"', c->n - c->i - 1);
        c->i = q ? (size_t)(q - c->s) + 1 : c->n;
        continue;
      }
      if (ch == '<') depth++;
      if (ch == '>') depth--;
      c->i++;
    }
    if (depth) return HL_INVALID("Shardy sharding list: unterminated '<'");
    if (*out_count == max) return HL_UNIMPL("more than %d values with Shardy shardings", max);
    groups[(*out_count)++] = (cursor_t){c->s + start, c->i - 1 - start, 0};
    if (!accept(c, ',')) break;
  }
  return expect(c, ']', "sharding list");
}

static hl_status_t set_sharding(hl_instruction_t *inst, hl_sharding_t *s) {
  hl_sharding_t *h = hl_calloc(1, sizeof(*h));
  if (!h) {
    hl_sharding_deinit(s);
    return HL_OOM();
  }
  *h = *s;
  if (inst->attrs.sharding) {
    hl_sharding_deinit(inst->attrs.sharding);
    hl_free(inst->attrs.sharding);
  }
  inst->attrs.sharding = h;
  return NULL;
}

// Shardings of `count` values with shapes `shapes` from a list of `<...>`
// groups; a tuple sharding when the instruction is tuple-shaped.
static hl_status_t sharding_from_groups(const hl_lower_t *L, cursor_t *groups, int count, const hl_shape_t *shape,
                                        hl_sharding_t *out) {
  memset(out, 0, sizeof(*out));
  bool tuple = hl_shape_is_tuple(shape);
  if (!tuple) {
    if (count != 1) return HL_INVALID("%d Shardy shardings for one value", count);
    return sdy_sharding(L, &groups[0], shape->rank, out);
  }
  if (count != shape->tuple_count)
    return HL_INVALID("%d Shardy shardings for %d values", count, shape->tuple_count);
  out->type = HL_SHARDING_TUPLE;
  out->tuple_shardings = hl_calloc((size_t)count + 1, sizeof(hl_sharding_t));
  if (!out->tuple_shardings) return HL_OOM();
  out->tuple_count = count;
  for (int k = 0; k < count; k++) {
    if (hl_shape_is_tuple(&shape->tuple[k])) return HL_UNIMPL("Shardy shardings of nested tuples");
    HL_RETURN_IF_ERROR(sdy_sharding(L, &groups[k], shape->tuple[k].rank, &out->tuple_shardings[k]));
  }
  return NULL;
}

// The sharding an attribute value gives a value of `shape`: an mhlo.sharding
// string or a Shardy sharding. *found false when `a` is neither.
static hl_status_t sharding_of_attr(const hl_lower_t *L, const hl_mlir_attr_t *a, const hl_shape_t *shape,
                                    hl_sharding_t *out, bool *found) {
  memset(out, 0, sizeof(*out));
  *found = false;
  if (!a) return NULL;
  if (a->kind == HL_MATTR_STRING) {
    if (a->s_len == 0) return NULL;  // mhlo.sharding = "": none (JAX's older exports)
    *found = true;
    hl_status_t st = hl_parse_sharding(a->s, out);
    return st ? hl_status_annotate(st, "mhlo.sharding \"%s\"", a->s) : NULL;
  }
  if (a->kind != HL_MATTR_RAW || !a->s) return NULL;
  *found = true;
  cursor_t c = {a->raw, a->raw_len, 0};
  if (strcmp(a->s, "sdy.sharding") == 0) {
    if (hl_shape_is_tuple(shape)) return HL_INVALID("a single Shardy sharding for a tuple of values");
    return sdy_sharding(L, &c, shape->rank, out);
  }
  if (strcmp(a->s, "sdy.sharding_per_value") == 0) {
    cursor_t groups[64];
    int count;
    HL_RETURN_IF_ERROR(split_groups(&c, groups, 64, &count));
    return sharding_from_groups(L, groups, count, shape, out);
  }
  *found = false;
  return NULL;
}

hl_status_t hl_lower_op_sharding(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(op, "mhlo.sharding");
  if (!a) a = hl_mlir_op_attr(op, "sdy.sharding");
  if (!a) return NULL;
  hl_sharding_t s;
  bool found;
  hl_status_t st = sharding_of_attr(L, a, &inst->shape, &s, &found);
  if (st) {
    hl_sharding_deinit(&s);
    hl_status_t e = hl_lower_op_error(L, op, "%s", hl_status_message(st));
    hl_status_free(st);
    return e;
  }
  return found ? set_sharding(inst, &s) : NULL;
}

//===----------------------------------------------------------------------===//
// Entry arguments and results
//===----------------------------------------------------------------------===//

static const hl_mlir_attr_t *dict_sharding(const hl_mlir_attr_t *dict) {
  if (!dict || dict->kind != HL_MATTR_DICT) return NULL;
  const hl_mlir_attr_t *a = hl_mlir_attr_member(dict, "mhlo.sharding");
  return a ? a : hl_mlir_attr_member(dict, "sdy.sharding");
}

static hl_status_t error_at(const hl_lower_t *L, const hl_mlir_op_t *fn, hl_status_t st, const char *what, int k) {
  hl_status_t e = hl_lower_op_error(L, fn, "%s %d of @%s: %s", what, k, fn->symbol, hl_status_message(st));
  hl_status_free(st);
  return e;
}

hl_status_t hl_lower_entry_shardings(hl_lower_t *L) {
  hl_computation_t *c = L->module->entry;
  const hl_mlir_op_t *fn = NULL;
  for (int i = 0; i < L->func_count; i++)
    if (L->funcs[i].computation == c) fn = L->funcs[i].op;
  if (!fn) return NULL;  // several entry candidates: no signature of its own
  for (int i = 0; fn->arg_attrs && i < fn->operand_type_count && i < c->parameter_count; i++) {
    hl_sharding_t s;
    bool found;
    hl_instruction_t *p = c->parameters[i];
    hl_status_t st = sharding_of_attr(L, dict_sharding(&fn->arg_attrs[i]), &p->shape, &s, &found);
    if (st) return error_at(L, fn, st, "argument", i);
    if (found) HL_RETURN_IF_ERROR(set_sharding(p, &s));
  }
  int nres = fn->result_type_count;
  bool any = false;
  for (int k = 0; fn->res_attrs && k < nres; k++) any |= dict_sharding(&fn->res_attrs[k]) != NULL;
  if (!any) return NULL;
  hl_sharding_t res[64];
  if (nres > 64) return hl_lower_op_error(L, fn, "has more than 64 results with shardings");
  memset(res, 0, sizeof(res));
  hl_status_t st = NULL;
  for (int k = 0; k < nres && !st; k++) {
    bool found;
    st = sharding_of_attr(L, dict_sharding(&fn->res_attrs[k]), &fn->result_types[k], &res[k], &found);
    if (st) st = error_at(L, fn, st, "result", k);
    else if (!found) res[k].type = HL_SHARDING_REPLICATED;  // a result without an annotation
  }
  hl_instruction_t *root = c->root;
  if (!st && nres == 1 && (root->opcode == HL_OP_PARAMETER || root->attrs.sharding)) {
    // The returned value has its own sharding: the result's goes on a copy.
    st = hl_lower_add(L, c, fn, HL_OP_COPY, &root->shape, &root, 1, &c->root);
    root = c->root;
  }
  if (!st && nres == 1) {
    st = set_sharding(root, &res[0]);
    memset(&res[0], 0, sizeof(res[0]));
  } else if (!st) {
    hl_sharding_t t;
    memset(&t, 0, sizeof(t));
    t.type = HL_SHARDING_TUPLE;
    t.tuple_shardings = hl_calloc((size_t)nres, sizeof(hl_sharding_t));
    if (!t.tuple_shardings) {
      st = HL_OOM();
    } else {
      memcpy(t.tuple_shardings, res, (size_t)nres * sizeof(hl_sharding_t));
      memset(res, 0, sizeof(res));
      t.tuple_count = nres;
      st = set_sharding(root, &t);
    }
  }
  for (int k = 0; k < nres; k++) hl_sharding_deinit(&res[k]);
  return st;
}

//===----------------------------------------------------------------------===//
// Shardy ops
//===----------------------------------------------------------------------===//

static hl_status_t add_custom_call(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op, const char *target,
                                   const hl_shape_t *shape, hl_instruction_t *operand, hl_sharding_t *s,
                                   hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(hl_lower_add(L, env->computation, op, HL_OP_CUSTOM_CALL, shape, &operand, 1, out));
  (*out)->attrs.custom_call_target = hl_strdup(target);
  if (!(*out)->attrs.custom_call_target) {
    hl_sharding_deinit(s);
    return HL_OOM();
  }
  return set_sharding(*out, s);
}

static hl_status_t manual_sharding(hl_sharding_t *s) {
  memset(s, 0, sizeof(*s));
  s->type = HL_SHARDING_MANUAL;
  return NULL;
}

// The axes of `manual_axes={...}` must be every mesh axis of size > 1:
// manual computations over part of the mesh (manual subgroups) are refused.
static hl_status_t check_full_manual(hl_lower_t *L, const hl_mlir_op_t *op, cursor_t first_sharding) {
  const hl_mlir_attr_t *axes = hl_mlir_op_attr(op, "manual_axes");
  if (!axes || axes->kind != HL_MATTR_RAW) return hl_lower_op_error(L, op, "needs manual_axes={...}");
  sdy_mesh_t m;
  memset(&m, 0, sizeof(m));
  hl_status_t st = sharding_mesh(L, &first_sharding, &m);
  if (st) {
    hl_status_t e = hl_lower_op_error(L, op, "%s", hl_status_message(st));
    hl_status_free(st);
    return e;
  }
  hl_free(m.device_ids);
  bool listed[SDY_MAX_AXES] = {false};
  cursor_t c = {axes->raw, axes->raw_len, 0};
  while (!st && peek(&c, '"')) {
    char name[SDY_MAX_NAME];
    st = read_string(&c, name, "manual_axes");
    for (int a = 0; !st && a < m.axis_count; a++)
      if (strcmp(m.names[a], name) == 0) listed[a] = true;
    accept(&c, ',');
  }
  if (st) {
    hl_status_free(st);
    return hl_lower_op_error(L, op, "has malformed manual_axes");
  }
  for (int a = 0; a < m.axis_count; a++)
    if (m.sizes[a] > 1 && !listed[a])
      return hl_lower_op_error(L, op, "is manual over part of the mesh (axis \"%s\" is not in manual_axes): "
                               "manual subgroups are not partitioned", m.names[a]);
  return NULL;
}

static hl_status_t read_groups(hl_lower_t *L, const hl_mlir_op_t *op, const char *name, cursor_t *groups, int max,
                               int *count) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(op, name);
  if (!a || a->kind != HL_MATTR_RAW) return hl_lower_op_error(L, op, "needs %s=[...]", name);
  // The parser kept the inside of the brackets: put them back for split_groups.
  size_t len = a->raw_len + 2;
  char *buf = hl_malloc(len + 1);
  if (!buf) return HL_OOM();
  buf[0] = '[';
  memcpy(buf + 1, a->raw, a->raw_len);
  buf[len - 1] = ']';
  buf[len] = 0;
  // The groups point into the source text: re-scan there by offset.
  cursor_t c = {buf, len, 0};
  hl_status_t st = split_groups(&c, groups, max, count);
  for (int k = 0; !st && k < *count; k++) groups[k].s = a->raw + (groups[k].s - buf - 1);
  hl_free(buf);
  if (st) {
    hl_status_t e = hl_lower_op_error(L, op, "%s: %s", name, hl_status_message(st));
    hl_status_free(st);
    return e;
  }
  return NULL;
}

// sdy.manual_computation: per operand a Sharding custom-call (its in
// sharding) and SPMDFullToShardShape to the body's argument shape; a call of
// the body; per result a {manual} Sharding custom-call and
// SPMDShardToFullShape to its out sharding (XLA's shard_map form).
static hl_status_t lower_manual_computation(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                            hl_instruction_t *const *operands) {
  cursor_t in[64], outs[64];
  int nin, nout;
  HL_RETURN_IF_ERROR(read_groups(L, op, "in_shardings", in, 64, &nin));
  HL_RETURN_IF_ERROR(read_groups(L, op, "out_shardings", outs, 64, &nout));
  if (nin != op->operand_count || nout != op->result_count || op->result_type_count != op->result_count)
    return hl_lower_op_error(L, op, "has %d operands and %d results but %d in and %d out shardings",
                             op->operand_count, op->result_count, nin, nout);
  if (op->region_count != 1 || op->regions[0].blocks[0].arg_count != nin)
    return hl_lower_op_error(L, op, "needs a body whose block takes one argument per operand");
  if (nin + nout == 0) return hl_lower_op_error(L, op, "has neither operands nor results");
  HL_RETURN_IF_ERROR(check_full_manual(L, op, nin ? in[0] : outs[0]));
  hl_computation_t *body;
  HL_RETURN_IF_ERROR(hl_lower_scalar_region(L, env, op, 0, &body));
  hl_instruction_t *args[64];
  const hl_mlir_block_t *b = &op->regions[0].blocks[0];
  for (int k = 0; k < nin; k++) {
    hl_sharding_t s, man;
    hl_status_t st = sdy_sharding(L, &in[k], operands[k]->shape.rank, &s);
    if (st) return error_at(L, op, st, "in sharding", k);
    hl_instruction_t *sh;
    HL_RETURN_IF_ERROR(add_custom_call(L, env, op, "Sharding", &operands[k]->shape, operands[k], &s, &sh));
    manual_sharding(&man);
    HL_RETURN_IF_ERROR(add_custom_call(L, env, op, "SPMDFullToShardShape", &b->arg_types[k], sh, &man, &args[k]));
  }
  hl_instruction_t *call;
  HL_RETURN_IF_ERROR(hl_lower_add(L, env->computation, op, HL_OP_CALL, &body->root->shape, args, nin, &call));
  HL_RETURN_IF_ERROR(hl_instruction_set_called(call, &body, 1));
  hl_instruction_t *res[64];
  for (int k = 0; k < nout; k++) {
    hl_instruction_t *v = call;
    if (nout > 1) HL_RETURN_IF_ERROR(hl_lower_add_gte(L, env->computation, op, call, k, &v));
    hl_sharding_t s, man;
    hl_status_t st = sdy_sharding(L, &outs[k], op->result_types[k].rank, &s);
    if (st) return error_at(L, op, st, "out sharding", k);
    manual_sharding(&man);
    hl_instruction_t *m;
    st = add_custom_call(L, env, op, "Sharding", &v->shape, v, &man, &m);
    if (st) {
      hl_sharding_deinit(&s);
      return st;
    }
    HL_RETURN_IF_ERROR(add_custom_call(L, env, op, "SPMDShardToFullShape", &op->result_types[k], m, &s, &res[k]));
  }
  return hl_lower_bind_results(L, env, op, res, nout);
}

hl_status_t hl_lower_sdy_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                            hl_instruction_t *const *operands, bool *out_handled) {
  *out_handled = false;
  const char *n = op->name;
  if (strncmp(n, "sdy.", 4) != 0 || strcmp(n, "sdy.constant") == 0) return NULL;  // constant: lower_legacy.c
  *out_handled = true;
  if (strcmp(n, "sdy.sharding_constraint") == 0 || strcmp(n, "sdy.reshard") == 0) {
    if (op->operand_count != 1 || op->item_count < 1 || op->items[0].kind != HL_MATTR_RAW)
      return hl_lower_op_error(L, op, "needs one operand and a sharding <@mesh, [...]>");
    cursor_t c = {op->items[0].raw, op->items[0].raw_len, 0};
    hl_sharding_t s;
    hl_status_t st = sdy_sharding(L, &c, operands[0]->shape.rank, &s);
    if (st) return error_at(L, op, st, "sharding of operand", 0);
    hl_instruction_t *out;
    HL_RETURN_IF_ERROR(add_custom_call(L, env, op, "Sharding", &operands[0]->shape, operands[0], &s, &out));
    return hl_lower_bind_results(L, env, op, &out, 1);
  }
  if (strcmp(n, "sdy.manual_computation") == 0) return lower_manual_computation(L, env, op, operands);
  return hl_lower_op_error(L, op, "is not supported (Shardy ops: sharding_constraint, reshard, "
                           "manual_computation)");
}
