// MLIR bytecode and VHLO (runtime/bytecode): the container's primitives and
// checks on crafted bytes, and StableHLO's compatibility suite
// (../shared/conformance/stablehlo-vhlo, skipped when absent): every
// artifact reads, the future one is refused naming both versions, and each
// function decoded from `X.mlir.bc` matches its text twin `X.mlir` op by op
// (names, operands, result types, regions, attributes).
// hl-test-libs: hl_bytecode hl_stablehlo hl_text hl_ir hl_base
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/bytecode/jax_export.h"
#include "runtime/bytecode/mlir_bytecode.h"
#include "runtime/bytecode/vhlo.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/base/strbuf.h"
#include "runtime/stablehlo/stablehlo.h"
#include "runtime/text/hlo_printer.h"
#include "test_util.h"

#define VHLO_DIR HL_SOURCE_DIR "/../../shared/conformance/stablehlo-vhlo"

static uint8_t *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)size + 1);
  if (b && fread(b, 1, (size_t)size, f) != (size_t)size) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) b[size] = 0;
  *n = (size_t)size;
  return b;
}

static const char *vhlo_dir(void) {
  static char dir[4096];
  // The worktree sits at /work/wt/NAME (../../shared) or /work/main (../shared).
  const char *cands[] = {VHLO_DIR, HL_SOURCE_DIR "/../shared/conformance/stablehlo-vhlo"};
  for (int i = 0; i < 2; i++) {
    DIR *d = opendir(cands[i]);
    if (d) {
      closedir(d);
      snprintf(dir, sizeof(dir), "%s", cands[i]);
      return dir;
    }
  }
  return NULL;
}

static void test_varints(void) {
  // 1-byte (7 bits), 2-byte (14 bits), 9-byte (0x00 prefix) forms; zigzag.
  const uint8_t one[] = {0x07}, two[] = {0x02, 0x01},
                nine[] = {0x00, 1, 2, 3, 4, 5, 6, 7, 8}, neg[] = {0x03};
  uint64_t v;
  int64_t s;
  hl_bc_reader_t r = {one, one + 1};
  CU_ASSERT_TRUE(hl_bc_read_varint(&r, &v) && v == 3);
  r = (hl_bc_reader_t){two, two + 2};
  CU_ASSERT_TRUE(hl_bc_read_varint(&r, &v) && v == 64);
  r = (hl_bc_reader_t){nine, nine + 9};
  CU_ASSERT_TRUE(hl_bc_read_varint(&r, &v) && v == UINT64_C(0x0807060504030201));
  r = (hl_bc_reader_t){nine, nine + 8};  // truncated
  CU_ASSERT_FALSE(hl_bc_read_varint(&r, &v));
  r = (hl_bc_reader_t){neg, neg + 1};
  CU_ASSERT_TRUE(hl_bc_read_svarint(&r, &s) && s == -1);
}

static void test_bad_containers(void) {
  hl_bc_module_t m;
  const uint8_t newer[] = {'M', 'L', 0xEF, 'R', 0x0F, 'x', 0};  // version 7
  HL_ASSERT_ERROR_CONTAINS(hl_bc_read(newer, sizeof(newer), "n.bc", &m),
                           "MLIR bytecode version 7 is newer than the newest this reader knows (6)");
  const uint8_t no_nul[] = {'M', 'L', 0xEF, 'R', 0x0D, 'x'};
  HL_ASSERT_ERROR_CONTAINS(hl_bc_read(no_nul, sizeof(no_nul), "p.bc", &m), "producer string");
  const uint8_t empty[] = {'M', 'L', 0xEF, 'R', 0x0D, 'x', 0};
  HL_ASSERT_ERROR_CONTAINS(hl_bc_read(empty, sizeof(empty), "e.bc", &m), "section is missing");
  // A section whose length runs past the file.
  const uint8_t longsec[] = {'M', 'L', 0xEF, 'R', 0x0D, 'x', 0, 0x00, 0x41, 1};
  HL_ASSERT_ERROR_CONTAINS(hl_bc_read(longsec, sizeof(longsec), "l.bc", &m), "past the end");
  CU_ASSERT_FALSE(hl_bc_looks_like((const uint8_t *)"HloModule", 9));
}

// jax.export flatbuffers with broken offsets are refused, never read past.
static void test_bad_flatbuffers(void) {
  hl_jax_export_t ex;
  uint8_t zeros[16] = {0};
  CU_ASSERT_FALSE(hl_jax_export_looks_like(zeros, sizeof(zeros)));
  HL_ASSERT_ERROR_CONTAINS(hl_jax_export_read(zeros, sizeof(zeros), "z", &ex), "bad root offset");
  // Root table at 8 whose vtable offset points before the buffer.
  uint8_t far[16] = {8, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0};
  CU_ASSERT_FALSE(hl_jax_export_looks_like(far, sizeof(far)));
  HL_ASSERT_ERROR_CONTAINS(hl_jax_export_read(far, sizeof(far), "f", &ex), "bad root table");
  // A valid table (vtable at 4 of no fields, table of 4 bytes) has no module.
  uint8_t empty[12] = {8, 0, 0, 0, 4, 0, 4, 0, 4, 0, 0, 0};
  CU_ASSERT_FALSE(hl_jax_export_looks_like(empty, sizeof(empty)));
  HL_ASSERT_ERROR_CONTAINS(hl_jax_export_read(empty, sizeof(empty), "e", &ex),
                           "no mlir_module_serialized");
}

// Every prefix of a real artifact is refused cleanly (no crash, no leak).
static void test_truncations(void) {
  const char *dir = vhlo_dir();
  if (!dir) return;
  char path[4200];
  snprintf(path, sizeof(path), "%s/stablehlo_legalize_to_vhlo.1_0_0.mlir.bc", dir);
  size_t n;
  uint8_t *data = read_file(path, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(data);
  for (size_t k = 0; k < n; k += 97) {
    hl_bc_module_t m;
    hl_status_t st = hl_bc_read(data, k, "cut.bc", &m);
    CU_ASSERT_PTR_NOT_NULL(st);
    hl_status_free(st);
  }
  free(data);
}

// ---- text twin comparison ----

static int g_mismatch_reported;

static int64_t member_i(const hl_mlir_attr_t *a, const char *key) {
  const hl_mlir_attr_t *m = hl_mlir_attr_member(a, key);
  return m && m->kind == HL_MATTR_INT ? m->i : -1;
}

static bool list_is(const hl_mlir_attr_t *a, const char *key, const int64_t *v, int n) {
  const hl_mlir_attr_t *m = hl_mlir_attr_member(a, key);
  if (!m) return n == 0;
  if (m->kind != HL_MATTR_ARRAY || m->n != n) return false;
  for (int i = 0; i < n; i++)
    if (m->items[i].kind != HL_MATTR_INT || m->items[i].i != v[i]) return false;
  return true;
}

// The text's #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]> against
// the decoded members (input_batch_dimension = 0, ...).
static bool same_conv(const hl_mlir_attr_t *t, const hl_mlir_attr_t *b) {
  static const char *const kSide[3] = {"input", "kernel", "output"};
  static const char *const kA[3] = {"b", "i", "b"}, *const kB[3] = {"f", "o", "f"};
  static const char *const kAName[3] = {"input_batch_dimension", "kernel_input_feature_dimension",
                                        "output_batch_dimension"};
  static const char *const kBName[3] = {"input_feature_dimension", "kernel_output_feature_dimension",
                                        "output_feature_dimension"};
  int part = 0;
  for (int i = 0; i < t->n && part < 3; i++) {
    const hl_mlir_attr_t *arr = &t->items[i];
    if (arr->kind != HL_MATTR_ARRAY) continue;
    int64_t spatial[16];
    int ns = 0;
    int64_t da = -1, db = -1;
    for (int k = 0; k < arr->n; k++) {
      const hl_mlir_attr_t *it = &arr->items[k];
      if (it->kind == HL_MATTR_INT && it->i >= 0 && it->i < 16) {
        if (it->i >= ns) ns = (int)it->i + 1;
        spatial[it->i] = k;
      } else if (it->kind == HL_MATTR_WORD && strcmp(it->s, kA[part]) == 0) {
        da = k;
      } else if (it->kind == HL_MATTR_WORD && strcmp(it->s, kB[part]) == 0) {
        db = k;
      } else {
        return false;
      }
    }
    char key[64];
    snprintf(key, sizeof(key), "%s_spatial_dimensions", kSide[part]);
    if (member_i(b, kAName[part]) != da || member_i(b, kBName[part]) != db ||
        !list_is(b, key, spatial, ns))
      return false;
    part++;
  }
  return part == 3;
}

static bool same_attr(const hl_mlir_attr_t *t, const hl_mlir_attr_t *b) {
  if (t->kind == HL_MATTR_DIALECT && t->s && strcmp(t->s, "stablehlo.conv") == 0 &&
      t->n && !(t->keys && t->keys[0]))
    return b->kind == HL_MATTR_DIALECT && same_conv(t, b);
  switch (t->kind) {
    case HL_MATTR_INT: return b->kind == HL_MATTR_INT && b->i == t->i;
    case HL_MATTR_BOOL: return b->kind == HL_MATTR_BOOL && b->b == t->b;
    case HL_MATTR_STRING: case HL_MATTR_SYMBOL:
      return b->kind == t->kind && t->s && b->s && strcmp(t->s, b->s) == 0;
    case HL_MATTR_ARRAY:
      if (b->kind != HL_MATTR_ARRAY || b->n != t->n) return false;
      for (int i = 0; i < t->n; i++)
        if (!same_attr(&t->items[i], &b->items[i])) return false;
      return true;
    case HL_MATTR_DIALECT:
      if (b->kind != HL_MATTR_DIALECT || b->n != t->n) return false;
      for (int i = 0; i < t->n; i++) {
        const hl_mlir_attr_t *ti = &t->items[i], *bi = &b->items[i];
        if (t->keys && t->keys[i]) {  // keyed members: in any order
          bi = hl_mlir_attr_member(b, t->keys[i]);
          if (!bi) return false;
        }
        if (ti->kind == HL_MATTR_WORD) {
          if (bi->kind != HL_MATTR_WORD || strcmp(ti->s, bi->s) != 0) return false;
        } else if (!same_attr(ti, bi)) {
          return false;
        }
      }
      return true;
    case HL_MATTR_TYPE: return b->kind == HL_MATTR_TYPE && hl_shape_equal(&t->type, &b->type);
    default: return true;  // dense bodies, dictionaries: compared by name only
  }
}

static bool same_op(const hl_mlir_op_t *t, const hl_mlir_op_t *b, char *why, size_t cap);

static bool same_block(const hl_mlir_block_t *t, const hl_mlir_block_t *b, char *why, size_t cap) {
  if (t->arg_count != b->arg_count || t->op_count != b->op_count) {
    snprintf(why, cap, "block has %d args / %d ops in text, %d / %d in bytecode", t->arg_count,
             t->op_count, b->arg_count, b->op_count);
    return false;
  }
  for (int i = 0; i < t->arg_count; i++)
    if (!hl_shape_equal(&t->arg_types[i], &b->arg_types[i])) {
      snprintf(why, cap, "block argument %d type differs", i);
      return false;
    }
  for (int i = 0; i < t->op_count; i++)
    if (!same_op(&t->ops[i], &b->ops[i], why, cap)) return false;
  return true;
}

static bool same_op(const hl_mlir_op_t *t, const hl_mlir_op_t *b, char *why, size_t cap) {
  // The text parser keeps a bare `return` in a function as written.
  const char *tname = strcmp(t->name, "return") == 0 ? "func.return" : t->name;
  if (strcmp(tname, b->name) != 0 || t->operand_count != b->operand_count ||
      t->result_count != b->result_count || t->region_count != b->region_count) {
    snprintf(why, cap, "op %s (%d operands, %d results) vs %s (%d, %d)", t->name, t->operand_count,
             t->result_count, b->name, b->operand_count, b->result_count);
    return false;
  }
  for (int i = 0; i < t->result_type_count && i < b->result_type_count; i++)
    if (!hl_shape_equal(&t->result_types[i], &b->result_types[i])) {
      snprintf(why, cap, "%s: result %d type differs", t->name, i);
      return false;
    }
  if (t->generic) {
    for (int i = 0; i < t->attr_count; i++) {
      const hl_mlir_attr_t *ba = hl_mlir_op_attr(b, t->attr_names[i]);
      if (!ba || !same_attr(&t->attrs[i], ba)) {
        snprintf(why, cap, "%s: attribute '%s' %s", t->name, t->attr_names[i],
                 ba ? "differs" : "is missing");
        return false;
      }
    }
  }
  for (int r = 0; r < t->region_count; r++) {
    if (t->regions[r].block_count != b->regions[r].block_count) {
      snprintf(why, cap, "%s: region %d block count differs", t->name, r);
      return false;
    }
    for (int k = 0; k < t->regions[r].block_count; k++)
      if (!same_block(&t->regions[r].blocks[k], &b->regions[r].blocks[k], why, cap)) return false;
  }
  return true;
}

typedef struct counts {
  int functions, matched, text_unparsed, bc_skipped, differ;
  int lowered_same, lowered_differ;  // of the matched: lowered alone as the entry
} counts_t;

static bool shape_dynamic(const hl_shape_t *s) {
  if (s->dynamic_mask) return true;
  for (int i = 0; i < s->tuple_count; i++)
    if (shape_dynamic(&s->tuple[i])) return true;
  return false;
}

// Whether a function uses dynamic shapes: the file's flag says so for any of
// its functions, a function lowered alone needs its own.
static bool op_dynamic(const hl_mlir_op_t *op) {
  for (int i = 0; i < op->operand_type_count; i++)
    if (shape_dynamic(&op->operand_types[i])) return true;
  for (int i = 0; i < op->result_type_count; i++)
    if (shape_dynamic(&op->result_types[i])) return true;
  for (int r = 0; r < op->region_count; r++)
    for (int b = 0; b < op->regions[r].block_count; b++) {
      const hl_mlir_block_t *blk = &op->regions[r].blocks[b];
      for (int i = 0; i < blk->arg_count; i++)
        if (shape_dynamic(&blk->arg_types[i])) return true;
      for (int i = 0; i < blk->op_count; i++)
        if (op_dynamic(&blk->ops[i])) return true;
    }
  return false;
}

// The HLO text of `fn` lowered alone as a module's entry; NULL when it does
// not lower (it calls other functions, an op the lowering refuses, ...).
static char *lower_alone(const hl_mlir_file_t *f, const hl_mlir_op_t *fn) {
  hl_mlir_file_t one = *f;
  one.ops = (hl_mlir_op_t *)fn;
  one.op_count = 1;
  one.module_name = NULL;
  one.module_attr_count = 0;
  one.has_dynamic_shapes = op_dynamic(fn);
  hl_module_t *m = NULL;
  hl_status_t st = hl_stablehlo_lower_file(&one, f->path, &m);
  if (st) {
    hl_status_free(st);
    return NULL;
  }
  hl_strbuf_t out;
  hl_strbuf_init(&out);
  st = hl_print_hlo_module(m, &out);
  char *text = st ? NULL : hl_strdup(hl_strbuf_cstr(&out));
  hl_status_free(st);
  hl_strbuf_deinit(&out);
  hl_module_destroy(m);
  return text;
}

// Each top-level `func.func` of the twin parsed alone, compared with the
// same-named function decoded from the bytecode.
static void compare_twin(const char *text_path, const hl_mlir_file_t *bc, counts_t *c) {
  size_t n;
  char *text = (char *)read_file(text_path, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  int line = 1;
  const char *start = NULL;
  int start_line = 0;
  for (const char *p = text;; ) {
    bool at_func = strncmp(p, "func.func ", 10) == 0;
    bool at_end = *p == 0;
    if ((at_func || at_end) && start) {
      c->functions++;
      hl_mlir_file_t tf;
      hl_status_t st = hl_mlir_parse(start, (size_t)(p - start), text_path, start_line, &tf);
      if (st) {
        c->text_unparsed++;
        hl_status_free(st);
      } else {
        const hl_mlir_op_t *tfn = tf.op_count == 1 ? &tf.ops[0] : NULL;
        const hl_mlir_op_t *bfn = NULL;
        for (int i = 0; tfn && i < bc->op_count; i++)
          if (tfn->symbol && bc->ops[i].symbol && strcmp(tfn->symbol, bc->ops[i].symbol) == 0)
            bfn = &bc->ops[i];
        char why[512] = "";
        if (!bfn) {
          c->bc_skipped++;
        } else if (same_op(tfn, bfn, why, sizeof(why)) &&
                   tfn->operand_type_count == bfn->operand_type_count) {
          c->matched++;
          char *a = lower_alone(&tf, tfn), *b = a ? lower_alone(bc, bfn) : NULL;
          if (a && b && strcmp(a, b) == 0) {
            c->lowered_same++;
          } else if (a) {
            c->lowered_differ++;
            if (g_mismatch_reported++ < 60)
              fprintf(stderr, "  %s:%d @%s: lowers from text but %s from bytecode\n", text_path,
                      start_line, tfn->symbol, b ? "differently" : "not");
          }
          hl_free(a);
          hl_free(b);
        } else {
          c->differ++;
          if (g_mismatch_reported++ < 60)
            fprintf(stderr, "  %s:%d @%s: %s\n", text_path, start_line, tfn->symbol, why);
        }
        hl_mlir_file_deinit(&tf);
      }
      start = NULL;
    }
    if (at_end) break;
    if (at_func) {
      start = p;
      start_line = line;
    }
    const char *nl = strchr(p, '\n');
    if (!nl) nl = p + strlen(p) - 1;
    p = nl + 1;
    line++;
  }
  free(text);
}

static void test_vhlo_suite(void) {
  const char *dir = vhlo_dir();
  if (!dir) {
    fprintf(stderr, "\n  (skipped: no ../shared/conformance/stablehlo-vhlo)\n");
    return;
  }
  DIR *d = opendir(dir);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  struct dirent *e;
  int artifacts = 0, read_ok = 0;
  counts_t c = {0};
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "stablehlo_legalize_to_vhlo.", 27) != 0 || len < 9 ||
        strcmp(e->d_name + len - 8, ".mlir.bc") != 0)
      continue;
    artifacts++;
    char path[4400], twin[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    snprintf(twin, sizeof(twin), "%s/%.*s", dir, (int)(len - 3), e->d_name);
    size_t n;
    uint8_t *data = read_file(path, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    hl_bc_module_t bc;
    hl_status_t st = hl_bc_read(data, n, path, &bc);
    HL_ASSERT_OK(st);
    if (!st) {
      read_ok++;
      hl_mlir_file_t f;
      hl_vhlo_skipped_t skipped;
      HL_ASSERT_OK(hl_vhlo_to_mlir_partial(&bc, &f, &skipped));
      compare_twin(twin, &f, &c);
      hl_vhlo_skipped_deinit(&skipped);
      hl_mlir_file_deinit(&f);
      hl_bc_module_deinit(&bc);
    }
    free(data);
  }
  closedir(d);
  fprintf(stderr, "\n  stablehlo-vhlo: %d/%d artifacts read; of %d functions in the text twins "
          "%d match op by op, %d differ, %d are not decoded from bytecode (unsupported "
          "construct), %d the text parser refuses; of the matching, %d lower alone to the same "
          "HLO module from both, %d differently\n",
          read_ok, artifacts, c.functions, c.matched, c.differ, c.bc_skipped, c.text_unparsed,
          c.lowered_same, c.lowered_differ);
  CU_ASSERT_EQUAL(c.lowered_differ, 0);
  CU_ASSERT_EQUAL(read_ok, artifacts);
  CU_ASSERT_TRUE(artifacts >= 32);
  CU_ASSERT_TRUE(c.matched > 0);
  CU_ASSERT_EQUAL(c.differ, 0);
}

static void test_future_refused(void) {
  const char *dir = vhlo_dir();
  if (!dir) return;
  char path[4200];
  snprintf(path, sizeof(path), "%s/invalid_vhlo_future.mlir.bc", dir);
  size_t n;
  uint8_t *data = read_file(path, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(data);
  hl_module_t *m = NULL;
  hl_status_t st = hl_bytecode_load(data, n, path, &m);
  HL_ASSERT_ERROR_CONTAINS(st, "unregistered operation 'vhlo.constant_v99'");
  st = hl_bytecode_load(data, n, path, &m);
  HL_ASSERT_ERROR_CONTAINS(st, "written by StableHLO 2.0.0, newer than 1.20");
  CU_ASSERT_PTR_NULL(m);
  free(data);
}

static void test_emit_version_loads(void) {
  const char *dir = vhlo_dir();
  if (!dir) return;
  char path[4200];
  snprintf(path, sizeof(path), "%s/vhlo_emit_version_api.1_1_0.mlir.bc", dir);
  size_t n;
  uint8_t *data = read_file(path, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(data);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_bytecode_load(data, n, path, &m));
  CU_ASSERT_PTR_NOT_NULL(m);
  hl_module_destroy(m);
  free(data);
}

static CU_TestInfo tests[] = {
    {"varints", test_varints},
    {"bad_containers", test_bad_containers},
    {"truncations", test_truncations},
    {"bad_flatbuffers", test_bad_flatbuffers},
    {"future_refused", test_future_refused},
    {"emit_version_loads", test_emit_version_loads},
    {"vhlo_suite", test_vhlo_suite},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("bytecode", tests)
