// Channel kernels (runtime/kernels/channels.c) in one process: host
// transfers through an infeed queue and outfeed files, routes without a
// peer, a self-channel through a fake communicator (which checks that each
// -done waits for its own start), and the errors.
// hl-test-libs: hl_text hl_verifier hl_exec hl_ir hl_base
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/comm/channels.h"
#include "runtime/exec/executor.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "tests/unit/test_util.h"

static hl_status_t run(const char *text, hl_channel_env_t *env, hl_comm_t *comm,
                       hl_literal_t **out) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_exec_options_t o = {.comm = comm, .channels = env};
  hl_status_t st = hl_execute(m, &o, NULL, 0, out);
  hl_module_destroy(m);
  return st;
}

static hl_literal_t *f32_vec(int n, const float *v) {
  int64_t dims[1] = {n};
  hl_shape_t s = hl_shape_array(HL_F32, 1, dims);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  memcpy(lit->data, v, sizeof(float) * (size_t)n);
  return lit;
}

static const char kHost[] =
    "HloModule m\n"
    "ENTRY main {\n"
    "  tok = token[] after-all()\n"
    "  feed = (f32[2], token[]) infeed(tok)\n"
    "  a = f32[2] get-tuple-element(feed), index=0\n"
    "  t2 = token[] get-tuple-element(feed), index=1\n"
    "  hr = (f32[2], u32[], token[]) recv(t2), channel_id=5, is_host_transfer=true\n"
    "  hrd = (f32[2], token[]) recv-done(hr), channel_id=5, is_host_transfer=true\n"
    "  b = f32[2] get-tuple-element(hrd), index=0\n"
    "  s = f32[2] add(a, b)\n"
    "  of = token[] outfeed(s, t2), outfeed_shape=f32[2]{0}\n"
    "  hs = (f32[2], u32[], token[]) send(b, of), channel_id=6, is_host_transfer=true\n"
    "  hsd = token[] send-done(hs), channel_id=6, is_host_transfer=true\n"
    "  ROOT p = f32[2] multiply(a, b)\n"
    "}\n";

static void test_host_transfers(void) {
  char dir[] = "/tmp/hl-test-channels-XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  const float a[2] = {1.5f, 2}, b[2] = {10, -4};
  hl_literal_t *feed[2] = {f32_vec(2, a), f32_vec(2, b)};
  hl_channel_env_t env = {.infeed = feed, .infeed_count = 2, .outfeed_dir = dir};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run(kHost, &env, NULL, &out));
  const float *p = out->data;
  CU_ASSERT_EQUAL(p[0], 15.0f);  // 1.5 * 10
  CU_ASSERT_EQUAL(p[1], -8.0f);  // 2 * -4
  CU_ASSERT_EQUAL(env.infeed_next, 2);
  CU_ASSERT_EQUAL(env.outfeed_next, 2);
  char path[256];
  hl_literal_t *o0 = NULL, *o1 = NULL;
  snprintf(path, sizeof(path), "%s/outfeed0.npy", dir);
  HL_ASSERT_OK(hl_npy_read_file(path, NULL, NULL, &o0));
  CU_ASSERT_EQUAL(((float *)o0->data)[0], 11.5f);  // a + b
  CU_ASSERT_EQUAL(((float *)o0->data)[1], -2.0f);
  unlink(path);
  snprintf(path, sizeof(path), "%s/outfeed1.npy", dir);
  HL_ASSERT_OK(hl_npy_read_file(path, NULL, NULL, &o1));
  CU_ASSERT_EQUAL(((float *)o1->data)[1], -4.0f);  // b, by the host send
  unlink(path);
  rmdir(dir);
  hl_literal_release(o0);
  hl_literal_release(o1);
  hl_literal_release(out);
  hl_literal_release(feed[0]);
  hl_literal_release(feed[1]);
}

static void test_host_transfer_errors(void) {
  const float a[3] = {1, 2, 3};
  hl_literal_t *feed[1] = {f32_vec(3, a)};
  hl_channel_env_t env = {.infeed = feed, .infeed_count = 1};
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(run(kHost, &env, NULL, &out), "infeed expects f32[2], but infeed "
                                                         "value 0 is f32[3]");
  HL_ASSERT_ERROR_CONTAINS(run(kHost, NULL, NULL, &out), "no --infeed files were given");
  const float two[2] = {1, 2};
  hl_literal_t *ok[2] = {f32_vec(2, two), f32_vec(2, two)};
  hl_channel_env_t env2 = {.infeed = ok, .infeed_count = 2};
  HL_ASSERT_ERROR_CONTAINS(run(kHost, &env2, NULL, &out), "outfeed writes to the host, but no "
                                                          "--outfeed-dir was given");
  CU_ASSERT_PTR_NULL(out);
  hl_literal_release(feed[0]);
  hl_literal_release(ok[0]);
  hl_literal_release(ok[1]);
}

// Channel 1 from this process to itself; channel 2 too, in the legacy
// (data, token) form matched by channel id. recv-done.1 comes before the
// sends in IR order.
static const char kSelf[] =
    "HloModule m\n"
    "ENTRY main {\n"
    "  x = f32[2] constant({3, 4})\n"
    "  y = f32[2] constant({5, 6})\n"
    "  tok = token[] after-all()\n"
    "  r1 = (f32[2], u32[], token[]) recv(tok), channel_id=1\n"
    "  r2 = (f32[2], token[]) recv(tok), channel_id=2\n"
    "  rd1 = (f32[2], token[]) recv-done(r1), channel_id=1\n"
    "  s2 = (f32[2], token[]) send(y, tok), channel_id=2\n"
    "  s1 = (f32[2], u32[], token[]) send(x, tok), channel_id=1\n"
    "  rd2 = (f32[2], token[]) recv-done(r2), channel_id=2\n"
    "  sd1 = token[] send-done(s1), channel_id=1\n"
    "  sd2 = token[] send-done(s2), channel_id=2\n"
    "  d1 = f32[2] get-tuple-element(rd1), index=0\n"
    "  d2 = f32[2] get-tuple-element(rd2), index=0\n"
    "  ROOT t = (f32[2], f32[2]) tuple(d1, d2)\n"
    "}\n";

// A fake transport: sends park their data by tag; a recv's wait copies the
// parked data of its tag, so a wait before the matching send is an error
// (the deadlock a real transport would have).
typedef struct fake_req {
  bool is_recv;
  int64_t tag;
  void *data;
  size_t bytes;
} fake_req_t;

static const void *g_parked[8];
static size_t g_parked_bytes[8];
static int g_waits;

static hl_status_t fake_send(hl_comm_t *c, int peer, int64_t tag, const void *data, size_t bytes,
                             hl_comm_request_t **out) {
  CU_ASSERT_EQUAL(peer, 0);
  g_parked[tag] = data;
  g_parked_bytes[tag] = bytes;
  fake_req_t *r = hl_calloc(1, sizeof(*r));
  r->tag = tag;
  *out = (hl_comm_request_t *)r;
  return NULL;
}

static hl_status_t fake_recv(hl_comm_t *c, int peer, int64_t tag, void *data, size_t bytes,
                             hl_comm_request_t **out) {
  fake_req_t *r = hl_calloc(1, sizeof(*r));
  *r = (fake_req_t){true, tag, data, bytes};
  *out = (hl_comm_request_t *)r;
  return NULL;
}

static hl_status_t fake_wait(hl_comm_t *c, hl_comm_request_t *req) {
  fake_req_t *r = (fake_req_t *)req;
  hl_status_t st = NULL;
  g_waits++;
  if (r->is_recv) {
    if (!g_parked[r->tag])
      st = HL_INVALID("recv on tag %lld waited before its send started", (long long)r->tag);
    else
      memcpy(r->data, g_parked[r->tag], r->bytes < g_parked_bytes[r->tag] ? r->bytes
                                                                          : g_parked_bytes[r->tag]);
  }
  hl_free(r);
  return st;
}

static const hl_comm_vtable_t kFake = {
    .send = fake_send, .recv = fake_recv, .channel_wait = fake_wait};

static void test_self_channel(void) {
  memset(g_parked, 0, sizeof(g_parked));
  g_waits = 0;
  hl_comm_t comm = {.vtable = &kFake, .rank = 0, .size = 1};
  hl_channel_route_t routes[] = {{1, HL_CHANNEL_SEND, 0}, {1, HL_CHANNEL_RECV, 0},
                                 {2, HL_CHANNEL_SEND, 0}, {2, HL_CHANNEL_RECV, 0}};
  hl_channel_env_t env = {.routes = routes, .route_count = 4};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run(kSelf, &env, &comm, &out));
  const float *d1 = out->elements[0]->data, *d2 = out->elements[1]->data;
  CU_ASSERT_EQUAL(d1[0], 3.0f);
  CU_ASSERT_EQUAL(d1[1], 4.0f);
  CU_ASSERT_EQUAL(d2[0], 5.0f);
  CU_ASSERT_EQUAL(d2[1], 6.0f);
  CU_ASSERT_EQUAL(g_waits, 4);  // every start waited for exactly once
  hl_literal_release(out);
}

// The pipelined shape: each recv / send starts at the end of one iteration
// (or before the loop) and its -done runs in the next one, the start's
// value carried in the loop state; the u32 context finds the transfer.
static const char kAcrossIterations[] =
    "HloModule m\n"
    "cond {\n"
    "  p = (s32[], (f32[2], u32[], token[]), (f32[2], u32[], token[])) parameter(0)\n"
    "  c = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(3)\n"
    "  ROOT lt = pred[] compare(c, n), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[], (f32[2], u32[], token[]), (f32[2], u32[], token[])) parameter(0)\n"
    "  c = s32[] get-tuple-element(p), index=0\n"
    "  r0 = (f32[2], u32[], token[]) get-tuple-element(p), index=1\n"
    "  s0 = (f32[2], u32[], token[]) get-tuple-element(p), index=2\n"
    "  rd = (f32[2], token[]) recv-done(r0), channel_id=1\n"
    "  sd = token[] send-done(s0), channel_id=1\n"
    "  d = f32[2] get-tuple-element(rd), index=0\n"
    "  one = f32[] constant(1)\n"
    "  ones = f32[2] broadcast(one), dimensions={}\n"
    "  next = f32[2] add(d, ones)\n"
    "  tok = token[] after-all(sd)\n"
    "  r = (f32[2], u32[], token[]) recv(tok), channel_id=1\n"
    "  s = (f32[2], u32[], token[]) send(next, tok), channel_id=1\n"
    "  i1 = s32[] constant(1)\n"
    "  c1 = s32[] add(c, i1)\n"
    "  ROOT t = (s32[], (f32[2], u32[], token[]), (f32[2], u32[], token[])) tuple(c1, r, s)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[2] constant({1, 2})\n"
    "  z = s32[] constant(0)\n"
    "  tok = token[] after-all()\n"
    "  r = (f32[2], u32[], token[]) recv(tok), channel_id=1\n"
    "  s = (f32[2], u32[], token[]) send(x, tok), channel_id=1\n"
    "  init = (s32[], (f32[2], u32[], token[]), (f32[2], u32[], token[])) tuple(z, r, s)\n"
    "  w = (s32[], (f32[2], u32[], token[]), (f32[2], u32[], token[])) while(init),\n"
    "    condition=cond, body=body\n"
    "  rl = (f32[2], u32[], token[]) get-tuple-element(w), index=1\n"
    "  sl = (f32[2], u32[], token[]) get-tuple-element(w), index=2\n"
    "  rdl = (f32[2], token[]) recv-done(rl), channel_id=1\n"
    "  sdl = token[] send-done(sl), channel_id=1\n"
    "  ROOT out = f32[2] get-tuple-element(rdl), index=0\n"
    "}\n";

static void test_transfers_across_iterations(void) {
  memset(g_parked, 0, sizeof(g_parked));
  g_waits = 0;
  hl_comm_t comm = {.vtable = &kFake, .rank = 0, .size = 1};
  hl_channel_route_t routes[] = {{1, HL_CHANNEL_SEND, 0}, {1, HL_CHANNEL_RECV, 0}};
  hl_channel_env_t env = {.routes = routes, .route_count = 2};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run(kAcrossIterations, &env, &comm, &out));
  const float *d = out->data;
  CU_ASSERT_EQUAL(d[0], 4.0f);  // x + 3 after three iterations of +1
  CU_ASSERT_EQUAL(d[1], 5.0f);
  CU_ASSERT_EQUAL(g_waits, 8);  // 4 sends and 4 recvs, each waited for once
  hl_literal_release(out);
}

static void test_no_peer_and_no_route(void) {
  // Not in any pair: the send goes nowhere, the recv gives zeros.
  hl_channel_route_t routes[] = {{1, HL_CHANNEL_SEND, -1}, {1, HL_CHANNEL_RECV, -1},
                                 {2, HL_CHANNEL_SEND, -1}, {2, HL_CHANNEL_RECV, -1}};
  hl_channel_env_t env = {.routes = routes, .route_count = 4};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run(kSelf, &env, NULL, &out));
  const float *d1 = out->elements[0]->data;
  CU_ASSERT_EQUAL(d1[0], 0.0f);
  CU_ASSERT_EQUAL(d1[1], 0.0f);
  hl_literal_release(out);
  hl_channel_env_t partial = {.routes = routes, .route_count = 1};
  HL_ASSERT_ERROR_CONTAINS(run(kSelf, &partial, NULL, &out), "channel 1: no recv route");
  hl_channel_route_t remote[] = {{1, HL_CHANNEL_RECV, 3}};
  hl_channel_env_t needs_comm = {.routes = remote, .route_count = 1};
  HL_ASSERT_ERROR_CONTAINS(run(kSelf, &needs_comm, NULL, &out), "needs a communicator");
}

static CU_TestInfo tests[] = {
    {"host_transfers", test_host_transfers},
    {"host_transfer_errors", test_host_transfer_errors},
    {"self_channel", test_self_channel},
    {"transfers_across_iterations", test_transfers_across_iterations},
    {"no_peer_and_no_route", test_no_peer_and_no_route},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("channels", tests)
