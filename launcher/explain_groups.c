#include "launcher/explain_groups.h"

#include "collectives/groups.h"
#include "runtime/loader/program_loader.h"
#include "runtime/spmd/grid.h"
#include "runtime/verifier/verifier.h"

// "(r,p)" of a flattened id.
static void append_process(hl_strbuf_t *out, int rank, int64_t P) {
  hl_strbuf_appendf(out, "(%lld,%lld)", (long long)(rank / P), (long long)(rank % P));
}

static void explain_one(const hl_instruction_t *inst, const hl_process_groups_t *g, int64_t R,
                        int64_t P, hl_strbuf_t *out) {
  hl_strbuf_appendf(out, "%s (%s) in computation '%s': mode %s, %d %s\n", inst->name,
                    hl_opcode_name(inst->opcode), inst->parent ? inst->parent->name : "?",
                    hl_group_mode_name(g->mode), g->group_count,
                    g->is_permute ? (g->group_count == 1 ? "pair" : "pairs")
                                  : (g->group_count == 1 ? "group" : "groups"));
  for (int k = 0; k < g->group_count; k++) {
    int b = g->offsets[k], e = g->offsets[k + 1];
    if (g->is_permute) {
      hl_strbuf_appendf(out, "  pair %d: ", k);
      append_process(out, g->ranks[b], P);
      hl_strbuf_append(out, " -> ");
      append_process(out, g->ranks[b + 1], P);
      hl_strbuf_appendf(out, "  ranks %d -> %d\n", g->ranks[b], g->ranks[b + 1]);
      continue;
    }
    hl_strbuf_appendf(out, "  group %d: [", k);
    for (int i = b; i < e; i++) {
      if (i > b) hl_strbuf_append(out, ", ");
      append_process(out, g->ranks[i], P);
    }
    hl_strbuf_append(out, "]  ranks [");
    for (int i = b; i < e; i++) hl_strbuf_appendf(out, i > b ? ", %d" : "%d", g->ranks[i]);
    hl_strbuf_append(out, "]\n");
  }
  // Processes outside every group (collective-broadcast: they get zeros;
  // collective-permute: no source, they get zeros).
  int64_t n = R * P, missing = 0;
  for (int64_t r = 0; r < n; r++) {
    bool found = g->is_permute ? hl_process_groups_permute_source(g, (int)r) >= 0
                               : hl_process_groups_find(g, (int)r, NULL) >= 0;
    if (found) continue;
    hl_strbuf_append(out, missing++ ? ", " : "  receive zeros: ");
    append_process(out, (int)r, P);
  }
  if (missing) hl_strbuf_append(out, "\n");
  if (inst->opcode == HL_OP_COLLECTIVE_REDUCE)
    hl_strbuf_append(out, inst->attrs.has_dynamic_root
                              ? "  root: the group position its roots operand holds (at run "
                                "time); the other members receive zeros\n"
                              : "  root: each group's first member; the other members receive "
                                "zeros\n");
  hl_strbuf_append(out, "\n");  // a blank line ends each collective's block
}

int hl_explain_groups(const hl_module_t *module, int64_t R, int64_t P, hl_strbuf_t *out) {
  int bad = 0, count = 0;
  hl_strbuf_appendf(out, "grid: %lld replica%s x %lld partition%s (rank = replica * %lld + "
                    "partition)\n", (long long)R, hl_plural(R), (long long)P, hl_plural(P),
                    (long long)P);
  for (int k = 0; k < module->computation_count; k++) {
    const hl_computation_t *c = module->computations[k];
    for (int i = 0; i < c->instruction_count; i++) {
      const hl_instruction_t *inst = c->instructions[i];
      if (!hl_opcode_is_collective(inst->opcode)) continue;
      count++;
      hl_process_groups_t g;
      hl_status_t st = hl_process_groups_resolve(inst, R, P, &g);
      if (st) {
        hl_strbuf_appendf(out, "%s (%s): error: %s\n", inst->name, hl_opcode_name(inst->opcode),
                          hl_status_message(st));
        hl_status_free(st);
        bad++;
        continue;
      }
      explain_one(inst, &g, R, P, out);
      hl_process_groups_deinit(&g);
    }
  }
  if (!count) hl_strbuf_append(out, "no collectives\n");
  return bad;
}

bool hl_explain_load(const hl_launch_options_t *o, hl_program_t *program, hl_grid_t *grid) {
  hl_status_t st = hl_program_load_file_with(
      o->program, &(hl_program_load_options_t){o->max_inflated_bytes, false}, program);
  if (!st) {
    st = hl_verify_module(program->module);
    if (!st)
      st = hl_grid_resolve(o->np, o->replicas, o->partitions, program->module->replica_count,
                           program->module->num_partitions, grid);
    if (st) hl_program_deinit(program);
  }
  if (!st) return true;
  fprintf(stderr, "hlo-launch: %s\n", hl_status_message(st));
  hl_status_free(st);
  return false;
}

int hl_explain_groups_main(const hl_launch_options_t *o, FILE *out) {
  hl_program_t program;
  hl_grid_t grid;
  if (!hl_explain_load(o, &program, &grid)) return 1;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  int bad = hl_explain_groups(program.module, grid.replicas, grid.partitions, &sb);
  fputs(hl_strbuf_cstr(&sb), out);
  fflush(out);
  hl_strbuf_deinit(&sb);
  hl_program_deinit(&program);
  return bad ? 1 : 0;
}
