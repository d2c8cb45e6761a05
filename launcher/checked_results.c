// --expect and --record (see checked_results.h).
#include "launcher/checked_results.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "launcher/outputs.h"
#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/base/strbuf.h"
#include "runtime/debug/result_check.h"
#include "runtime/proto/proto_io.h"

bool hl_expect_wanted(const hl_launch_options_t *o, const hl_program_t *program) {
  // An explicit --expect-global replaces a snapshot's default expectation.
  return o->expect_dir || (program->format == HL_FORMAT_SNAPSHOT && !o->expect_global);
}

// The whole file, gunzipped if it is gzip (zlib reads plain files as they are).
static hl_status_t read_file(const char *path, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) return HL_ERROR(HL_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) hl_strbuf_append_n(&sb, buf, (size_t)n);
  gzclose(f);
  if (n < 0 || sb.failed) {
    hl_strbuf_deinit(&sb);
    return HL_ERROR(HL_IO_ERROR, "%s: cannot read", path);
  }
  *out_size = sb.length;
  *out = (uint8_t *)hl_strbuf_take(&sb);
  return NULL;
}

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; *p < end && shift < 64; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

// An HloSnapshot's `result` (field 3, a LiteralProto); NULL when absent.
static hl_status_t snapshot_result(const char *path, hl_literal_t **out) {
  *out = NULL;
  uint8_t *data = NULL;
  size_t size = 0;
  HL_RETURN_IF_ERROR(read_file(path, &data, &size));
  const uint8_t *p = data, *end = data + size;
  hl_status_t st = NULL;
  while (p < end && !st) {
    uint64_t key, len = 0;
    if (!read_varint(&p, end, &key)) break;
    int wire = (int)(key & 7);
    if (wire == 0) {
      if (!read_varint(&p, end, &len)) break;
      continue;
    }
    if (wire == 1 || wire == 5) {
      p += wire == 1 ? 8 : 4;
      continue;
    }
    if (wire != 2 || !read_varint(&p, end, &len) || len > (uint64_t)(end - p)) break;
    if ((key >> 3) == 3) st = hl_proto_decode_literal(p, (size_t)len, out);
    p += len;
  }
  hl_free(data);
  if (st) return hl_status_annotate(st, "%s: the snapshot's result", path);
  return NULL;
}

// This process's expected leaves: --expect's files, or the snapshot's result.
static hl_status_t load_expectation(const hl_launch_options_t *o, const hl_program_t *program,
                                    const hl_literal_t *result, int64_t replica,
                                    int64_t partition, hl_literal_t ***out, int *out_count) {
  *out = NULL;
  *out_count = 0;
  int n = 0;
  hl_result_leaves(result, NULL, &n, 0);
  const hl_literal_t **leaves = hl_calloc((size_t)(n ? n : 1), sizeof(*leaves));
  hl_literal_t **want = hl_calloc((size_t)(n ? n : 1), sizeof(*want));
  if (!leaves || !want) {
    hl_free(leaves);
    hl_free(want);
    return HL_OOM();
  }
  int k = 0;
  hl_result_leaves(result, leaves, &k, n);
  hl_status_t st = NULL;
  bool have = o->expect_dir != NULL;
  if (o->expect_dir) {
    for (int i = 0; i < n && !st; i++) {
      char path[4200];
      snprintf(path, sizeof(path), "%s/replica%lld_partition%lld/result%d.npy", o->expect_dir,
               (long long)replica, (long long)partition, i);
      char what[64];
      snprintf(what, sizeof(what), "result %d", i);
      st = hl_npy_read_file(path, &leaves[i]->shape, what, &want[i]);
    }
  } else {
    hl_literal_t *recorded = NULL;
    st = snapshot_result(o->program, &recorded);
    have = recorded != NULL;
    if (!st && recorded) {
      int m = 0;
      hl_result_leaves(recorded, NULL, &m, 0);
      if (m != n) {
        st = HL_INVALID("%s: the snapshot's result has %d arrays, the result %d", o->program, m,
                        n);
      } else {
        const hl_literal_t **rec = hl_calloc((size_t)(m ? m : 1), sizeof(*rec));
        if (!rec) st = HL_OOM();
        int r = 0;
        if (rec) hl_result_leaves(recorded, rec, &r, m);
        for (int i = 0; rec && i < n; i++) want[i] = hl_literal_retain((hl_literal_t *)rec[i]);
        hl_free(rec);
      }
      hl_literal_release(recorded);
    }
  }
  hl_free(leaves);
  if (st || !have) {
    for (int i = 0; i < n; i++) hl_literal_release(want[i]);
    hl_free(want);
    return st;
  }
  *out = want;
  *out_count = n;
  return NULL;
}

// Compares and writes the verdict line; `global` names the worst element
// global[i,j] instead of result<leaf>[i,j].
static hl_status_t compare(const hl_launch_options_t *o, const hl_literal_t *result,
                           hl_literal_t *const *want, int count, bool global, char *line,
                           size_t cap, bool *out_matched) {
  hl_tolerance_t tol = {.rtol = o->rtol, .atol = o->atol, .ulp = o->ulp};
  hl_result_check_stats_t s;
  HL_RETURN_IF_ERROR(hl_result_check(result, want, count, &tol, &s));
  *out_matched = s.mismatches == 0;
  if (*out_matched) {
    snprintf(line, cap, "matches (%lld elements)", (long long)s.elements);
    return NULL;
  }
  char index[256], name[32];
  hl_result_check_format_index(&want[s.worst_leaf]->shape, s.worst_index, index, sizeof(index));
  if (global)
    snprintf(name, sizeof(name), "global");
  else
    snprintf(name, sizeof(name), "result%d", s.worst_leaf);
  snprintf(line, cap,
           "%lld of %lld elements differ; worst: %s%s = %.9g, expected %.9g (|difference| %.3g)",
           (long long)s.mismatches, (long long)s.elements, name, index, s.worst_got, s.worst_want,
           s.worst_error);
  return NULL;
}

hl_status_t hl_expect_global_check(const hl_launch_options_t *o, const hl_literal_t *global,
                                   char *line, size_t cap, bool *out_matched) {
  *out_matched = false;
  line[0] = '\0';
  hl_literal_t *want = NULL;
  HL_RETURN_IF_ERROR(hl_npy_read_file(o->expect_global, &global->shape,
                                      "the assembled global result", &want));
  hl_status_t st = compare(o, global, &want, 1, true, line, cap, out_matched);
  hl_literal_release(want);
  return st;
}

hl_status_t hl_expect_check(const hl_launch_options_t *o, const hl_program_t *program,
                            const hl_literal_t *result, int64_t replica, int64_t partition,
                            char *line, size_t cap, bool *out_checked, bool *out_matched) {
  *out_matched = false;
  line[0] = '\0';
  *out_checked = false;
  hl_literal_t **want = NULL;
  int count = 0;
  HL_RETURN_IF_ERROR(load_expectation(o, program, result, replica, partition, &want, &count));
  if (!want) return NULL;  // a snapshot that records no result
  *out_checked = true;
  hl_status_t st = compare(o, result, want, count, false, line, cap, out_matched);
  for (int i = 0; i < count; i++) hl_literal_release(want[i]);
  hl_free(want);
  return st;
}

//===----------------------------------------------------------------------===//
// --record
//===----------------------------------------------------------------------===//

static void put_varint(hl_strbuf_t *sb, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v) b |= 0x80;
    hl_strbuf_append_n(sb, (const char *)&b, 1);
  } while (v);
}

// One length-delimited field of an HloSnapshot.
static void put_field(hl_strbuf_t *sb, int field, const uint8_t *data, size_t size) {
  put_varint(sb, ((uint64_t)field << 3) | 2);
  put_varint(sb, size);
  hl_strbuf_append_n(sb, (const char *)data, size);
}

static hl_status_t put_literal(hl_strbuf_t *sb, int field, const hl_literal_t *lit) {
  uint8_t *data = NULL;
  size_t size = 0;
  HL_RETURN_IF_ERROR(hl_proto_encode_literal(lit, &data, &size));
  put_field(sb, field, data, size);
  hl_free(data);
  return NULL;
}

hl_status_t hl_record_write(const char *dir, const hl_program_t *program,
                            const hl_inputs_t *inputs, const hl_literal_t *result,
                            int64_t replica, int64_t partition) {
  // result<i>.npy (and the directories) as --output-dir writes them.
  HL_RETURN_IF_ERROR_CTX(hl_outputs_write(dir, result, replica, partition, inputs), "--record");
  char path[4200];
  for (int i = 0; i < inputs->count; i++) {
    if (!hl_shape_is_array(&inputs->args[i]->shape)) continue;  // tuples: in snapshot.pb only
    snprintf(path, sizeof(path), "%s/replica%lld_partition%lld/arg%d.npy", dir,
             (long long)replica, (long long)partition, i);
    HL_RETURN_IF_ERROR_CTX(hl_npy_write_file(path, inputs->args[i]), "--record");
  }
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  uint8_t *hlo = NULL;
  size_t hlo_size = 0;
  hl_status_t st = hl_proto_encode_hlo_proto(program->module, &hlo, &hlo_size);
  if (!st) put_field(&sb, 1, hlo, hlo_size);
  hl_free(hlo);
  for (int i = 0; i < inputs->count && !st; i++) st = put_literal(&sb, 2, inputs->args[i]);
  if (!st) st = put_literal(&sb, 3, result);
  if (!st && sb.failed) st = HL_OOM();
  if (!st) {
    snprintf(path, sizeof(path), "%s/replica%lld_partition%lld/snapshot.pb", dir,
             (long long)replica, (long long)partition);
    FILE *f = fopen(path, "wb");
    if (!f) {
      st = HL_ERROR(HL_IO_ERROR, "--record: cannot write %s: %s", path, strerror(errno));
    } else {
      bool ok = fwrite(sb.data, 1, sb.length, f) == sb.length;
      ok = fclose(f) == 0 && ok;
      if (!ok) st = HL_ERROR(HL_IO_ERROR, "--record: cannot write %s", path);
    }
  }
  hl_strbuf_deinit(&sb);
  return st;
}
