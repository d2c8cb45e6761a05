// --output-dir files (checked by numpy), the overwrite guards and the
// printed header line.
#include "launcher/outputs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/npy.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static char g_dir[256];

static int suite_init(void) { return hl_test_make_dir(g_dir, sizeof(g_dir), "outputs"); }

static int suite_clean(void) { return hl_test_remove_dir(g_dir); }

static hl_literal_t *make_literal(const char *shape_text, const char *value) {
  hl_shape_t s;
  HL_ASSERT_OK(hl_parse_shape(shape_text, &s));
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_parse_literal(value, &s, &lit));
  hl_shape_deinit(&s);
  return lit;
}

static void test_tuple_leaves_depth_first(void) {
  // ((f32[2], s32[]), pred[3], token[]) -> result0..2; the token has no file.
  hl_literal_t *a = make_literal("f32[2]", "{1.5, -2}");
  hl_literal_t *b = make_literal("s32[]", "7");
  hl_literal_t *c = make_literal("pred[3]", "{true, false, true}");
  hl_literal_t *tok = NULL, *inner = NULL, *outer = NULL;
  HL_ASSERT_OK(hl_literal_create_token(&tok));
  hl_literal_t *inner_parts[] = {a, b};
  HL_ASSERT_OK(hl_literal_create_tuple(inner_parts, 2, &inner));
  hl_literal_t *outer_parts[] = {inner, c, tok};
  HL_ASSERT_OK(hl_literal_create_tuple(outer_parts, 3, &outer));
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/out/nested", g_dir);  // created on the way
  hl_inputs_t none = {0};
  HL_ASSERT_OK(hl_outputs_write(dir, outer, 1, 2, &none));
  HL_ASSERT_OK(hl_outputs_write(dir, a, 0, 0, &none));  // non-tuple: result0.npy
  char cmd[4096];
  snprintf(cmd, sizeof(cmd),
           "/usr/bin/python3 -c \"import numpy as np, os; d = '%s/replica1_partition2/'; "
           "r = [np.load(d + 'result%%d.npy' %% i) for i in range(3)]; "
           "assert sorted(os.listdir(d)) == ['result0.npy', 'result1.npy', 'result2.npy']; "
           "assert r[0].dtype == np.float32 and list(r[0]) == [1.5, -2]; "
           "assert r[1].dtype == np.int32 and r[1].shape == () and r[1] == 7; "
           "assert r[2].dtype == np.bool_ and list(r[2]) == [True, False, True]; "
           "z = np.load('%s/replica0_partition0/result0.npy'); assert list(z) == [1.5, -2]\"",
           dir, dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  hl_literal_release(outer);
  hl_literal_release(inner);
  hl_literal_release(tok);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_literal_release(c);
}

static void test_never_overwrites_inputs(void) {
  char dir[512], input[600];
  snprintf(dir, sizeof(dir), "%s/same", g_dir);
  snprintf(input, sizeof(input), "%s/replica0_partition0/result0.npy", dir);
  hl_literal_t *a = make_literal("f32[2]", "{1, 2}");
  hl_inputs_t none = {0};
  HL_ASSERT_OK(hl_outputs_write(dir, a, 0, 0, &none));  // now an "input" file exists there
  char *files[] = {input};
  hl_inputs_t in = {.files = files, .file_count = 1};
  HL_ASSERT_ERROR_CONTAINS(hl_outputs_write(dir, a, 0, 0, &in),
                           "refusing to overwrite the input file");
  hl_literal_release(a);

  hl_launch_options_t o = {.output_dir = "x/in", .args_dir = "x/in"};
  HL_ASSERT_ERROR_CONTAINS(hl_outputs_check_options(&o), "--output-dir x/in is the --args-dir");
  o.output_dir = dir;  // the same directory under another spelling
  char other[600];
  snprintf(other, sizeof(other), "%s/./same/", g_dir);
  o.args_dir = other;
  HL_ASSERT_ERROR_CONTAINS(hl_outputs_check_options(&o), "is the --args-dir");
  o.args_dir = g_dir;
  HL_ASSERT_OK(hl_outputs_check_options(&o));
}

static void test_unwritable_directory(void) {
  char file[512];
  snprintf(file, sizeof(file), "%s/plainfile", g_dir);
  FILE *f = fopen(file, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fclose(f);
  hl_literal_t *a = make_literal("f32[]", "1");
  hl_inputs_t none = {0};
  HL_ASSERT_ERROR_CONTAINS(hl_outputs_write(file, a, 0, 0, &none), "plainfile");
  hl_literal_release(a);
  // The same problems found before anything runs, by the option check.
  hl_launch_options_t o = {.output_dir = file};
  HL_ASSERT_ERROR_CONTAINS(hl_outputs_check_options(&o), "exists and is not a directory");
  char below[600];
  snprintf(below, sizeof(below), "%s/plainfile/sub/dir/", g_dir);
  o.output_dir = below;
  char want[700];
  snprintf(want, sizeof(want), "cannot be created: %s is not a directory", file);
  HL_ASSERT_ERROR_CONTAINS(hl_outputs_check_options(&o), want);
  // Missing directories below a writable one are fine (created later).
  snprintf(below, sizeof(below), "%s/new/a/b", g_dir);
  HL_ASSERT_OK(hl_outputs_check_options(&o));
  o.output_dir = "relative/not/there/yet";
  HL_ASSERT_OK(hl_outputs_check_options(&o));
}

static void test_format(void) {
  hl_literal_t *a = make_literal("s32[2]", "{3, 4}");
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_outputs_format(a, 1, 0, 2, &sb);
  const char *text = hl_strbuf_cstr(&sb);
  CU_ASSERT_EQUAL(strncmp(text, "== replica 1, partition 0 (rank 2) ==\ns32[2] {3, 4}", 51), 0);
  CU_ASSERT_EQUAL(text[sb.length - 1], '\n');
  hl_strbuf_deinit(&sb);
  hl_literal_release(a);
}

static CU_TestInfo tests[] = {
    {"tuple_leaves_depth_first", test_tuple_leaves_depth_first},
    {"never_overwrites_inputs", test_never_overwrites_inputs},
    {"unwritable_directory", test_unwritable_directory},
    {"format", test_format},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN_WITH_FIXTURES("outputs", suite_init, suite_clean, tests)
