// XLA typed-FFI handlers from shared libraries: the API table, library
// loading and the call of a handler on a custom-call's buffers.
#include "runtime/custom_calls/ffi_plugin.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/ffi_call_attrs.h"
#include "runtime/custom_calls/frame.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

struct XLA_FFI_Error {
  XLA_FFI_Error_Code code;
  char *message;
};

static XLA_FFI_Error *make_error(XLA_FFI_Error_Code code, const char *message) {
  XLA_FFI_Error *e = malloc(sizeof(*e));
  if (!e) return NULL;  // the caller cannot be told; XLA does the same on OOM
  e->code = code;
  e->message = strdup(message ? message : "");
  return e;
}

static XLA_FFI_Error *api_error_create(XLA_FFI_Error_Create_Args *args) {
  return make_error(args->errc, args->message);
}

static void api_error_get_message(XLA_FFI_Error_GetMessage_Args *args) {
  args->message = args->error && args->error->message ? args->error->message : "";
}

static void api_error_destroy(XLA_FFI_Error_Destroy_Args *args) {
  if (!args->error) return;
  free(args->error->message);
  free(args->error);
}

//===----------------------------------------------------------------------===//
// Host services
//===----------------------------------------------------------------------===//

static XLA_FFI_Error *unavailable(const char *what) {
  char msg[200];
  snprintf(msg, sizeof(msg), "%s is not provided by hlo-launch (see docs/CUSTOM_CALLS.md)", what);
  return make_error(XLA_FFI_Error_Code_UNIMPLEMENTED, msg);
}

static XLA_FFI_Error *api_stream_get(XLA_FFI_Stream_Get_Args *args) {
  (void)args;
  return unavailable("XLA_FFI_Stream_Get (no device stream on the Host platform)");
}

static int64_t g_next_type_id = 1;

static XLA_FFI_Error *api_type_id_register(XLA_FFI_TypeId_Register_Args *args) {
  args->type_id->type_id = g_next_type_id++;
  return NULL;
}

static XLA_FFI_Error *api_context_get(XLA_FFI_ExecutionContext_Get_Args *args) {
  (void)args;
  return make_error(XLA_FFI_Error_Code_NOT_FOUND,
                    "hlo-launch passes no user data in the execution context");
}

static XLA_FFI_Error *api_state_set(XLA_FFI_State_Set_Args *args) {
  (void)args;
  return unavailable("XLA_FFI_State_Set (handler state needs the instantiate stage)");
}

static XLA_FFI_Error *api_state_get(XLA_FFI_State_Get_Args *args) {
  (void)args;
  return unavailable("XLA_FFI_State_Get (handler state needs the instantiate stage)");
}

// On the Host platform device memory is host memory.
static XLA_FFI_Error *api_memory_allocate(XLA_FFI_DeviceMemory_Allocate_Args *args) {
  size_t align = args->alignment < sizeof(void *) ? sizeof(void *) : args->alignment;
  void *p = NULL;
  if ((align & (align - 1)) != 0 || posix_memalign(&p, align, args->size ? args->size : 1) != 0)
    return make_error(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "host allocation failed");
  args->data = p;
  return NULL;
}

static XLA_FFI_Error *api_memory_free(XLA_FFI_DeviceMemory_Free_Args *args) {
  free(args->data);
  return NULL;
}

// The header allows running tasks in the caller's thread.
static XLA_FFI_Error *api_schedule(XLA_FFI_ThreadPool_Schedule_Args *args) {
  args->task(args->data);
  return NULL;
}

static XLA_FFI_Error *api_future_create(XLA_FFI_Future_Create_Args *args) {
  (void)args;
  return unavailable("XLA_FFI_Future_Create (handlers run synchronously)");
}

static XLA_FFI_Error *api_future_set_available(XLA_FFI_Future_SetAvailable_Args *args) {
  (void)args;
  return unavailable("XLA_FFI_Future_SetAvailable");
}

static XLA_FFI_Error *api_future_set_error(XLA_FFI_Future_SetError_Args *args) {
  (void)args;
  return unavailable("XLA_FFI_Future_SetError");
}

static XLA_FFI_Error *api_handler_register(XLA_FFI_Handler_Register_Args *args);

static const XLA_FFI_Api kApi = {
    .struct_size = XLA_FFI_Api_STRUCT_SIZE,
    .api_version = {XLA_FFI_Api_Version_STRUCT_SIZE, NULL, XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR},
    .XLA_FFI_Error_Create = api_error_create,
    .XLA_FFI_Error_GetMessage = api_error_get_message,
    .XLA_FFI_Error_Destroy = api_error_destroy,
    .XLA_FFI_Handler_Register = api_handler_register,
    .XLA_FFI_Stream_Get = api_stream_get,
    .XLA_FFI_TypeId_Register = api_type_id_register,
    .XLA_FFI_ExecutionContext_Get = api_context_get,
    .XLA_FFI_State_Set = api_state_set,
    .XLA_FFI_State_Get = api_state_get,
    .XLA_FFI_DeviceMemory_Allocate = api_memory_allocate,
    .XLA_FFI_DeviceMemory_Free = api_memory_free,
    .XLA_FFI_ThreadPool_Schedule = api_schedule,
    .XLA_FFI_Future_Create = api_future_create,
    .XLA_FFI_Future_SetAvailable = api_future_set_available,
    .XLA_FFI_Future_SetError = api_future_set_error,
};

const XLA_FFI_Api *hl_ffi_api(void) { return &kApi; }

//===----------------------------------------------------------------------===//
// Calling a handler
//===----------------------------------------------------------------------===//

typedef struct plugin_handler {
  char *name;
  XLA_FFI_Handler_Bundle bundle;
} plugin_handler_t;

static XLA_FFI_DataType ffi_dtype(hl_dtype_t t) {
  switch (t) {
    case HL_PRED: return XLA_FFI_DataType_PRED;
    case HL_S8: return XLA_FFI_DataType_S8;
    case HL_S16: return XLA_FFI_DataType_S16;
    case HL_S32: return XLA_FFI_DataType_S32;
    case HL_S64: return XLA_FFI_DataType_S64;
    case HL_U8: return XLA_FFI_DataType_U8;
    case HL_U16: return XLA_FFI_DataType_U16;
    case HL_U32: return XLA_FFI_DataType_U32;
    case HL_U64: return XLA_FFI_DataType_U64;
    case HL_F16: return XLA_FFI_DataType_F16;
    case HL_F32: return XLA_FFI_DataType_F32;
    case HL_F64: return XLA_FFI_DataType_F64;
    case HL_BF16: return XLA_FFI_DataType_BF16;
    case HL_C64: return XLA_FFI_DataType_C64;
    case HL_C128: return XLA_FFI_DataType_C128;
    default: return XLA_FFI_DataType_INVALID;
  }
}

static hl_status_t handler_error(const hl_custom_call_t *call, const char *stage, XLA_FFI_Error *e) {
  hl_status_t st = HL_INVALID("%s: custom-call \"%s\": the handler's %s stage failed (XLA FFI "
                              "error code %d): %s", hl_instruction_location(call->inst),
                              call->name, stage, (int)e->code, e->message ? e->message : "");
  free(e->message);
  free(e);
  return st;
}

static hl_status_t fill_buffers(const hl_custom_call_t *call, hl_cc_buffer_t *b, int n,
                                XLA_FFI_Buffer *out, void **ptrs, const char *what) {
  for (int i = 0; i < n; i++) {
    XLA_FFI_DataType t = ffi_dtype(b[i].dtype);
    if (t == XLA_FFI_DataType_INVALID)
      return HL_UNIMPL("%s: custom-call \"%s\" %s %d has element type %s, which has no XLA FFI "
                       "data type here", hl_instruction_location(call->inst), call->name, what,
                       i, hl_dtype_name(b[i].dtype));
    out[i] = (XLA_FFI_Buffer){XLA_FFI_Buffer_STRUCT_SIZE, NULL, t, b[i].data, b[i].rank,
                              b[i].dims};
    ptrs[i] = &out[i];
  }
  return NULL;
}

static hl_status_t run_handler(const hl_custom_call_t *call, hl_cc_frame_t *f,
                               const plugin_handler_t *h) {
  XLA_FFI_Buffer *bufs = hl_calloc((size_t)(f->arg_count + f->ret_count + 1), sizeof(*bufs));
  void **ptrs = hl_calloc((size_t)(f->arg_count + f->ret_count + 1), sizeof(void *));
  XLA_FFI_ArgType *at = hl_calloc((size_t)f->arg_count + 1, sizeof(*at));
  XLA_FFI_RetType *rt = hl_calloc((size_t)f->ret_count + 1, sizeof(*rt));
  hl_ffi_attr_store_t store = {0};
  hl_status_t st = (bufs && ptrs && at && rt) ? NULL : HL_OOM();
  if (!st) st = fill_buffers(call, f->args, f->arg_count, bufs, ptrs, "operand");
  if (!st) st = fill_buffers(call, f->rets, f->ret_count, bufs + f->arg_count,
                             ptrs + f->arg_count, "result");
  XLA_FFI_CallFrame frame;
  memset(&frame, 0, sizeof(frame));
  if (!st) {
    for (int i = 0; i < f->arg_count; i++) at[i] = XLA_FFI_ArgType_BUFFER;
    for (int i = 0; i < f->ret_count; i++) rt[i] = XLA_FFI_RetType_BUFFER;
    frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
    frame.api = &kApi;
    frame.args = (XLA_FFI_Args){XLA_FFI_Args_STRUCT_SIZE, NULL, f->arg_count, at, ptrs};
    frame.rets = (XLA_FFI_Rets){XLA_FFI_Rets_STRUCT_SIZE, NULL, f->ret_count, rt,
                                ptrs + f->arg_count};
    st = hl_ffi_attrs_build(call->inst->attrs.backend_config, &frame.attrs, &store);
    if (st)
      st = hl_status_annotate(st, "%s: custom-call \"%s\"", hl_instruction_location(call->inst),
                            call->name);
  }
  static const char *const kStage[] = {"instantiate", "prepare", "initialize", "execute"};
  XLA_FFI_Handler *stages[4] = {NULL, h->bundle.prepare, h->bundle.initialize, h->bundle.execute};
  for (int s = 1; s < 4 && !st; s++) {
    if (!stages[s]) continue;
    frame.stage = (XLA_FFI_ExecutionStage)s;
    XLA_FFI_Error *e = stages[s](&frame);
    if (e) st = handler_error(call, kStage[s], e);
    else if (frame.future)
      st = HL_UNIMPL("%s: custom-call \"%s\": the handler returned a future (asynchronous "
                     "handlers are not supported)", hl_instruction_location(call->inst),
                     call->name);
  }
  hl_ffi_attr_store_free(&store);
  hl_free(bufs);
  hl_free(ptrs);
  hl_free(at);
  hl_free(rt);
  return st;
}

static hl_status_t run_plugin(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  if (call->inst->attrs.custom_call_api_version != 4)
    return HL_INVALID("%s: custom-call \"%s\" runs a typed-FFI handler from "
                      "--custom-call-library, but the instruction's api_version is not "
                      "API_VERSION_TYPED_FFI", hl_instruction_location(call->inst), call->name);
  hl_cc_frame_t f;
  hl_status_t st = hl_cc_frame_init(call, &f);
  if (!st) st = run_handler(call, &f, call->target->data);
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

//===----------------------------------------------------------------------===//
// Registration and loading
//===----------------------------------------------------------------------===//

static hl_status_t add_handler(const char *name, size_t len, XLA_FFI_Handler_Bundle bundle) {
  if (!bundle.execute) return HL_INVALID("handler \"%.*s\" has no execute stage", (int)len, name);
  if (bundle.instantiate)
    return HL_UNIMPL("handler \"%.*s\" has an instantiate stage, which hlo-launch does not "
                     "run (no handler state)", (int)len, name);
  // Registrations live as long as the process (the registry keeps pointers).
  plugin_handler_t *h = hl_calloc(1, sizeof(*h));
  char *copy = hl_strndup(name, len);
  if (!h || !copy) {
    hl_free(h);
    hl_free(copy);
    return HL_OOM();
  }
  h->name = copy;
  h->bundle = bundle;
  hl_status_t st = hl_custom_call_register(copy, run_plugin, h);
  if (st) {
    hl_free(copy);
    hl_free(h);
  }
  return st;
}

static bool host_platform(XLA_FFI_ByteSpan p) {
  return (p.len == 4 && strncasecmp(p.ptr, "host", 4) == 0) ||
         (p.len == 3 && strncasecmp(p.ptr, "cpu", 3) == 0);
}

static hl_status_t g_register_status;  // the first failure inside a plugin's init

static XLA_FFI_Error *api_handler_register(XLA_FFI_Handler_Register_Args *args) {
  if (!host_platform(args->platform)) return NULL;  // handlers for other platforms never run here
  hl_status_t st = add_handler(args->name.ptr, args->name.len, args->bundle);
  if (!st) return NULL;
  XLA_FFI_Error *e = make_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, hl_status_message(st));
  if (!g_register_status) g_register_status = st;
  else hl_status_free(st);
  return e;
}

hl_status_t hl_ffi_plugin_load(const char *spec) {
  const char *colon = strchr(spec, ':');
  char *path = hl_strndup(spec, colon ? (size_t)(colon - spec) : strlen(spec));
  if (!path) return HL_OOM();
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    hl_status_t st = HL_INVALID("--custom-call-library %s: %s", path, dlerror());
    hl_free(path);
    return st;
  }
  hl_status_t st = NULL;
  if (!colon) {
    hlo_launch_ffi_init_fn *init = (hlo_launch_ffi_init_fn *)dlsym(lib, HLO_LAUNCH_FFI_INIT_SYMBOL);
    if (!init) {
      st = HL_INVALID("--custom-call-library %s exports no %s; name its handlers instead with "
                      "%s:TARGET=SYMBOL[,TARGET=SYMBOL...]", path, HLO_LAUNCH_FFI_INIT_SYMBOL,
                      path);
    } else {
      g_register_status = NULL;
      XLA_FFI_Error *e = init(&kApi);
      if (g_register_status) {
        st = hl_status_annotate(g_register_status, "--custom-call-library %s", path);
        g_register_status = NULL;
      } else if (e) {
        st = HL_INVALID("--custom-call-library %s: %s failed: %s", path,
                        HLO_LAUNCH_FFI_INIT_SYMBOL, e->message ? e->message : "");
      }
      if (e) {
        free(e->message);
        free(e);
      }
    }
  } else {
    // TARGET=SYMBOL pairs.
    const char *p = colon + 1;
    while (*p && !st) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      const char *eq = memchr(p, '=', len);
      if (!eq || eq == p || eq == p + len - 1) {
        st = HL_INVALID("--custom-call-library %s: expected TARGET=SYMBOL, got '%.*s'", spec,
                        (int)len, p);
        break;
      }
      char *symbol = hl_strndup(eq + 1, (size_t)(p + len - eq - 1));
      if (!symbol) {
        st = HL_OOM();
        break;
      }
      XLA_FFI_Handler *fn = (XLA_FFI_Handler *)dlsym(lib, symbol);
      if (!fn)
        st = HL_INVALID("--custom-call-library %s exports no symbol %s", path, symbol);
      else
        st = add_handler(p, (size_t)(eq - p), (XLA_FFI_Handler_Bundle){NULL, NULL, NULL, fn});
      hl_free(symbol);
      p += len + (comma ? 1 : 0);
    }
  }
  hl_free(path);
  // The library stays loaded: its handlers are registered for the process.
  return st;
}

hl_status_t hl_ffi_plugins_load(const char *const *specs, int n) {
  for (int i = 0; i < n; i++) HL_RETURN_IF_ERROR(hl_ffi_plugin_load(specs[i]));
  return NULL;
}
