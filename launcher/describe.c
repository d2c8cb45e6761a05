#include "launcher/describe.h"

#include "launcher/sharding.h"
#include "runtime/base/alloc.h"

static void append_value(hl_strbuf_t *out, int index, const hl_shape_t *shape,
                         const hl_sharding_t *sharding) {
  hl_strbuf_appendf(out, "  %d: ", index);
  hl_shape_print(shape, false, out);
  if (sharding) hl_strbuf_appendf(out, "  sharding %s", hl_sharding_describe(sharding));
  hl_strbuf_append(out, "\n");
}

static void append_grid(const hl_module_t *m, hl_strbuf_t *out) {
  if (!m->replica_count && !m->num_partitions) {
    hl_strbuf_append(out, "grid: not stated (-np / --replicas / --partitions choose it)\n");
    return;
  }
  hl_strbuf_append(out, "grid:");
  if (m->replica_count)
    hl_strbuf_appendf(out, " %lld replica%s", (long long)m->replica_count,
                      hl_plural(m->replica_count));
  if (m->replica_count && m->num_partitions) hl_strbuf_append(out, " x");
  if (m->num_partitions)
    hl_strbuf_appendf(out, " %lld partition%s", (long long)m->num_partitions,
                      hl_plural(m->num_partitions));
  hl_strbuf_append(out, "\n");
}

static void append_origin(const hl_program_t *p, hl_strbuf_t *out) {
  if (p->has_jax_export) {
    hl_strbuf_appendf(out, "jax.export: serialization version %u, calling convention version %u\n",
                      (unsigned)p->jax_serialization_version,
                      (unsigned)p->jax_calling_convention_version);
    hl_strbuf_appendf(out, "function: %s\n", p->jax_function_name[0] ? p->jax_function_name : "?");
    hl_strbuf_appendf(out, "platforms: %s\n", p->jax_platforms[0] ? p->jax_platforms : "(none)");
    hl_strbuf_appendf(out, "devices: %d\n", p->jax_nr_devices);
  }
  if (p->format == HL_FORMAT_STABLEHLO_BYTECODE || p->format == HL_FORMAT_JAX_EXPORT) {
    int major, minor, patch;
    hl_strbuf_appendf(out, "producer: %s\n", p->producer[0] ? p->producer : "?");
    if (sscanf(p->producer, "StableHLO_v%d.%d.%d", &major, &minor, &patch) == 3)
      hl_strbuf_appendf(out, "stablehlo version: %d.%d.%d\n", major, minor, patch);
    hl_strbuf_appendf(out, "bytecode version: %llu\n", (unsigned long long)p->bytecode_version);
  }
}

// A tuple-shaped entry result lists its elements (the StableHLO and jax
// entries return tuples for several results).
static void append_results(const hl_computation_t *entry, hl_strbuf_t *out) {
  const hl_instruction_t *root = entry->root;
  const hl_sharding_t *s = root->attrs.sharding;
  if (root->shape.dtype != HL_TUPLE) {
    hl_strbuf_append(out, "results: 1\n");
    append_value(out, 0, &root->shape, s);
    return;
  }
  hl_strbuf_appendf(out, "results: %d\n", root->shape.tuple_count);
  for (int i = 0; i < root->shape.tuple_count; i++) {
    const hl_sharding_t *e = s && s->type == HL_SHARDING_TUPLE && i < s->tuple_count
                                 ? &s->tuple_shardings[i]
                                 : (s && s->type != HL_SHARDING_TUPLE ? s : NULL);
    append_value(out, i, &root->shape.tuple[i], e);
  }
}

hl_status_t hl_describe_program(const hl_program_t *p, const char *path, hl_strbuf_t *out) {
  hl_strbuf_appendf(out, "program: %s\n", path);
  hl_strbuf_appendf(out, "format: %s%s\n", hl_program_format_name(p->format),
                    p->gzipped ? " (gzip)" : "");
  append_origin(p, out);
  if (!p->module) {
    // Dynamic shapes kept for refinement: the declared parameter types are
    // all there is until arguments fix them.
    hl_shape_t *types;
    int count;
    HL_RETURN_IF_ERROR(hl_program_dynamic_entry_types(p, &types, &count));
    hl_strbuf_append(out, "dynamic shapes: yes (refined from the arguments when it runs; the "
                          "grid, shardings and results are known only then)\n");
    hl_strbuf_appendf(out, "arguments: %d\n", count);
    for (int i = 0; i < count; i++) append_value(out, i, &types[i], NULL);
    hl_strbuf_append(out, "results: known once the arguments fix the dynamic shapes\n");
    for (int i = 0; i < count; i++) hl_shape_deinit(&types[i]);
    hl_free(types);
    return NULL;
  }
  const hl_module_t *m = p->module;
  hl_strbuf_appendf(out, "module: %s\n", m->name ? m->name : "?");
  append_grid(m, out);
  const hl_computation_t *entry = m->entry;
  if (!entry || !entry->root) return HL_INVALID("%s: the program has no entry computation", path);
  hl_strbuf_appendf(out, "arguments: %d\n", entry->parameter_count);
  for (int i = 0; i < entry->parameter_count; i++) {
    const hl_instruction_t *param = entry->parameters[i];
    if (!param) return HL_INVALID("%s: the entry has no parameter %d", path, i);
    const hl_sharding_t *s = param->attrs.sharding;
    if (!s && i < m->spmd_parameters_sharding_count) s = &m->spmd_parameters_shardings[i];
    append_value(out, i, &param->shape, s);
  }
  append_results(entry, out);
  if (p->argument_count)
    hl_strbuf_appendf(out, "snapshot arguments: %d (used unless --args-dir / --random-args)\n",
                      p->argument_count);
  return NULL;
}

int hl_describe_main(const hl_launch_options_t *o, FILE *out) {
  const char *single[1] = {o->program};
  const char *const *paths = o->program_count > 0 ? o->programs : single;
  int count = o->program_count > 0 ? o->program_count : 1;
  if (!paths[0]) {
    fputs("hlo-launch: --describe needs a PROGRAM\n", stderr);
    return 2;
  }
  int code = 0;
  for (int i = 0; i < count; i++) {
    hl_program_t program;
    hl_status_t st = hl_program_load_file_with(
        paths[i], &(hl_program_load_options_t){o->max_inflated_bytes, true}, &program);
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    if (!st) {
      st = hl_describe_program(&program, paths[i], &sb);
      hl_program_deinit(&program);
    }
    if (!st) {
      if (i) fputs("\n", out);
      fputs(hl_strbuf_cstr(&sb), out);
      fflush(out);
    } else {
      if (program.has_jax_export) {  // what the container says, then why it does not load
        hl_strbuf_appendf(&sb, "program: %s\nformat: %s%s\n", paths[i],
                          hl_program_format_name(program.format),
                          program.gzipped ? " (gzip)" : "");
        append_origin(&program, &sb);
        if (i) fputs("\n", out);
        fputs(hl_strbuf_cstr(&sb), out);
      }
      fflush(out);
      fprintf(stderr, "hlo-launch: %s\n", hl_status_message(st));
      hl_status_free(st);
      code = 1;
    }
    hl_strbuf_deinit(&sb);
  }
  return code;
}
