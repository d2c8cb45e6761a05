// hlo-convert: converts a program between HLO text and binary XLA protos.
//
//   hlo-convert prog.hlo prog.pb        text -> xla.HloProto
//   hlo-convert prog.pb.gz prog.hlo     (gzipped) proto -> text
//   hlo-convert --to text prog.pb -     to stdout
//   hlo-convert --fuse prog.hlo out.hlo the module with the fusion pass's fusions
//
// The input format is detected from the content (hl_program_load_file), the
// output format from OUT's name or --to. The module is verified before it is
// written, so a converted file is one hlo-launch accepts.
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/base/alloc.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/fusion/fusion_pass.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/loader/program_loader.h"
#include "runtime/proto/proto_io.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"

typedef enum hl_convert_format {
  HL_OUT_UNKNOWN,
  HL_OUT_TEXT,         // HLO text
  HL_OUT_PB,           // xla.HloProto
  HL_OUT_PB_GZ,        // gzip'd xla.HloProto
  HL_OUT_MODULE_PB,    // bare xla.HloModuleProto
} hl_convert_format_t;

typedef struct hl_convert_options {
  const char *in_path;
  const char *out_path;
  hl_convert_format_t to;  // HL_OUT_UNKNOWN: from out_path's name
  bool force;
  bool verify;
  hl_program_load_options_t load;  // --max-inflated-size
  bool partition;           // --partition: write the per-partition module
  long long partitions;     // --partitions N (0: the module's num_partitions)
  bool fuse;                // --fuse: run the fusion pass (runtime/fusion/fusion_pass.h)
  bool explain_fusion;      // --explain-fusion: its decisions on stderr (implies --fuse)
} hl_convert_options_t;

static const char kUsage[] =
    "usage: hlo-convert [options] IN OUT\n"
    "\n"
    "Converts an XLA program between HLO text and binary protos.\n"
    "IN may be HLO text, an xla.HloProto, a bare xla.HloModuleProto or an\n"
    "xla.HloSnapshot, optionally gzip'd; its format is detected from the content.\n"
    "IN may be '-' for stdin. OUT may be '-' for stdout (text unless --to says otherwise).\n"
    "\n"
    "The output format comes from OUT's name:\n"
    "  *.pb              binary xla.HloProto (what --xla_dump_hlo_as_proto writes)\n"
    "  *.pb.gz           the same, gzip'd\n"
    "  *.hlo, *.txt      HLO text\n"
    "\n"
    "options:\n"
    "  --to FORMAT       text | pb | pb.gz | module-pb (a bare xla.HloModuleProto);\n"
    "                    overrides OUT's name\n"
    "  -f, --force       overwrite OUT if it exists (never IN itself)\n"
    "  --no-verify       write the module even if the verifier rejects it\n"
    "  --max-inflated-size SIZE\n"
    "                    most bytes a gzip'd IN may inflate to (K, M, G, T suffixes;\n"
    "                    default: half the memory available)\n"
    "  --partition       partition a global program (shardings on its parameters,\n"
    "                    root or Sharding custom-calls) and write the per-partition\n"
    "                    module, runnable by hlo-launch (docs/PARTITIONER.md)\n"
    "  --partitions N    partitions for --partition (default: the module's num_partitions)\n"
    "  --fuse            run the fusion pass hlo-launch runs on unfused programs and\n"
    "                    write the fused module (element-wise ops, broadcasts, index\n"
    "                    maps and reductions as kLoop / kInput fusions; a module that\n"
    "                    already has fusions is written unchanged)\n"
    "  --explain-fusion  with --fuse: say on stderr, per instruction, which fusion it\n"
    "                    went into or why it was not fused (implies --fuse)\n"
    "  -h, --help        show this help\n"
    "\n"
    "Large constants are never elided in text output, so text -> pb -> text -> pb\n"
    "is byte-stable.\n";

static bool hl_has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static hl_convert_format_t hl_format_from_name(const char *name) {
  if (strcmp(name, "text") == 0) return HL_OUT_TEXT;
  if (strcmp(name, "pb") == 0) return HL_OUT_PB;
  if (strcmp(name, "pb.gz") == 0) return HL_OUT_PB_GZ;
  if (strcmp(name, "module-pb") == 0) return HL_OUT_MODULE_PB;
  return HL_OUT_UNKNOWN;
}

static hl_convert_format_t hl_format_from_path(const char *path) {
  if (hl_has_suffix(path, ".pb.gz")) return HL_OUT_PB_GZ;
  if (hl_has_suffix(path, ".pb")) return HL_OUT_PB;
  if (hl_has_suffix(path, ".hlo") || hl_has_suffix(path, ".txt")) return HL_OUT_TEXT;
  return HL_OUT_UNKNOWN;
}

// Returns 0 to go on, 1 after --help, 2 on a usage error (message printed).
static int hl_parse_args(int argc, char **argv, hl_convert_options_t *out) {
  *out = (hl_convert_options_t){.verify = true};
  const char *positional[2];
  int npos = 0;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!options_done && a[0] == '-' && a[1] != '\0') {
      if (strcmp(a, "--") == 0) {
        options_done = true;
      } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        fputs(kUsage, stdout);
        return 1;
      } else if (strcmp(a, "-f") == 0 || strcmp(a, "--force") == 0) {
        out->force = true;
      } else if (strcmp(a, "--no-verify") == 0) {
        out->verify = false;
      } else if (strcmp(a, "--max-inflated-size") == 0 ||
                 strncmp(a, "--max-inflated-size=", 20) == 0) {
        const char *v = a[19] == '=' ? a + 20 : (i + 1 < argc ? argv[++i] : NULL);
        hl_status_t st = v ? hl_program_parse_size("--max-inflated-size", v,
                                                   &out->load.max_inflated_bytes)
                           : HL_INVALID("--max-inflated-size needs a value");
        if (st) {
          fprintf(stderr, "hlo-convert: %s\n", hl_status_message(st));
          hl_status_free(st);
          return 2;
        }
      } else if (strcmp(a, "--fuse") == 0) {
        out->fuse = true;
      } else if (strcmp(a, "--explain-fusion") == 0) {
        out->fuse = out->explain_fusion = true;
      } else if (strcmp(a, "--partition") == 0) {
        out->partition = true;
      } else if (strcmp(a, "--partitions") == 0 || strncmp(a, "--partitions=", 13) == 0) {
        const char *v = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
        char *end = NULL;
        out->partitions = v ? strtoll(v, &end, 10) : 0;
        if (!v || *end || out->partitions < 1) {
          fprintf(stderr, "hlo-convert: --partitions needs a positive count\n");
          return 2;
        }
      } else if (strcmp(a, "--to") == 0 || strncmp(a, "--to=", 5) == 0) {
        const char *v = a[4] == '=' ? a + 5 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
          fprintf(stderr, "hlo-convert: --to needs a value (text, pb, pb.gz, module-pb)\n");
          return 2;
        }
        out->to = hl_format_from_name(v);
        if (out->to == HL_OUT_UNKNOWN) {
          fprintf(stderr, "hlo-convert: unknown --to '%s' (use text, pb, pb.gz or module-pb)\n",
                  v);
          return 2;
        }
      } else {
        fprintf(stderr, "hlo-convert: unknown option '%s' (see --help)\n", a);
        return 2;
      }
      continue;
    }
    if (npos == 2) {
      fprintf(stderr, "hlo-convert: too many arguments: '%s' (see --help)\n", a);
      return 2;
    }
    positional[npos++] = a;
  }
  if (npos != 2) {
    fprintf(stderr, "hlo-convert: expected IN and OUT\n%s", kUsage);
    return 2;
  }
  out->in_path = positional[0];
  out->out_path = positional[1];
  if (out->to == HL_OUT_UNKNOWN) {
    out->to = strcmp(out->out_path, "-") == 0 ? HL_OUT_TEXT : hl_format_from_path(out->out_path);
  }
  if (out->to == HL_OUT_UNKNOWN) {
    fprintf(stderr,
            "hlo-convert: cannot tell the output format from '%s': name it *.pb, *.pb.gz, "
            "*.hlo or *.txt, or pass --to\n",
            out->out_path);
    return 2;
  }
  return 0;
}

static hl_status_t hl_read_stream(FILE *f, const char *name, uint8_t **out_data,
                                  size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = hl_malloc(cap);
  if (!buf) return HL_OOM();
  for (;;) {
    if (len == cap) {
      uint8_t *grown = hl_realloc(buf, cap * 2);
      if (!grown) {
        hl_free(buf);
        return HL_OOM();
      }
      buf = grown;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  if (ferror(f)) {
    hl_free(buf);
    return HL_ERROR(HL_IO_ERROR, "%s: read failed", name);
  }
  *out_data = buf;
  *out_size = len;
  return NULL;
}

static hl_status_t hl_load(const char *path, const hl_program_load_options_t *load,
                           hl_program_t *out_program) {
  if (strcmp(path, "-") != 0) return hl_program_load_file_with(path, load, out_program);
  uint8_t *data;
  size_t size;
  HL_RETURN_IF_ERROR(hl_read_stream(stdin, "<stdin>", &data, &size));
  hl_status_t st = hl_program_load_bytes_with(data, size, "<stdin>", load, out_program);
  hl_free(data);
  return st;
}

// Reads a base-128 varint at *pos; false if it runs past `end`.
static bool hl_read_varint(const uint8_t *data, size_t end, size_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
    uint8_t b = data[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

// An HloProto that holds only its module is field 1 (hlo_module, wire type 2)
// wrapping the HloModuleProto bytes; peeling that one header gives the bare
// module message without a second encoder.
static hl_status_t hl_unwrap_module_proto(const uint8_t *data, size_t size, size_t *out_offset,
                                          size_t *out_length) {
  size_t pos = 0;
  uint64_t key, length;
  if (!hl_read_varint(data, size, &pos, &key) || key != ((1u << 3) | 2u) ||
      !hl_read_varint(data, size, &pos, &length) || length != size - pos) {
    return HL_INTERNAL_ERROR("encoded HloProto holds more than its hlo_module field");
  }
  *out_offset = pos;
  *out_length = (size_t)length;
  return NULL;
}

// gzip (RFC 1952) in memory; zlib writes mtime 0, so equal input gives equal bytes.
static hl_status_t hl_gzip(const uint8_t *data, size_t size, uint8_t **out_data,
                           size_t *out_size) {
  *out_data = NULL;
  if (size > UINT_MAX) return HL_UNIMPL("gzip output of more than 4 GiB");
  z_stream zs = {0};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    return HL_INTERNAL_ERROR("deflateInit2 failed");
  }
  size_t cap = deflateBound(&zs, size);
  uint8_t *buf = hl_malloc(cap ? cap : 1);
  if (!buf) {
    deflateEnd(&zs);
    return HL_OOM();
  }
  zs.next_in = (Bytef *)data;
  zs.avail_in = (uInt)size;
  zs.next_out = buf;
  zs.avail_out = (uInt)cap;
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    hl_free(buf);
    return HL_INTERNAL_ERROR("gzip compression failed (zlib code %d)", rc);
  }
  *out_data = buf;
  *out_size = produced;
  return NULL;
}

// The bytes of the module in the requested format. *out_owned is what the
// caller frees; *out_data may point into it.
static hl_status_t hl_render(const hl_module_t *module, hl_convert_format_t to,
                             uint8_t **out_owned, const uint8_t **out_data,
                             size_t *out_size) {
  *out_owned = NULL;
  if (to == HL_OUT_TEXT) {
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_status_t st = hl_print_hlo_module(module, &sb);
    size_t length = sb.length;
    char *text = st ? NULL : hl_strbuf_take(&sb);
    hl_strbuf_deinit(&sb);
    if (st) return st;
    if (!text) return HL_OOM();
    *out_owned = (uint8_t *)text;
    *out_data = *out_owned;
    *out_size = length;
    return NULL;
  }
  uint8_t *pb;
  size_t pb_size;
  HL_RETURN_IF_ERROR(hl_proto_encode_hlo_proto(module, &pb, &pb_size));
  hl_status_t st = NULL;
  if (to == HL_OUT_PB) {
    *out_owned = pb;
    *out_data = pb;
    *out_size = pb_size;
  } else if (to == HL_OUT_PB_GZ) {
    st = hl_gzip(pb, pb_size, out_owned, out_size);
    *out_data = *out_owned;
    hl_free(pb);
  } else {
    size_t offset = 0, length = 0;
    st = hl_unwrap_module_proto(pb, pb_size, &offset, &length);
    if (st) {
      hl_free(pb);
    } else {
      *out_owned = pb;
      *out_data = pb + offset;
      *out_size = length;
    }
  }
  return st;
}

static hl_status_t hl_write_all(FILE *f, const char *name, const uint8_t *data, size_t size) {
  if (size && fwrite(data, 1, size, f) != size) {
    return HL_ERROR(HL_IO_ERROR, "%s: write failed: %s", name, strerror(errno));
  }
  if (fflush(f) != 0) return HL_ERROR(HL_IO_ERROR, "%s: write failed: %s", name, strerror(errno));
  return NULL;
}

// Refuses to clobber the input (even with --force: a failed conversion
// would lose the program) and any existing file without --force.
static hl_status_t hl_check_output_path(const hl_convert_options_t *opts) {
  struct stat out_st, in_st;
  if (stat(opts->out_path, &out_st) != 0) return NULL;
  if (strcmp(opts->in_path, "-") != 0 && stat(opts->in_path, &in_st) == 0 &&
      in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
    return HL_INVALID("refusing to overwrite the input file '%s'", opts->in_path);
  }
  if (!opts->force) {
    return HL_INVALID("'%s' exists; pass --force to overwrite it", opts->out_path);
  }
  if (!S_ISREG(out_st.st_mode)) {
    return HL_INVALID("'%s' exists and is not a regular file", opts->out_path);
  }
  return NULL;
}

// Writes through a temporary file in OUT's folder and renames it, so OUT is
// either the old file or the complete new one.
static hl_status_t hl_write_file(const char *path, const uint8_t *data, size_t size) {
  hl_strbuf_t tmp;
  hl_strbuf_init(&tmp);
  hl_strbuf_appendf(&tmp, "%s.tmp.XXXXXX", path);
  char *tmp_path = hl_strbuf_take(&tmp);
  hl_strbuf_deinit(&tmp);
  if (!tmp_path) return HL_OOM();
  hl_status_t st = NULL;
  int fd = mkstemp(tmp_path);
  if (fd < 0) {
    st = HL_ERROR(HL_IO_ERROR, "%s: cannot create: %s", path, strerror(errno));
    hl_free(tmp_path);
    return st;
  }
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    st = HL_ERROR(HL_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  } else {
    st = hl_write_all(f, path, data, size);
    if (fclose(f) != 0 && !st) {
      st = HL_ERROR(HL_IO_ERROR, "%s: write failed: %s", path, strerror(errno));
    }
  }
  // mkstemp creates 0600; give the file the usual umask-derived mode.
  if (!st) {
    mode_t mask = umask(0);
    umask(mask);
    chmod(tmp_path, 0666 & ~mask);
    if (rename(tmp_path, path) != 0) {
      st = HL_ERROR(HL_IO_ERROR, "%s: cannot rename into place: %s", path, strerror(errno));
    }
  }
  if (st) unlink(tmp_path);
  hl_free(tmp_path);
  return st;
}

static hl_status_t hl_convert(const hl_convert_options_t *opts) {
  bool to_stdout = strcmp(opts->out_path, "-") == 0;
  if (!to_stdout) HL_RETURN_IF_ERROR(hl_check_output_path(opts));

  hl_program_t program;
  HL_RETURN_IF_ERROR(hl_load(opts->in_path, &opts->load, &program));
  hl_status_t st = NULL;
  if (opts->verify) {
    st = hl_verify_module(program.module);
    if (st) {
      st = hl_status_annotate(st, "verifying %s (pass --no-verify to convert anyway)",
                              opts->in_path);
    }
  }
  if (!st && program.argument_count > 0) {
    fprintf(stderr,
            "hlo-convert: note: the snapshot's %d argument(s) are not written; "
            "only the module is converted\n",
            program.argument_count);
  }
  hl_spmd_result_t parted = {0};
  if (!st && opts->partition) {
    long long n = opts->partitions ? opts->partitions : program.module->num_partitions;
    if (n < 1) st = HL_INVALID("--partition: the program does not say num_partitions; pass --partitions N");
    else  // the module's replica_count: every replica runs its own copy (groups per replica)
      st = hl_spmd_partition_grid(program.module, program.module->replica_count > 1 ? (int)program.module->replica_count : 1,
                                  (int)n, &parted);
  }
  if (!st && opts->fuse) {
    hl_strbuf_t why;
    hl_strbuf_init(&why);
    st = hl_fusion_pass_run(parted.module ? parted.module : program.module,
                            opts->explain_fusion ? &why : NULL, NULL);
    if (!st && opts->explain_fusion) fputs(hl_strbuf_cstr(&why), stderr);
    hl_strbuf_deinit(&why);
    if (!st && opts->verify) {
      st = hl_verify_module(parted.module ? parted.module : program.module);
      if (st) st = hl_status_annotate(st, "verifying the fused module");
    }
  }
  uint8_t *owned = NULL;
  const uint8_t *data = NULL;
  size_t size = 0;
  if (!st) st = hl_render(parted.module ? parted.module : program.module, opts->to, &owned, &data, &size);
  hl_spmd_result_deinit(&parted);
  if (!st) {
    st = to_stdout ? hl_write_all(stdout, "<stdout>", data, size)
                   : hl_write_file(opts->out_path, data, size);
  }
  hl_free(owned);
  hl_program_deinit(&program);
  return st;
}

int main(int argc, char **argv) {
  hl_convert_options_t opts;
  int rc = hl_parse_args(argc, argv, &opts);
  if (rc == 1) return 0;
  if (rc == 2) return 2;
  // hlo-convert runs no program: the fusion pass's checks would only queue
  // loops whose compile loads libLLVM in the background, and an exit during
  // that load runs libLLVM's exit-time destructors under it (a crash; see
  // jit_kernel.h, hl_jit_settle).
  hl_jit_set_enabled(false);
  hl_status_t st = hl_convert(&opts);
  if (st) {
    hl_status_report(st, stderr, "hlo-convert: error");
    return 1;
  }
  return 0;
}
