// Loading a program by content (runtime/proto/program_loader.c): gzip,
// HLO text, HloProto, HloModuleProto and HloSnapshot.
// hl-test-libs: hl_loader hl_proto hl_text
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "hlo.pb-c.h"
#include "runtime/base/alloc.h"
#include "runtime/loader/program_loader.h"
#include "runtime/proto/proto_io.h"
#include "test_util.h"

#define FIXTURE HL_SOURCE_DIR "/tests/programs/wire_fixture.hlo.pb"

static const char kText[] =
    "// a comment first\n"
    "/* and a block comment */\n"
    "HloModule negate_mod\n\n"
    "ENTRY main {\n"
    "  p = f32[2]{0} parameter(0)\n"
    "  ROOT n = f32[2]{0} negate(p)\n"
    "}\n";

static char tmpdir[64];

static int setup(void) {
  strcpy(tmpdir, "/tmp/hl_program_loader_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : 1;
}

static int teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : 1;
}

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void write_gzip(const char *path, const uint8_t *d, size_t n) {
  gzFile gz = gzopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(gz);
  CU_ASSERT_EQUAL(gzwrite(gz, d, (unsigned)n), (int)n);
  gzclose(gz);
}

static void test_binary_hlo_proto_file(void) {
  hl_program_t p;
  HL_ASSERT_OK(hl_program_load_file(FIXTURE, &p));
  CU_ASSERT_EQUAL(p.format, HL_FORMAT_HLO_PROTO);
  CU_ASSERT(!p.gzipped);
  CU_ASSERT_STRING_EQUAL(p.module->name, "wire_fixture");
  CU_ASSERT_STRING_EQUAL(p.module->entry->name, "main");
  CU_ASSERT_STRING_EQUAL(p.module->source_path, FIXTURE);
  CU_ASSERT_PTR_NULL(p.arguments);
  hl_program_deinit(&p);
  CU_ASSERT_PTR_NULL(p.module);
}

static void test_gzip_loads_like_raw(void) {
  size_t n = 0;
  uint8_t *raw = hl_test_read_file(FIXTURE, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
  char path[128], path2[128];
  tmp_path(path, sizeof(path), "fixture.hlo.pb.gz");
  tmp_path(path2, sizeof(path2), "no_suffix.bin");  // content decides, not the name
  write_gzip(path, raw, n);
  write_gzip(path2, raw, n);
  hl_program_t a, b, c;
  HL_ASSERT_OK(hl_program_load_bytes(raw, n, "raw", &a));
  HL_ASSERT_OK(hl_program_load_file(path, &b));
  HL_ASSERT_OK(hl_program_load_file(path2, &c));
  CU_ASSERT(!a.gzipped && b.gzipped && c.gzipped);
  CU_ASSERT_EQUAL(b.format, HL_FORMAT_HLO_PROTO);
  CU_ASSERT_EQUAL(c.format, HL_FORMAT_HLO_PROTO);
  // Same program: identical encodings.
  uint8_t *ea, *eb, *ec;
  size_t na, nb, nc;
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(a.module, &ea, &na));
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(b.module, &eb, &nb));
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(c.module, &ec, &nc));
  CU_ASSERT(na == nb && memcmp(ea, eb, na) == 0);
  CU_ASSERT(na == nc && memcmp(ea, ec, na) == 0);
  hl_free(ea);
  hl_free(eb);
  hl_free(ec);
  hl_program_deinit(&a);
  hl_program_deinit(&b);
  hl_program_deinit(&c);

  // Every truncation of the gzip file gives a status.
  size_t gn = 0;
  uint8_t *gz = hl_test_read_file(path, &gn);
  CU_ASSERT_PTR_NOT_NULL_FATAL(gz);
  for (size_t k = 0; k < gn; k++) {
    uint8_t *cut = malloc(k ? k : 1);
    memcpy(cut, gz, k);
    hl_program_t t;
    hl_status_t st = hl_program_load_bytes(cut, k, "cut.gz", &t);
    CU_ASSERT_PTR_NOT_NULL(st);  // the gzip trailer (CRC, size) is missing
    hl_status_free(st);
    CU_ASSERT_PTR_NULL(t.module);
    free(cut);
  }
  // A corrupted deflate stream is an error, not a crash.
  gz[gn / 2] ^= 0xff;
  gz[gn / 2 + 1] ^= 0x5a;
  hl_program_t t;
  hl_status_t st = hl_program_load_bytes(gz, gn, "bad.gz", &t);
  if (st) hl_status_free(st);
  else hl_program_deinit(&t);
  free(gz);
  free(raw);
}

// A gzip bomb stops at the inflate limit with a message naming the option;
// the same bytes load under a limit they fit in (the boundary included).
static void test_gzip_inflate_limit(void) {
  size_t text_n = strlen(kText), pad = 1 << 20, n = text_n + pad;
  uint8_t *plain = malloc(n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
  memcpy(plain, kText, text_n);
  memset(plain + text_n, ' ', pad);  // trailing blanks: still valid HLO text
  char path[128];
  tmp_path(path, sizeof(path), "padded.hlo.gz");
  write_gzip(path, plain, n);
  free(plain);
  hl_program_t p;
  hl_program_load_options_t small = {.max_inflated_bytes = 65536};
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_file_with(path, &small, &p),
                           "padded.hlo.gz: the gzip data inflates to more than 64.0 KiB (the "
                           "--max-inflated-size limit); a genuine program this large needs a "
                           "higher --max-inflated-size");
  CU_ASSERT_PTR_NULL(p.module);
  hl_program_load_options_t exact = {.max_inflated_bytes = n};
  HL_ASSERT_OK(hl_program_load_file_with(path, &exact, &p));
  CU_ASSERT_STRING_EQUAL(p.module->name, "negate_mod");
  hl_program_deinit(&p);
  hl_program_load_options_t one_less = {.max_inflated_bytes = n - 1};
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_file_with(path, &one_less, &p), "inflates to more");
  // The default is half the available memory, never below 64 MiB: below the
  // machine's total.
  uint64_t def = hl_program_default_inflate_limit();
  CU_ASSERT(def >= (64u << 20));
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  CU_ASSERT(def <= (uint64_t)pages * (uint64_t)page / 2 || def == (64u << 20));
  HL_ASSERT_OK(hl_program_load_file(path, &p));  // 1 MiB is far below it
  hl_program_deinit(&p);
}

static void test_parse_size(void) {
  uint64_t v = 0;
  HL_ASSERT_OK(hl_program_parse_size("--x", "4096", &v));
  CU_ASSERT_EQUAL(v, 4096);
  HL_ASSERT_OK(hl_program_parse_size("--x", "3K", &v));
  CU_ASSERT_EQUAL(v, 3 * 1024);
  HL_ASSERT_OK(hl_program_parse_size("--x", "5MiB", &v));
  CU_ASSERT_EQUAL(v, 5ull << 20);
  HL_ASSERT_OK(hl_program_parse_size("--x", "2GB", &v));
  CU_ASSERT_EQUAL(v, 2ull << 30);
  HL_ASSERT_OK(hl_program_parse_size("--x", "1T", &v));
  CU_ASSERT_EQUAL(v, 1ull << 40);
  const char *bad[] = {"", "0", "-1", "1X", "1KK", "K", "99999999999999999999", "16777216T"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    HL_ASSERT_ERROR_CONTAINS(hl_program_parse_size("--x", bad[i], &v),
                             "--x needs a positive size in bytes");
}

static void test_truncated_gzip_message(void) {
  size_t n = 0;
  uint8_t *raw = hl_test_read_file(FIXTURE, &n);
  char path[128];
  tmp_path(path, sizeof(path), "t.gz");
  write_gzip(path, raw, n);
  size_t gn = 0;
  uint8_t *gz = hl_test_read_file(path, &gn);
  hl_program_t p;
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes(gz, gn - 12, "t.gz", &p), "truncated gzip");
  free(gz);
  free(raw);
}

static void test_module_and_snapshot_bytes(void) {
  size_t n = 0;
  uint8_t *raw = hl_test_read_file(FIXTURE, &n);
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, n, raw);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hp);
  // Bare module.
  size_t mn = xla__hlo_module_proto__get_packed_size(hp->hlo_module);
  uint8_t *mod = malloc(mn);
  xla__hlo_module_proto__pack(hp->hlo_module, mod);
  hl_program_t p;
  HL_ASSERT_OK(hl_program_load_bytes(mod, mn, "module.pb", &p));
  CU_ASSERT_EQUAL(p.format, HL_FORMAT_MODULE_PROTO);
  CU_ASSERT_STRING_EQUAL(p.module->entry->name, "main");
  hl_program_deinit(&p);
  // Snapshot with two arguments: f32[2,3]{0,1} (column-major) and s32[].
  Xla__HloSnapshot snap = XLA__HLO_SNAPSHOT__INIT;
  snap.hlo = hp;
  Xla__LiteralProto a0 = XLA__LITERAL_PROTO__INIT, a1 = XLA__LITERAL_PROTO__INIT;
  Xla__LiteralProto *args[2] = {&a0, &a1};
  float x[6] = {1, 4, 2, 5, 3, 6};  // [[1,2,3],[4,5,6]] stored column-major
  a0.shape = hp->hlo_module->host_program_shape->parameters[0];
  a0.n_f32s = 6;
  a0.f32s = x;
  Xla__ShapeProto s32 = XLA__SHAPE_PROTO__INIT;
  Xla__LayoutProto lay = XLA__LAYOUT_PROTO__INIT;
  s32.element_type = XLA__PRIMITIVE_TYPE__S32;
  s32.layout = &lay;
  int32_t seven = 7;
  a1.shape = &s32;
  a1.n_s32s = 1;
  a1.s32s = &seven;
  snap.n_arguments = 2;
  snap.arguments = args;
  size_t sn = xla__hlo_snapshot__get_packed_size(&snap);
  uint8_t *sb = malloc(sn);
  xla__hlo_snapshot__pack(&snap, sb);
  HL_ASSERT_OK(hl_program_load_bytes(sb, sn, "snap.pb", &p));
  CU_ASSERT_EQUAL(p.format, HL_FORMAT_SNAPSHOT);
  CU_ASSERT_EQUAL_FATAL(p.argument_count, 2);
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(hl_literal_get_f64(p.arguments[0], i), i + 1);
  CU_ASSERT_EQUAL(hl_literal_get_s64(p.arguments[1], 0), 7);
  hl_program_deinit(&p);
  CU_ASSERT_EQUAL(p.argument_count, 0);
  snap.hlo = NULL;  // not owned by the snapshot struct
  free(sb);
  free(mod);
  xla__hlo_proto__free_unpacked(hp, NULL);
  free(raw);
}

static void test_text_detection(void) {
  hl_program_t p;
  HL_ASSERT_OK(hl_program_load_bytes((const uint8_t *)kText, strlen(kText), "t.hlo", &p));
  CU_ASSERT_EQUAL(p.format, HL_FORMAT_HLO_TEXT);
  CU_ASSERT_STRING_EQUAL(p.module->name, "negate_mod");
  CU_ASSERT_EQUAL(p.module->entry->root->opcode, HL_OP_NEGATE);
  hl_program_deinit(&p);
  // Without a header, starting with ENTRY.
  const char *entry_first = "\n  ENTRY e {\n p = s32[] parameter(0)\n ROOT r = s32[] abs(p)\n}\n";
  HL_ASSERT_OK(hl_program_load_bytes((const uint8_t *)entry_first, strlen(entry_first), "e.hlo",
                                     &p));
  CU_ASSERT_EQUAL(p.format, HL_FORMAT_HLO_TEXT);
  hl_program_deinit(&p);
  // Gzipped text.
  char path[128];
  tmp_path(path, sizeof(path), "text.hlo.gz");
  write_gzip(path, (const uint8_t *)kText, strlen(kText));
  HL_ASSERT_OK(hl_program_load_file(path, &p));
  CU_ASSERT_EQUAL(p.format, HL_FORMAT_HLO_TEXT);
  CU_ASSERT(p.gzipped);
  hl_program_deinit(&p);
  // Text errors come from the parser, with the file name.
  const char *bad = "HloModule m\nENTRY main {\n ROOT x = f32[ parameter(0)\n}\n";
  hl_status_t st = hl_program_load_bytes((const uint8_t *)bad, strlen(bad), "bad.hlo", &p);
  CU_ASSERT_PTR_NOT_NULL(st);
  HL_ASSERT_ERROR_CONTAINS(st, "bad.hlo");
  CU_ASSERT_PTR_NULL(p.module);
}

static void test_not_a_program(void) {
  hl_program_t p;
  const char *msg = "not an HLO program: junk.bin is neither HLO text nor an HloProto / "
                    "HloModuleProto / HloSnapshot";
  const char *junk = "hello world, this is prose";
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes((const uint8_t *)junk, strlen(junk), "junk.bin",
                                                 &p),
                           msg);
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes(NULL, 0, "junk.bin", &p), msg);
  // Text-like start but a NUL byte inside: not text, and not a proto either.
  const char nul[] = "HloModule m\0\0\0";
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes((const uint8_t *)nul, sizeof(nul), "junk.bin",
                                                 &p),
                           msg);
  const uint8_t bin[] = {0xff, 0xfe, 0x00, 0x12, 0x99};
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes(bin, sizeof(bin), "junk.bin", &p), msg);
  hl_status_t st = hl_program_load_file("/nonexistent/dir/prog.hlo", &p);
  CU_ASSERT_EQUAL(hl_status_code(st), HL_IO_ERROR);
  HL_ASSERT_ERROR_CONTAINS(st, "/nonexistent/dir/prog.hlo");
}

static void test_format_names(void) {
  CU_ASSERT_STRING_EQUAL(hl_program_format_name(HL_FORMAT_HLO_TEXT), "HLO text");
  CU_ASSERT_STRING_EQUAL(hl_program_format_name(HL_FORMAT_HLO_PROTO), "HloProto");
  CU_ASSERT_STRING_EQUAL(hl_program_format_name(HL_FORMAT_MODULE_PROTO), "HloModuleProto");
  CU_ASSERT_STRING_EQUAL(hl_program_format_name(HL_FORMAT_SNAPSHOT), "HloSnapshot");
  CU_ASSERT_STRING_EQUAL(hl_program_format_name(HL_FORMAT_STABLEHLO_BYTECODE),
                         "StableHLO portable artifact (MLIR bytecode)");
}

// The bytecode magic routes to the bytecode reader, whose errors name the file.
static void test_bytecode_detection(void) {
  hl_program_t p;
  const uint8_t newer[] = {'M', 'L', 0xEF, 'R', 0x0F, 'x', 0};
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes(newer, sizeof(newer), "m.mlirbc", &p),
                           "m.mlirbc: MLIR bytecode version 7 is newer");
  const uint8_t cut[] = {'M', 'L', 0xEF, 'R', 0x0D};
  HL_ASSERT_ERROR_CONTAINS(hl_program_load_bytes(cut, sizeof(cut), "cut.mlirbc", &p),
                           "cut.mlirbc: MLIR bytecode: producer string is not NUL-terminated");
}

static CU_TestInfo tests[] = {
    {"binary_hlo_proto_file", test_binary_hlo_proto_file},
    {"gzip_loads_like_raw", test_gzip_loads_like_raw},
    {"truncated_gzip_message", test_truncated_gzip_message},
    {"gzip_inflate_limit", test_gzip_inflate_limit},
    {"parse_size", test_parse_size},
    {"module_and_snapshot_bytes", test_module_and_snapshot_bytes},
    {"text_detection", test_text_detection},
    {"not_a_program", test_not_a_program},
    {"format_names", test_format_names},
    {"bytecode_detection", test_bytecode_detection},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN_WITH_FIXTURES("program_loader", setup, teardown, tests)
