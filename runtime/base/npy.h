// NumPy .npy files <-> literals.
//
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0, or 2.0 when the header
// does not fit in 1.0's 16-bit length. Element types are the ones NumPy has:
// |b1, |i1 <i2 <i4 <i8, |u1 <u2 <u4 <u8, <f2 <f4 <f8, <c8 <c16. Big-endian
// files ('>') are byte-swapped and Fortran-order files transposed on read.
//
// Types NumPy lacks (bf16, the f8 family, s4/u4/s2/u2/s1/u1, f4e2m1fn,
// f6e2m3fn, f6e3m2fn) are
// what ml_dtypes' arrays become under np.save: an untyped void descr ('<V2'
// for bf16, '<V1' for the one-byte ones; float8_e5m2 appears as '<f1'). Such a
// file is accepted only where the caller says which type to expect, and these
// types are written the same way, so np.load(...).view(ml_dtypes.bfloat16)
// recovers them. A descr spelled with ml_dtypes' name ('bfloat16',
// 'float8_e4m3fn', 'int4', ...) is accepted too.
#ifndef HL_RUNTIME_BASE_NPY_H_
#define HL_RUNTIME_BASE_NPY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/status.h"

// A parsed .npy header.
typedef struct hl_npy_header {
  int major, minor;           // format version
  char descr[64];             // as written, e.g. "<f4", "|V2", "bfloat16"
  bool fortran_order;
  int rank;
  int64_t dims[HL_MAX_RANK];
  size_t data_offset;         // bytes from the start of the file to the data
  // The descr decoded. kind is NumPy's kind letter ('b' 'i' 'u' 'f' 'c' 'V'
  // ...); dtype is the element type when the descr names one unambiguously
  // (HL_INVALID for void and other untyped descrs).
  char byte_order;            // '<' '>' '|' '='
  char kind;
  size_t item_size;
  hl_dtype_t dtype;
} hl_npy_header_t;

// Parses the magic, version and header dict at the start of `data`.
// Messages do not name the file (callers add it).
hl_status_t hl_npy_parse_header(const uint8_t *data, size_t size, hl_npy_header_t *out_header);

// NumPy's name for a header's element type and shape, for messages:
// "float64 (3, 2)", "void16 (4,)", "bool ()". Thread-local buffer.
const char *hl_npy_header_describe(const hl_npy_header_t *header);

// The descr this module writes for `dtype`: "<f4", "|b1", "<V2" for bf16;
// NULL for tuple/token/opaque.
const char *hl_npy_descr(hl_dtype_t dtype);
// NumPy has this element type (so a file of it carries its type).
bool hl_npy_dtype_is_native(hl_dtype_t dtype);

// Reads a .npy file into a new array literal.
//  expected == NULL: the file's own type and shape (untyped void files are an
//    error, since nothing says what they hold).
//  expected != NULL (an array shape): the file must have exactly that element
//    type and those dimensions, or be an untyped void file of the same item
//    size when the type is one NumPy lacks. Otherwise the error reads
//    "<path>: expected f32[2,3] for <expected_for>, file has float64 (3, 2)";
//    expected_for may be NULL ("expected f32[2,3], file has ...").
// Every message starts with `path`.
hl_status_t hl_npy_read_file(const char *path, const hl_shape_t *expected,
                             const char *expected_for, hl_literal_t **out_literal);
// The same for a file already in memory; `name` stands for the path.
hl_status_t hl_npy_read_bytes(const uint8_t *data, size_t size, const char *name,
                              const hl_shape_t *expected, const char *expected_for,
                              hl_literal_t **out_literal);

// Writes an array literal as a .npy file (C order, little-endian).
// Tuples and tokens are an error; callers flatten tuples first.
hl_status_t hl_npy_write_file(const char *path, const hl_literal_t *literal);
// The same into memory: *out_data (free with hl_free) holds *out_size bytes.
hl_status_t hl_npy_write_bytes(const hl_literal_t *literal, uint8_t **out_data,
                               size_t *out_size);

#endif  // HL_RUNTIME_BASE_NPY_H_
