// Loads a program file by content: gzip is inflated first (XLA's
// --xla_dump_compress_protos), then the bytes are a StableHLO portable
// artifact (MLIR bytecode magic), StableHLO text, HLO text, or one of the
// binary messages, detected by walking their wire structure.
#include "runtime/loader/program_loader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/base/alloc.h"
#include "runtime/bytecode/jax_export.h"
#include "runtime/bytecode/vhlo.h"
#include "runtime/proto/proto_io.h"
#include "runtime/stablehlo/stablehlo.h"
#include "runtime/text/hlo_parser.h"

// A default limit never below this, however little memory is free.
static const uint64_t kMinInflateLimit = 64u << 20;

const char *hl_program_format_name(hl_program_format_t f) {
  switch (f) {
    case HL_FORMAT_HLO_TEXT: return "HLO text";
    case HL_FORMAT_HLO_PROTO: return "HloProto";
    case HL_FORMAT_MODULE_PROTO: return "HloModuleProto";
    case HL_FORMAT_SNAPSHOT: return "HloSnapshot";
    case HL_FORMAT_STABLEHLO: return "StableHLO text";
    case HL_FORMAT_STABLEHLO_BYTECODE: return "StableHLO portable artifact (MLIR bytecode)";
    case HL_FORMAT_JAX_EXPORT: return "jax.export serialized program";
  }
  return "?";
}

void hl_program_deinit(hl_program_t *p) {
  if (!p) return;
  hl_module_destroy(p->module);
  for (int i = 0; i < p->argument_count; i++) hl_literal_release(p->arguments[i]);
  hl_free(p->arguments);
  hl_free(p->dynamic_text);
  hl_free(p->dynamic_name);
  memset(p, 0, sizeof(*p));
}

static bool is_gzip(const uint8_t *d, size_t n) { return n >= 2 && d[0] == 0x1f && d[1] == 0x8b; }

uint64_t hl_program_default_inflate_limit(void) {
  // MemAvailable counts reclaimable caches too, unlike _SC_AVPHYS_PAGES.
  uint64_t available = 0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long kib;
    while (fgets(line, sizeof(line), f))
      if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) available = (uint64_t)kib * 1024;
    fclose(f);
  }
  if (available == 0) {
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) available = (uint64_t)pages * (uint64_t)page;
  }
  // The module built from the bytes needs about as much again.
  uint64_t limit = available / 2;
  return limit < kMinInflateLimit ? kMinInflateLimit : limit;
}

hl_status_t hl_program_parse_size(const char *flag, const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = text[0] == '-' ? 0 : strtoull(text, &end, 10);
  int shift = -1;
  if (v > 0 && !errno) {
    const char *units = "KMGT";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (!*end) shift = 0;
    else if (u && (!end[1] || strcmp(end + 1, "iB") == 0 || strcmp(end + 1, "B") == 0))
      shift = 10 * (int)(u - units + 1);
  }
  if (shift < 0 || v > (UINT64_MAX >> shift))
    return HL_INVALID("%s needs a positive size in bytes (a K, M, G or T suffix multiplies by "
                      "1024, 1024^2, ...), got '%s'", flag, text);
  *out = (uint64_t)v << shift;
  return NULL;
}

static void format_bytes(uint64_t n, char *buf, size_t cap) {
  static const char *const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = (double)n;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
  else snprintf(buf, cap, "%.1f %s", v, kUnits[u]);
}

static hl_status_t inflated_too_large(const char *name, uint64_t limit, bool is_default) {
  char lim[64];
  format_bytes(limit, lim, sizeof(lim));
  return HL_INVALID("%s: the gzip data inflates to more than %s (%s); a genuine program this "
                    "large needs a higher --max-inflated-size",
                    name, lim, is_default ? "the limit: half the memory available now"
                                          : "the --max-inflated-size limit");
}

// Inflates every gzip member in `in` (gzip allows concatenated members),
// stopping once more than `limit` bytes come out (a gzip bomb).
static hl_status_t gunzip(const uint8_t *in, size_t in_size, const char *name, uint64_t limit,
                          bool limit_is_default, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  // The buffer never grows past the limit plus one inflate step.
  size_t max_cap = limit > SIZE_MAX - 8192 ? SIZE_MAX : (size_t)limit + 8192;
  size_t cap = in_size * 4 + 1024, len = 0;
  if (cap > max_cap) cap = max_cap;
  uint8_t *buf = hl_malloc(cap);
  if (!buf) return HL_OOM();
  z_stream zs;
  memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 15 + 16) != Z_OK) {
    hl_free(buf);
    return HL_OOM();
  }
  size_t consumed = 0;
  hl_status_t st = NULL;
  for (;;) {
    if (len > limit) {
      st = inflated_too_large(name, limit, limit_is_default);
      break;
    }
    if (cap - len < 4096) {
      size_t ncap = cap * 2 > max_cap ? max_cap : cap * 2;
      uint8_t *nb = ncap > cap ? hl_realloc(buf, ncap) : NULL;
      if (!nb) {
        st = HL_OOM();
        break;
      }
      buf = nb;
      cap = ncap;
    }
    size_t in_left = in_size - consumed;
    zs.next_in = (Bytef *)(in + consumed);
    zs.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
    size_t out_left = cap - len;
    zs.next_out = buf + len;
    zs.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
    uInt avail_in_before = zs.avail_in, avail_out_before = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += avail_in_before - zs.avail_in;
    len += avail_out_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (len > limit) {
        st = inflated_too_large(name, limit, limit_is_default);
        break;
      }
      if (consumed < in_size && is_gzip(in + consumed, in_size - consumed)) {
        inflateReset(&zs);
        continue;
      }
      break;  // trailing non-gzip bytes are ignored, as gzip(1) does with a warning
    }
    if (rc == Z_BUF_ERROR && consumed == in_size) {
      st = HL_INVALID("%s: truncated gzip data", name);
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      st = rc == Z_MEM_ERROR ? HL_OOM()
                             : HL_INVALID("%s: corrupted gzip data (%s)", name,
                                          zs.msg ? zs.msg : "inflate failed");
      break;
    }
  }
  inflateEnd(&zs);
  if (!st && len == cap) {
    uint8_t *nb = hl_realloc(buf, cap + 1);
    if (nb) buf = nb;
    else st = HL_OOM();
  }
  if (st) {
    hl_free(buf);
    return st;
  }
  buf[len] = 0;  // terminated, so text consumers may rely on it
  *out = buf;
  *out_size = len;
  return NULL;
}

static bool valid_utf8_without_nul(const uint8_t *d, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = d[i];
    if (c == 0) return false;
    if (c < 0x80) {
      i++;
      continue;
    }
    int extra = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0 || (c & 0xfe) == 0xc0 || n - i <= (size_t)extra) return false;
    for (int k = 1; k <= extra; k++)
      if ((d[i + k] & 0xc0) != 0x80) return false;
    i += (size_t)extra + 1;
  }
  return true;
}

static bool is_ident_start(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident_char(uint8_t c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}
static bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_space_and_comments(const uint8_t *d, size_t n, size_t i) {
  for (;;) {
    while (i < n && is_space(d[i])) i++;
    if (i + 1 < n && d[i] == '/' && d[i + 1] == '/') {
      while (i < n && d[i] != '\n') i++;
    } else if (i + 1 < n && d[i] == '/' && d[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(d[i] == '*' && d[i + 1] == '/')) i++;
      i = i + 1 < n ? i + 2 : n;
    } else {
      return i;
    }
  }
}

// HLO text starts (after whitespace and comments) with "HloModule", "ENTRY",
// or a computation name followed by "{" or "(".
static bool looks_like_text(const uint8_t *d, size_t n) {
  size_t i = skip_space_and_comments(d, n, 0);
  if (i >= n) return false;
  size_t start = i;
  if (d[i] == '%') i++;
  if (i >= n || !is_ident_start(d[i])) return false;
  while (i < n && is_ident_char(d[i])) i++;
  size_t word = i - start;
  bool keyword = (word == 9 && memcmp(d + start, "HloModule", 9) == 0) ||
                 (word == 5 && memcmp(d + start, "ENTRY", 5) == 0);
  if (!keyword) {
    i = skip_space_and_comments(d, n, i);
    if (i >= n || (d[i] != '{' && d[i] != '(')) return false;
  }
  return valid_utf8_without_nul(d, n);
}

// The bytecode header: magic, version, producer (a NUL-terminated string).
static void note_bytecode_header(const uint8_t *data, size_t size, hl_program_t *out) {
  if (size < 4) return;
  hl_bc_reader_t r = {data + 4, data + size};
  uint64_t version;
  if (!hl_bc_read_varint(&r, &version)) return;
  out->bytecode_version = version;
  size_t n = 0;
  while (r.p + n < r.end && r.p[n]) n++;
  if (r.p + n == r.end) return;
  if (n >= sizeof(out->producer)) n = sizeof(out->producer) - 1;
  memcpy(out->producer, r.p, n);
  out->producer[n] = '\0';
}

static void note_jax_export(const uint8_t *data, size_t size, const char *name,
                            hl_program_t *out) {
  hl_jax_export_t e;
  hl_status_t st = hl_jax_export_read(data, size, name, &e);
  if (st) {  // the load that follows reports it
    hl_status_free(st);
    return;
  }
  out->has_jax_export = true;
  out->jax_serialization_version = e.serialization_version;
  out->jax_calling_convention_version = e.calling_convention_version;
  out->jax_nr_devices = e.nr_devices;
  snprintf(out->jax_function_name, sizeof(out->jax_function_name), "%s",
           e.function_name ? e.function_name : "");
  size_t used = 0;
  for (int i = 0; i < e.platform_count && used < sizeof(out->jax_platforms); i++)
    used += (size_t)snprintf(out->jax_platforms + used, sizeof(out->jax_platforms) - used,
                             "%s%s", i ? "," : "", e.platforms[i] ? e.platforms[i] : "?");
  if (e.module) note_bytecode_header(e.module, e.module_size, out);
}

// A program with dynamic shapes: its bytes (text or bytecode) are kept until
// hl_program_refine gives the arguments its shapes come from.
static hl_status_t keep_for_refinement(const uint8_t *data, size_t size, const char *name,
                                       hl_program_t *out) {
  out->dynamic_text = hl_malloc(size + 1);
  out->dynamic_name = hl_strdup(name);
  if (!out->dynamic_text || !out->dynamic_name) return HL_OOM();
  memcpy(out->dynamic_text, data, size);
  out->dynamic_text[size] = '\0';
  out->dynamic_length = size;
  return NULL;
}

static hl_status_t load_plain(const uint8_t *data, size_t size, const char *name,
                              const hl_program_load_options_t *options, hl_program_t *out) {
  if (hl_jax_export_looks_like(data, size)) {
    out->format = HL_FORMAT_JAX_EXPORT;
    note_jax_export(data, size, name, out);
    bool needs_args = false;
    hl_status_t st = hl_jax_export_load_with_args(data, size, name, NULL, -1, &out->module,
                                                  &needs_args);
    if (!st || !needs_args || !options || !options->defer_dynamic_shapes) return st;
    hl_status_free(st);
    return keep_for_refinement(data, size, name, out);
  }
  if (hl_bc_looks_like(data, size)) {
    out->format = HL_FORMAT_STABLEHLO_BYTECODE;
    note_bytecode_header(data, size, out);
    bool needs_args = false;
    hl_status_t st = hl_bytecode_load_with_args(data, size, name, NULL, -1, &out->module,
                                                &needs_args);
    if (!st || !needs_args || !options || !options->defer_dynamic_shapes) return st;
    hl_status_free(st);
    return keep_for_refinement(data, size, name, out);
  }
  if (hl_stablehlo_looks_like((const char *)data, size)) {
    out->format = HL_FORMAT_STABLEHLO;
    bool needs_args = false;
    hl_status_t st = hl_stablehlo_load_with_args((const char *)data, size, name, 1, NULL, -1,
                                                 &out->module, &needs_args);
    if (!st || !needs_args || !options || !options->defer_dynamic_shapes) return st;
    hl_status_free(st);
    return keep_for_refinement(data, size, name, out);
  }
  if (looks_like_text(data, size)) {
    out->format = HL_FORMAT_HLO_TEXT;
    return hl_parse_hlo_module((const char *)data, size, name, &out->module);
  }
  hl_proto_kind_t kind;
  hl_status_t st = hl_proto_detect_kind(data, size, &kind);
  if (st) {
    hl_status_free(st);
    return HL_INVALID("not an HLO program: %s is neither HLO text nor an HloProto / "
                      "HloModuleProto / HloSnapshot",
                      name);
  }
  out->format = kind == HL_PROTO_SNAPSHOT    ? HL_FORMAT_SNAPSHOT
                : kind == HL_PROTO_HLO_PROTO ? HL_FORMAT_HLO_PROTO
                                             : HL_FORMAT_MODULE_PROTO;
  return hl_proto_decode(data, size, kind, name, &out->module,
                         kind == HL_PROTO_SNAPSHOT ? &out->arguments : NULL,
                         kind == HL_PROTO_SNAPSHOT ? &out->argument_count : NULL);
}

hl_status_t hl_program_load_bytes(const uint8_t *data, size_t size, const char *name,
                                  hl_program_t *out) {
  return hl_program_load_bytes_with(data, size, name, NULL, out);
}

hl_status_t hl_program_load_bytes_with(const uint8_t *data, size_t size, const char *name,
                                       const hl_program_load_options_t *options,
                                       hl_program_t *out) {
  memset(out, 0, sizeof(*out));
  if (!name) name = "<memory>";
  if (!data && size) return HL_INVALID("%s: no data", name);
  hl_status_t st;
  if (is_gzip(data, size)) {
    uint8_t *plain;
    size_t plain_size;
    uint64_t limit = options ? options->max_inflated_bytes : 0;
    bool is_default = limit == 0;
    if (is_default) limit = hl_program_default_inflate_limit();
    HL_RETURN_IF_ERROR(gunzip(data, size, name, limit, is_default, &plain, &plain_size));
    out->gzipped = true;
    st = load_plain(plain, plain_size, name, options, out);
    hl_free(plain);
  } else {
    st = load_plain(data, size, name, options, out);
  }
  if (st) {  // what was read of the container stays, for messages (--describe)
    hl_program_t kept = *out;
    hl_program_deinit(out);
    out->format = kept.format;
    out->gzipped = kept.gzipped;
    out->bytecode_version = kept.bytecode_version;
    memcpy(out->producer, kept.producer, sizeof(out->producer));
    out->has_jax_export = kept.has_jax_export;
    out->jax_serialization_version = kept.jax_serialization_version;
    out->jax_calling_convention_version = kept.jax_calling_convention_version;
    out->jax_nr_devices = kept.jax_nr_devices;
    memcpy(out->jax_function_name, kept.jax_function_name, sizeof(out->jax_function_name));
    memcpy(out->jax_platforms, kept.jax_platforms, sizeof(out->jax_platforms));
  }
  return st;
}

hl_status_t hl_program_load_file(const char *path, hl_program_t *out) {
  return hl_program_load_file_with(path, NULL, out);
}

hl_status_t hl_program_read_file(const char *path, uint8_t **out, size_t *out_size) {
  *out = NULL;
  *out_size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return HL_ERROR(HL_IO_ERROR, "cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = hl_malloc(cap + 1);
  hl_status_t st = buf ? NULL : HL_OOM();
  while (!st) {
    if (len == cap) {
      uint8_t *nb = hl_realloc(buf, cap * 2 + 1);
      if (!nb) {
        st = HL_OOM();
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) st = HL_ERROR(HL_IO_ERROR, "cannot read %s: %s", path, strerror(errno));
      break;
    }
  }
  fclose(f);
  if (st) {
    hl_free(buf);
    return st;
  }
  buf[len] = 0;  // terminated, so text consumers may rely on it
  *out = buf;
  *out_size = len;
  return NULL;
}

hl_status_t hl_program_load_file_with(const char *path, const hl_program_load_options_t *options,
                                      hl_program_t *out) {
  memset(out, 0, sizeof(*out));
  uint8_t *buf = NULL;
  size_t len = 0;
  HL_RETURN_IF_ERROR(hl_program_read_file(path, &buf, &len));
  hl_status_t st = hl_program_load_bytes_with(buf, len, path, options, out);
  hl_free(buf);
  return st;
}

hl_status_t hl_program_refine(hl_program_t *program, hl_literal_t *const *args, int arg_count) {
  if (!program->dynamic_text) return NULL;
  if (program->format == HL_FORMAT_JAX_EXPORT)
    HL_RETURN_IF_ERROR(hl_jax_export_load_with_args((const uint8_t *)program->dynamic_text,
                                                    program->dynamic_length,
                                                    program->dynamic_name, args, arg_count,
                                                    &program->module, NULL));
  else if (program->format == HL_FORMAT_STABLEHLO_BYTECODE)
    HL_RETURN_IF_ERROR(hl_bytecode_load_with_args((const uint8_t *)program->dynamic_text,
                                                  program->dynamic_length, program->dynamic_name,
                                                  args, arg_count, &program->module, NULL));
  else
    HL_RETURN_IF_ERROR(hl_stablehlo_load_with_args(program->dynamic_text,
                                                   program->dynamic_length,
                                                   program->dynamic_name, 1, args, arg_count,
                                                   &program->module, NULL));
  hl_free(program->dynamic_text);
  hl_free(program->dynamic_name);
  program->dynamic_text = NULL;
  program->dynamic_name = NULL;
  program->dynamic_length = 0;
  return NULL;
}

hl_status_t hl_program_dynamic_entry_types(const hl_program_t *program, hl_shape_t **out_types,
                                           int *out_count) {
  *out_types = NULL;
  *out_count = 0;
  if (!program->dynamic_text) return HL_INTERNAL_ERROR("the program has no dynamic shapes");
  if (program->format == HL_FORMAT_JAX_EXPORT)
    return hl_jax_export_entry_types((const uint8_t *)program->dynamic_text,
                                     program->dynamic_length, program->dynamic_name, out_types,
                                     out_count);
  if (program->format == HL_FORMAT_STABLEHLO_BYTECODE)
    return hl_bytecode_entry_types((const uint8_t *)program->dynamic_text,
                                   program->dynamic_length, program->dynamic_name, out_types,
                                   out_count);
  return hl_stablehlo_entry_types(program->dynamic_text, program->dynamic_length,
                                  program->dynamic_name, out_types, out_count);
}
