#include "launcher/global_io.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "collectives/mpi_polite.h"
#include "launcher/sharding.h"
#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/text/hlo_parser.h"

//===----------------------------------------------------------------------===//
// Where the shardings come from
//===----------------------------------------------------------------------===//

static hl_status_t parse_option(const char *flag, const char *text, hl_sharding_t *storage,
                                const hl_sharding_t **out) {
  HL_RETURN_IF_ERROR_CTX(hl_parse_sharding(text, storage), "%s", flag);
  *out = storage;
  return NULL;
}

hl_status_t hl_global_param_sharding(const hl_launch_options_t *o, const hl_program_t *program,
                                     int index, hl_sharding_t *storage,
                                     const hl_sharding_t **out) {
  memset(storage, 0, sizeof(*storage));
  *out = NULL;
  if (index < o->arg_sharding_count && *o->arg_shardings[index])
    return parse_option("--arg-shardings", o->arg_shardings[index], storage, out);
  const hl_module_t *m = program->module;
  const hl_computation_t *entry = m->entry;
  if (entry && index < entry->parameter_count && entry->parameters[index] &&
      entry->parameters[index]->attrs.sharding) {
    *out = entry->parameters[index]->attrs.sharding;
  } else if (index < m->spmd_parameters_sharding_count) {
    *out = &m->spmd_parameters_shardings[index];
  }
  return NULL;
}

hl_status_t hl_global_output_sharding(const hl_launch_options_t *o, const hl_program_t *program,
                                      const hl_grid_t *grid, hl_sharding_t *storage,
                                      const hl_sharding_t **out) {
  memset(storage, 0, sizeof(*storage));
  *out = NULL;
  if (o->output_sharding)
    return parse_option("--output-sharding", o->output_sharding, storage, out);
  const hl_module_t *m = program->module;
  const hl_instruction_t *root = m->entry ? m->entry->root : NULL;
  // A ROOT `call` returns its callee's ROOT: XLA inlines calls before
  // sharding propagation, so that ROOT's sharding is the result's (JAX's
  // older GSPMD exports return `call @wrapped` whose last op is a Sharding).
  for (int depth = 0; root && !root->attrs.sharding && root->opcode == HL_OP_CALL && depth < 64;
       depth++) {
    const hl_computation_t *callee = hl_instruction_to_apply(root);
    root = callee ? callee->root : NULL;
  }
  if (root && root->attrs.sharding) *out = root->attrs.sharding;
  else if (m->spmd_output_sharding) *out = m->spmd_output_sharding;
  // One partition holds the whole result; with more, assembling from a
  // guessed sharding would write one shard as if it were the global array.
  if (!*out && grid->partitions > 1)
    return HL_INVALID("--global-output: the result's sharding is not known (the ROOT has no "
                      "sharding attribute and the module no spmd_output_sharding; JAX keeps it "
                      "in the compile options) and the grid has %lld partitions: pass "
                      "--output-sharding SHARDING, e.g. --output-sharding "
                      "'{devices=[%lld,1]<=[%lld]}' for rows split across the partitions",
                      (long long)grid->partitions, (long long)grid->partitions,
                      (long long)grid->partitions);
  return NULL;
}

// The sharding fits an array of `shape` on the grid's partitions.
static hl_status_t check_fits(const hl_sharding_t *s, const hl_shape_t *shape,
                              const hl_grid_t *grid) {
  if (!hl_shape_is_array(shape)) return NULL;  // refused with its own message later
  int64_t tiles[HL_MAX_RANK], tile[HL_MAX_RANK];
  bool holds;
  return hl_sharding_locate(s, shape->rank, grid->partitions, 0, tiles, tile, &holds);
}

hl_status_t hl_global_io_precheck(const hl_launch_options_t *o, const hl_program_t *program,
                                  const hl_grid_t *grid) {
  const hl_computation_t *entry = program->module->entry;
  if (!entry) return NULL;
  hl_sharding_t storage;
  const hl_sharding_t *s;
  if (o->input_source == HL_INPUT_GLOBAL) {
    for (int i = 0; i < entry->parameter_count && i < o->global_arg_file_count; i++) {
      if (!entry->parameters[i]) continue;
      HL_RETURN_IF_ERROR(hl_global_param_sharding(o, program, i, &storage, &s));
      hl_status_t st = check_fits(s, &entry->parameters[i]->shape, grid);
      hl_sharding_deinit(&storage);
      HL_RETURN_IF_ERROR_CTX(st, "%s for parameter %d", o->global_arg_files[i], i);
    }
  }
  if (o->global_output) {
    HL_RETURN_IF_ERROR(hl_global_output_sharding(o, program, grid, &storage, &s));
    hl_status_t st = entry->root ? check_fits(s, &entry->root->shape, grid) : NULL;
    hl_sharding_deinit(&storage);
    HL_RETURN_IF_ERROR_CTX(st, "--global-output (the result's sharding)");
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// --global-args
//===----------------------------------------------------------------------===//

// The global array of `path`; an untyped ml_dtypes file ('<V2', '|V1') is
// read as the parameter's element type, as --args does.
static hl_status_t read_global(const char *path, hl_dtype_t want, hl_literal_t **out) {
  hl_literal_t *lit = NULL;
  hl_status_t st = hl_npy_read_file(path, NULL, NULL, &lit);
  if (!st || hl_npy_dtype_is_native(want)) {
    *out = lit;
    return st;
  }
  // Only the header's dimensions are needed to ask for the typed read.
  hl_status_free(st);
  FILE *f = fopen(path, "rb");
  if (!f) return HL_ERROR(HL_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  uint8_t head[4096];
  size_t n = fread(head, 1, sizeof(head), f);
  fclose(f);
  hl_npy_header_t h;
  st = hl_npy_parse_header(head, n, &h);
  if (st) return hl_status_annotate(st, "%s", path);
  hl_shape_t typed = hl_shape_array(want, h.rank, h.dims);
  return hl_npy_read_file(path, &typed, "the global array", out);
}

// The shard of `global` at `tile` (of `tiles`) as a new literal of `shape`;
// releases `global` either way.
static hl_status_t take_shard(hl_literal_t *global, const hl_shape_t *shape,
                              const int64_t *tiles, const int64_t *tile, hl_literal_t **out) {
  hl_literal_t *shard = NULL;
  hl_status_t st = hl_literal_create(shape, &shard);
  if (!st) st = hl_sharding_extract(global, tiles, tile, shard);
  hl_literal_release(global);
  if (st) {
    hl_literal_release(shard);
    return st;
  }
  *out = shard;
  return NULL;
}

static hl_status_t shard_of_file(const char *path, const hl_instruction_t *param, int index,
                                 const hl_sharding_t *s, const hl_grid_t *grid,
                                 int64_t partition, hl_literal_t **out) {
  const hl_shape_t *want = &param->shape;
  if (!hl_shape_is_array(want))
    return HL_UNIMPL("%s: parameter %d has the shape %s; global inputs for tuple or token "
                     "parameters are not supported",
                     path, index, hl_shape_debug_string(want));
  int64_t tiles[HL_MAX_RANK], tile[HL_MAX_RANK];
  bool holds;
  HL_RETURN_IF_ERROR_CTX(
      hl_sharding_locate(s, want->rank, grid->partitions, partition, tiles, tile, &holds),
      "%s for parameter %d", path, index);
  hl_literal_t *global;
  HL_RETURN_IF_ERROR(read_global(path, want->dtype, &global));
  hl_status_t st = NULL;
  int64_t dims[HL_MAX_RANK];
  int64_t tile_count = 1;
  for (int d = 0; d < want->rank; d++) tile_count *= tiles[d];
  if (global->shape.dtype != want->dtype || global->shape.rank != want->rank) {
    st = HL_INVALID("%s: the global array is %s, but parameter %d is %s with sharding %s", path,
                    hl_shape_debug_string(&global->shape), index,
                    hl_dtype_name(want->dtype), hl_sharding_describe(s));
  } else {
    hl_sharding_shard_dims(want->rank, global->shape.dims, tiles, dims);
    // An un-partitioned program (a "before optimizations" dump) declares the
    // global shape with a splitting sharding: every process would get a shard
    // where it expects the whole array.
    if (tile_count > 1 && hl_shape_same_dims(&global->shape, want))
      st = HL_INVALID("%s: parameter %d is %s, the global array's own shape, although its "
                      "sharding %s splits it: the program is not partitioned (a 'before "
                      "optimizations' dump?). Pass the array with --args, or run the "
                      "partitioned ('after optimizations') program with --global-args",
                      path, index, hl_shape_debug_string(want), hl_sharding_describe(s));
    for (int d = 0; d < want->rank && !st; d++)
      if (dims[d] != want->dims[d]) {
        char global_text[128];
        snprintf(global_text, sizeof(global_text), "%s", hl_shape_debug_string(&global->shape));
        st = HL_INVALID("%s: the global array %s split by the sharding %s gives shards with "
                        "%lld element%s in dimension %d, but parameter %d is %s",
                        path, global_text, hl_sharding_describe(s), (long long)dims[d],
                        hl_plural(dims[d]), d, index, hl_shape_debug_string(want));
      }
  }
  if (st) {
    hl_literal_release(global);
    return st;
  }
  return take_shard(global, want, tiles, tile, out);
}

static hl_status_t build(const hl_launch_options_t *o, const hl_program_t *program,
                         const hl_grid_t *grid, int64_t partition, hl_inputs_t *in) {
  const hl_computation_t *entry = program->module->entry;
  if (!entry) return HL_INVALID("the program has no entry computation");
  int n = entry->parameter_count;
  if (o->global_arg_file_count != n)
    return HL_INVALID("--global-args gives %d file%s, but the entry computation '%s' has %d "
                      "parameter%s",
                      o->global_arg_file_count, o->global_arg_file_count == 1 ? "" : "s",
                      entry->name, n, n == 1 ? "" : "s");
  in->args = hl_calloc((size_t)(n ? n : 1), sizeof(hl_literal_t *));
  if (!in->args) return HL_OOM();
  in->count = n;
  if (o->arg_sharding_count > n)
    return HL_INVALID("--arg-shardings gives %d sharding%s, but the entry computation '%s' has %d "
                      "parameter%s",
                      o->arg_sharding_count, o->arg_sharding_count == 1 ? "" : "s", entry->name,
                      n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    HL_RETURN_IF_ERROR(hl_inputs_add_file(in, o->global_arg_files[i]));
    hl_sharding_t storage;
    const hl_sharding_t *s;
    hl_status_t st = hl_global_param_sharding(o, program, i, &storage, &s);
    if (!st)
      st = shard_of_file(o->global_arg_files[i], entry->parameters[i], i, s, grid, partition,
                         &in->args[i]);
    hl_sharding_deinit(&storage);
    HL_RETURN_IF_ERROR(st);
  }
  return NULL;
}

hl_status_t hl_global_args_build(const hl_launch_options_t *o, const hl_program_t *program,
                                 const hl_grid_t *grid, int64_t partition, hl_inputs_t *out) {
  memset(out, 0, sizeof(*out));
  hl_status_t st = build(o, program, grid, partition, out);
  if (st) hl_inputs_deinit(out);
  return st;
}

static hl_status_t random_shard(const hl_launch_options_t *o, const hl_instruction_t *param,
                               int index, const hl_sharding_t *s, const hl_grid_t *grid,
                               int64_t partition, hl_literal_t **out) {
  const hl_shape_t *global_shape = &param->shape;
  if (!hl_shape_is_array(global_shape))
    return HL_UNIMPL("--seed on a partitioned program: parameter %d has the shape %s; only "
                     "array parameters are drawn globally",
                     index, hl_shape_debug_string(global_shape));
  int64_t tiles[HL_MAX_RANK], tile[HL_MAX_RANK];
  bool holds;
  HL_RETURN_IF_ERROR_CTX(hl_sharding_locate(s, global_shape->rank, grid->partitions, partition,
                                            tiles, tile, &holds),
                         "--seed: parameter %d", index);
  hl_literal_t *global = NULL;
  HL_RETURN_IF_ERROR(hl_inputs_random(global_shape, o->seed, index, &global));
  int64_t dims[HL_MAX_RANK];
  hl_sharding_shard_dims(global_shape->rank, global_shape->dims, tiles, dims);
  hl_shape_t shard_shape = hl_shape_array(global_shape->dtype, global_shape->rank, dims);
  return take_shard(global, &shard_shape, tiles, tile, out);
}

hl_status_t hl_global_random_args(const hl_launch_options_t *o, const hl_program_t *program,
                                  const hl_grid_t *grid, int64_t partition, hl_inputs_t *in) {
  memset(in, 0, sizeof(*in));
  const hl_computation_t *entry = program->module->entry;
  if (!entry) return HL_INVALID("the program has no entry computation");
  int n = entry->parameter_count;
  in->args = hl_calloc((size_t)(n ? n : 1), sizeof(hl_literal_t *));
  if (!in->args) return HL_OOM();
  in->count = n;
  hl_status_t st = NULL;
  for (int i = 0; i < n && !st; i++) {
    hl_sharding_t storage;
    const hl_sharding_t *s;
    st = hl_global_param_sharding(o, program, i, &storage, &s);
    if (!st) st = random_shard(o, entry->parameters[i], i, s, grid, partition, &in->args[i]);
    hl_sharding_deinit(&storage);
  }
  if (st) hl_inputs_deinit(in);
  return st;
}

//===----------------------------------------------------------------------===//
// --global-output
//===----------------------------------------------------------------------===//

static hl_status_t check_result(const hl_literal_t *result, const hl_sharding_t *s,
                                const hl_grid_t *grid, const char *flag) {
  const hl_shape_t *shape = &result->shape;
  if (!hl_shape_is_array(shape)) {
    if (shape->dtype == HL_TUPLE && shape->tuple_count == 1 &&
        hl_shape_is_array(&shape->tuple[0]))
      return HL_UNIMPL("%s: the result is a 1-tuple %s; only an array result can be "
                       "assembled",
                       flag, hl_shape_debug_string(shape));
    return HL_UNIMPL("%s: the result is %s; only an array result can be assembled", flag,
                     hl_shape_debug_string(shape));
  }
  int64_t tiles[HL_MAX_RANK], tile[HL_MAX_RANK];
  bool holds;
  for (int64_t p = 0; p < grid->partitions; p++)
    HL_RETURN_IF_ERROR_CTX(
        hl_sharding_locate(s, shape->rank, grid->partitions, p, tiles, tile, &holds),
        "%s (the result's sharding)", flag);
  return NULL;
}

hl_status_t hl_global_result_check(const hl_launch_options_t *o, const hl_program_t *program,
                                   const hl_literal_t *result, const hl_grid_t *grid,
                                   const char *flag) {
  hl_sharding_t storage;
  const hl_sharding_t *s;
  hl_status_t st = hl_global_output_sharding(o, program, grid, &storage, &s);
  if (!st) st = check_result(result, s, grid, flag);
  hl_sharding_deinit(&storage);
  return st;
}

hl_status_t hl_global_output_check(const hl_launch_options_t *o, const hl_program_t *program,
                                   const hl_literal_t *result, const hl_grid_t *grid) {
  return hl_global_result_check(o, program, result, grid, "--global-output");
}

enum { kChunk = 1 << 28 };

static void send_bytes(MPI_Comm comm, const void *data, size_t n, int to) {
  for (size_t off = 0; off < n || (n == 0 && off == 0); off += kChunk) {
    int count = n - off < (size_t)kChunk ? (int)(n - off) : kChunk;
    hl_polite_send((const char *)data + off, count, MPI_BYTE, to, 7, comm);
    if (n == 0) break;
  }
}

static void recv_bytes(MPI_Comm comm, void *data, size_t n, int from) {
  for (size_t off = 0; off < n || (n == 0 && off == 0); off += kChunk) {
    int count = n - off < (size_t)kChunk ? (int)(n - off) : kChunk;
    hl_polite_recv((char *)data + off, count, MPI_BYTE, from, 7, comm, MPI_STATUS_IGNORE);
    if (n == 0) break;
  }
}

static bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// The global result shape a partitioned program recorded on its root
// (runtime/spmd), when it fits shards of `local` dims in `tiles`: an uneven
// split's last tiles are padding, so local x tiles would overstate it.
static bool recorded_global_dims(const hl_program_t *program, const hl_shape_t *local, const int64_t *tiles,
                                 int64_t *dims) {
  const hl_instruction_t *root = program->module && program->module->entry ? program->module->entry->root : NULL;
  const char *text = root ? hl_instruction_frontend_attribute(root, HL_SPMD_GLOBAL_SHAPE_ATTR) : NULL;
  if (!text) return false;
  hl_shape_t g;
  hl_status_t st = hl_parse_shape(text, &g);
  if (st) {
    hl_status_free(st);
    return false;
  }
  bool ok = hl_shape_is_array(&g) && g.rank == local->rank && g.dtype == local->dtype;
  int64_t want[HL_MAX_RANK];
  if (ok) hl_sharding_shard_dims(g.rank, g.dims, tiles, want);
  for (int d = 0; ok && d < g.rank; d++) ok = want[d] == local->dims[d];
  for (int d = 0; ok && d < g.rank; d++) dims[d] = g.dims[d];
  hl_shape_deinit(&g);
  return ok;
}

static hl_status_t assemble(MPI_Comm comm, const hl_program_t *program, const hl_sharding_t *s,
                            const hl_literal_t *result, const hl_grid_t *grid, int rank, const char *flag,
                            hl_literal_t **out_global) {
  *out_global = NULL;
  const hl_shape_t *shape = &result->shape;
  int r = shape->rank;
  int64_t tiles[HL_MAX_RANK], tile[HL_MAX_RANK];
  bool holds;
  // Replica 0 is ranks 0 .. P-1 (rank = replica * P + partition).
  if (rank != 0) {
    if (rank < grid->partitions) {
      hl_status_t st = hl_sharding_locate(s, r, grid->partitions, rank, tiles, tile, &holds);
      if (st) {
        hl_status_free(st);  // checked before; cannot differ here
        return NULL;
      }
      if (holds) send_bytes(comm, result->data, result->byte_size, 0);
    }
    return NULL;
  }
  // Rank 0 receives every holder's shard even when it fails, so no sender blocks.
  HL_RETURN_IF_ERROR(hl_sharding_locate(s, r, grid->partitions, 0, tiles, tile, &holds));
  hl_shape_t global_shape = *shape;
  for (int d = 0; d < r; d++) global_shape.dims[d] = shape->dims[d] * tiles[d];
  int64_t recorded[HL_MAX_RANK];
  if (recorded_global_dims(program, shape, tiles, recorded))
    for (int d = 0; d < r; d++) global_shape.dims[d] = recorded[d];
  global_shape.has_layout = false;
  global_shape.tuple = NULL;
  global_shape.tuple_count = 0;
  hl_literal_t *global = NULL, *piece = NULL;
  hl_status_t st = hl_literal_create(&global_shape, &global);
  if (!st) st = hl_literal_create(shape, &piece);
  bool *covered = NULL;
  int64_t tile_count = 1;
  for (int d = 0; d < r; d++) tile_count *= tiles[d];
  if (!st) {
    covered = hl_calloc((size_t)tile_count, sizeof(bool));
    if (!covered) st = HL_OOM();
  }
  for (int64_t p = 0; p < grid->partitions; p++) {
    hl_status_t lst = hl_sharding_locate(s, r, grid->partitions, p, tiles, tile, &holds);
    if (lst || !holds) {
      hl_status_free(lst);
      continue;
    }
    const hl_literal_t *src = result;
    if (p != 0) {
      if (piece)
        recv_bytes(comm, piece->data, piece->byte_size, (int)p);
      else {
        // Out of memory: drain the message so the sender finishes.
        char sink[1];
        hl_polite_recv(sink, 0, MPI_BYTE, (int)p, 7, comm, MPI_STATUS_IGNORE);
      }
      src = piece;
    }
    if (st) continue;
    int64_t flat = 0;
    for (int d = 0; d < r; d++) flat = flat * tiles[d] + tile[d];
    if (covered[flat]) continue;  // a replicated copy: the first one counts
    covered[flat] = true;
    st = hl_sharding_insert(global, tiles, tile, src);
  }
  for (int64_t t = 0; t < tile_count && !st; t++)
    if (!covered[t])
      st = HL_INVALID("%s: no partition holds tile %lld of the sharding %s", flag,
                      (long long)t, hl_sharding_describe(s));
  hl_free(covered);
  hl_literal_release(piece);
  if (st) {
    hl_literal_release(global);
    return st;
  }
  *out_global = global;
  return NULL;
}

hl_status_t hl_global_output_assemble(MPI_Comm comm, const hl_launch_options_t *o,
                                      const hl_program_t *program, const hl_literal_t *result,
                                      const hl_grid_t *grid, int rank, const char *flag,
                                      hl_literal_t **out_global) {
  *out_global = NULL;
  hl_sharding_t storage;
  const hl_sharding_t *s;
  // Checked by hl_global_result_check on every rank before.
  hl_status_t st = hl_global_output_sharding(o, program, grid, &storage, &s);
  if (!st) st = assemble(comm, program, s, result, grid, rank, flag, out_global);
  hl_sharding_deinit(&storage);
  return st;
}

hl_status_t hl_global_output_write(MPI_Comm comm, const hl_launch_options_t *o,
                                   const hl_program_t *program, const hl_literal_t *result,
                                   const hl_grid_t *grid, int rank, const hl_inputs_t *inputs) {
  const char *path = o->global_output;
  hl_literal_t *global = NULL;
  HL_RETURN_IF_ERROR(hl_global_output_assemble(comm, o, program, result, grid, rank,
                                               "--global-output", &global));
  if (rank != 0) return NULL;
  hl_status_t st = NULL;
  for (int i = 0; inputs && i < inputs->file_count && !st; i++)
    if (same_file(path, inputs->files[i]))
      st = HL_INVALID("refusing to overwrite the input file %s with --global-output", path);
  if (!st) st = hl_npy_write_file(path, global);
  hl_literal_release(global);
  return st;
}
