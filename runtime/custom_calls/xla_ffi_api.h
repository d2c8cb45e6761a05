// XLA's typed FFI C ABI (API version 0.1), written from the facts of XLA's
// published header xla/ffi/api/c_api.h: the same structs, field order, enum
// values and function-table order, so a handler compiled against that header
// for XLA's CPU runtime ("Host") can be called unchanged. What hlo-launch
// implements of the table is listed in docs/CUSTOM_CALLS.md.
#ifndef HL_CUSTOM_CALLS_XLA_FFI_API_H_
#define HL_CUSTOM_CALLS_XLA_FFI_API_H_

#include <stddef.h>
#include <stdint.h>

#define XLA_FFI_STRUCT_SIZE(struct_type, last_field) \
  (offsetof(struct_type, last_field) + sizeof(((struct_type *)0)->last_field))
#define XLA_FFI_DEFINE_STRUCT_TRAITS(sname, last_field) \
  typedef struct sname sname;                           \
  enum { sname##_STRUCT_SIZE = XLA_FFI_STRUCT_SIZE(sname, last_field) }

#define XLA_FFI_API_MAJOR 0
#define XLA_FFI_API_MINOR 1

typedef struct XLA_FFI_Api XLA_FFI_Api;
typedef struct XLA_FFI_InternalApi XLA_FFI_InternalApi;

typedef enum { XLA_FFI_Extension_Metadata = 1 } XLA_FFI_Extension_Type;

typedef struct XLA_FFI_Extension_Base {
  size_t struct_size;
  XLA_FFI_Extension_Type type;
  struct XLA_FFI_Extension_Base *next;
} XLA_FFI_Extension_Base;
enum { XLA_FFI_Extension_Base_STRUCT_SIZE = XLA_FFI_STRUCT_SIZE(XLA_FFI_Extension_Base, next) };

struct XLA_FFI_Api_Version {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int major_version;
  int minor_version;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Api_Version, minor_version);

typedef struct XLA_FFI_Error XLA_FFI_Error;

typedef enum {
  XLA_FFI_Error_Code_OK = 0, XLA_FFI_Error_Code_CANCELLED = 1, XLA_FFI_Error_Code_UNKNOWN = 2,
  XLA_FFI_Error_Code_INVALID_ARGUMENT = 3, XLA_FFI_Error_Code_DEADLINE_EXCEEDED = 4,
  XLA_FFI_Error_Code_NOT_FOUND = 5, XLA_FFI_Error_Code_ALREADY_EXISTS = 6,
  XLA_FFI_Error_Code_PERMISSION_DENIED = 7, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED = 8,
  XLA_FFI_Error_Code_FAILED_PRECONDITION = 9, XLA_FFI_Error_Code_ABORTED = 10,
  XLA_FFI_Error_Code_OUT_OF_RANGE = 11, XLA_FFI_Error_Code_UNIMPLEMENTED = 12,
  XLA_FFI_Error_Code_INTERNAL = 13, XLA_FFI_Error_Code_UNAVAILABLE = 14,
  XLA_FFI_Error_Code_DATA_LOSS = 15, XLA_FFI_Error_Code_UNAUTHENTICATED = 16
} XLA_FFI_Error_Code;

struct XLA_FFI_Error_Create_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  const char *message;
  XLA_FFI_Error_Code errc;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Error_Create_Args, errc);
typedef XLA_FFI_Error *XLA_FFI_Error_Create(XLA_FFI_Error_Create_Args *args);

struct XLA_FFI_Error_GetMessage_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Error *error;
  const char *message;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Error_GetMessage_Args, message);
typedef void XLA_FFI_Error_GetMessage(XLA_FFI_Error_GetMessage_Args *args);

struct XLA_FFI_Error_Destroy_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Error *error;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Error_Destroy_Args, error);
typedef void XLA_FFI_Error_Destroy(XLA_FFI_Error_Destroy_Args *args);

// xla::PrimitiveType values.
typedef enum {
  XLA_FFI_DataType_INVALID = 0, XLA_FFI_DataType_PRED = 1, XLA_FFI_DataType_S8 = 2,
  XLA_FFI_DataType_S16 = 3, XLA_FFI_DataType_S32 = 4, XLA_FFI_DataType_S64 = 5,
  XLA_FFI_DataType_U8 = 6, XLA_FFI_DataType_U16 = 7, XLA_FFI_DataType_U32 = 8,
  XLA_FFI_DataType_U64 = 9, XLA_FFI_DataType_F16 = 10, XLA_FFI_DataType_F32 = 11,
  XLA_FFI_DataType_F64 = 12, XLA_FFI_DataType_BF16 = 16, XLA_FFI_DataType_C64 = 15,
  XLA_FFI_DataType_C128 = 18, XLA_FFI_DataType_TOKEN = 17, XLA_FFI_DataType_F8E5M2 = 19,
  XLA_FFI_DataType_F8E3M4 = 29, XLA_FFI_DataType_F8E4M3 = 28, XLA_FFI_DataType_F8E4M3FN = 20,
  XLA_FFI_DataType_F8E4M3B11FNUZ = 23, XLA_FFI_DataType_F8E5M2FNUZ = 24,
  XLA_FFI_DataType_F8E4M3FNUZ = 25,
} XLA_FFI_DataType;

struct XLA_FFI_Buffer {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_DataType dtype;
  void *data;
  int64_t rank;
  int64_t *dims;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Buffer, dims);

typedef enum { XLA_FFI_ArgType_BUFFER = 1 } XLA_FFI_ArgType;
typedef enum { XLA_FFI_RetType_BUFFER = 1 } XLA_FFI_RetType;
typedef enum {
  XLA_FFI_AttrType_ARRAY = 1, XLA_FFI_AttrType_DICTIONARY = 2, XLA_FFI_AttrType_SCALAR = 3,
  XLA_FFI_AttrType_STRING = 4,
} XLA_FFI_AttrType;

typedef struct XLA_FFI_ExecutionContext XLA_FFI_ExecutionContext;

typedef struct XLA_FFI_TypeId {
  int64_t type_id;
} XLA_FFI_TypeId;

typedef struct XLA_FFI_ByteSpan {
  const char *ptr;
  size_t len;
} XLA_FFI_ByteSpan;

typedef struct XLA_FFI_Scalar {
  XLA_FFI_DataType dtype;
  void *value;
} XLA_FFI_Scalar;

typedef struct XLA_FFI_Array {
  XLA_FFI_DataType dtype;
  size_t size;
  void *data;
} XLA_FFI_Array;

typedef struct XLA_FFI_Future XLA_FFI_Future;

struct XLA_FFI_Future_Create_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Future *future;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Future_Create_Args, extension_start);
typedef XLA_FFI_Error *XLA_FFI_Future_Create(XLA_FFI_Future_Create_Args *args);

struct XLA_FFI_Future_SetAvailable_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Future *future;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Future_SetAvailable_Args, future);
typedef XLA_FFI_Error *XLA_FFI_Future_SetAvailable(XLA_FFI_Future_SetAvailable_Args *args);

struct XLA_FFI_Future_SetError_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Future *future;
  XLA_FFI_Error *error;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Future_SetError_Args, error);
typedef XLA_FFI_Error *XLA_FFI_Future_SetError(XLA_FFI_Future_SetError_Args *args);

typedef enum {
  XLA_FFI_ExecutionStage_INSTANTIATE = 0, XLA_FFI_ExecutionStage_PREPARE = 1,
  XLA_FFI_ExecutionStage_INITIALIZE = 2, XLA_FFI_ExecutionStage_EXECUTE = 3,
} XLA_FFI_ExecutionStage;

struct XLA_FFI_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int64_t size;
  XLA_FFI_ArgType *types;
  void **args;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Args, args);

struct XLA_FFI_Rets {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int64_t size;
  XLA_FFI_RetType *types;
  void **rets;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Rets, rets);

// Sorted by name.
struct XLA_FFI_Attrs {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  int64_t size;
  XLA_FFI_AttrType *types;
  XLA_FFI_ByteSpan **names;
  void **attrs;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Attrs, attrs);

struct XLA_FFI_CallFrame {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  const XLA_FFI_Api *api;
  XLA_FFI_ExecutionContext *ctx;
  XLA_FFI_ExecutionStage stage;
  XLA_FFI_Args args;
  XLA_FFI_Rets rets;
  XLA_FFI_Attrs attrs;
  XLA_FFI_Future *future;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_CallFrame, attrs);

typedef XLA_FFI_Error *XLA_FFI_Handler(XLA_FFI_CallFrame *call_frame);

typedef struct XLA_FFI_Handler_Bundle {
  XLA_FFI_Handler *instantiate;
  XLA_FFI_Handler *prepare;
  XLA_FFI_Handler *initialize;
  XLA_FFI_Handler *execute;
} XLA_FFI_Handler_Bundle;

typedef uint32_t XLA_FFI_Handler_Traits;
enum { XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE = 1u << 0 };

struct XLA_FFI_Handler_Register_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ByteSpan name;
  XLA_FFI_ByteSpan platform;
  XLA_FFI_Handler_Bundle bundle;
  XLA_FFI_Handler_Traits traits;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Handler_Register_Args, traits);
typedef XLA_FFI_Error *XLA_FFI_Handler_Register(XLA_FFI_Handler_Register_Args *args);

struct XLA_FFI_TypeId_Register_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ByteSpan name;
  XLA_FFI_TypeId *type_id;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_TypeId_Register_Args, type_id);
typedef XLA_FFI_Error *XLA_FFI_TypeId_Register(XLA_FFI_TypeId_Register_Args *args);

struct XLA_FFI_ExecutionContext_Get_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  XLA_FFI_TypeId *type_id;
  void *data;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_ExecutionContext_Get_Args, data);
typedef XLA_FFI_Error *XLA_FFI_ExecutionContext_Get(XLA_FFI_ExecutionContext_Get_Args *args);

struct XLA_FFI_State_Set_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  XLA_FFI_TypeId *type_id;
  void *state;
  void (*deleter)(void *state);
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_State_Set_Args, deleter);
typedef XLA_FFI_Error *XLA_FFI_State_Set(XLA_FFI_State_Set_Args *args);

struct XLA_FFI_State_Get_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  XLA_FFI_TypeId *type_id;
  void *state;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_State_Get_Args, state);
typedef XLA_FFI_Error *XLA_FFI_State_Get(XLA_FFI_State_Get_Args *args);

struct XLA_FFI_Stream_Get_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  void *stream;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Stream_Get_Args, stream);
typedef XLA_FFI_Error *XLA_FFI_Stream_Get(XLA_FFI_Stream_Get_Args *args);

struct XLA_FFI_DeviceMemory_Allocate_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  size_t size;
  size_t alignment;
  void *data;  // out
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_DeviceMemory_Allocate_Args, data);
typedef XLA_FFI_Error *XLA_FFI_DeviceMemory_Allocate(XLA_FFI_DeviceMemory_Allocate_Args *args);

struct XLA_FFI_DeviceMemory_Free_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  size_t size;
  void *data;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_DeviceMemory_Free_Args, data);
typedef XLA_FFI_Error *XLA_FFI_DeviceMemory_Free(XLA_FFI_DeviceMemory_Free_Args *args);

typedef void XLA_FFI_Task(void *data);

struct XLA_FFI_ThreadPool_Schedule_Args {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  XLA_FFI_Task *task;
  void *data;
};
XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_ThreadPool_Schedule_Args, data);
typedef XLA_FFI_Error *XLA_FFI_ThreadPool_Schedule(XLA_FFI_ThreadPool_Schedule_Args *args);

struct XLA_FFI_Api {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_Api_Version api_version;
  XLA_FFI_InternalApi *internal_api;
  XLA_FFI_Error_Create *XLA_FFI_Error_Create;
  XLA_FFI_Error_GetMessage *XLA_FFI_Error_GetMessage;
  XLA_FFI_Error_Destroy *XLA_FFI_Error_Destroy;
  XLA_FFI_Handler_Register *XLA_FFI_Handler_Register;
  XLA_FFI_Stream_Get *XLA_FFI_Stream_Get;
  XLA_FFI_TypeId_Register *XLA_FFI_TypeId_Register;
  XLA_FFI_ExecutionContext_Get *XLA_FFI_ExecutionContext_Get;
  XLA_FFI_State_Set *XLA_FFI_State_Set;
  XLA_FFI_State_Get *XLA_FFI_State_Get;
  XLA_FFI_DeviceMemory_Allocate *XLA_FFI_DeviceMemory_Allocate;
  XLA_FFI_DeviceMemory_Free *XLA_FFI_DeviceMemory_Free;
  XLA_FFI_ThreadPool_Schedule *XLA_FFI_ThreadPool_Schedule;
  XLA_FFI_Future_Create *XLA_FFI_Future_Create;
  XLA_FFI_Future_SetAvailable *XLA_FFI_Future_SetAvailable;
  XLA_FFI_Future_SetError *XLA_FFI_Future_SetError;
};
// XLA's header measures the table up to XLA_FFI_Stream_Get.
enum { XLA_FFI_Api_STRUCT_SIZE = XLA_FFI_STRUCT_SIZE(XLA_FFI_Api, XLA_FFI_Stream_Get) };

// hlo-launch's plugin entry point (not part of XLA's header): a library given
// with --custom-call-library PATH exports it and registers its handlers
// through api->XLA_FFI_Handler_Register (platform "Host" or "cpu").
typedef XLA_FFI_Error *hlo_launch_ffi_init_fn(const XLA_FFI_Api *api);
#define HLO_LAUNCH_FFI_INIT_SYMBOL "hlo_launch_ffi_init"

#endif  // HL_CUSTOM_CALLS_XLA_FFI_API_H_
