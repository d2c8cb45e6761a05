"""kCustom fusions from XLA GPU dumps (Triton, cuDNN, dynamic-slice), replayed on CPU.

XLA's GPU compiler marks fusions it hands to Triton or cuDNN with kind=kCustom and a
fusion_backend_config whose "kind" names the emitter (__triton_gemm, __triton,
__triton_nested_gemm_fusion, __cudnn$fusion, __custom_fusion, ...; constants in
xla/service/gpu/ir_emission_utils.h). The tiling configs only steer code generation:
the value is the called computation's, an ordinary HLO computation. The programs are
written in the forms of XLA's tests (gemm_fusion_autotuner_test.cc,
triton_emitter tests, symbolic_tile_analysis_test.cc, dynamic_slice_fusion tests).
NumPy is the oracle; every program runs on 2 ranks and both ranks are checked.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

RANKS = 2


def run(name, text, args, nresults):
    return hl.run_hlo_text("fusion-" + name, text, args, nresults, RANKS)


def check_all(name, per_rank, wants, tol=None):
    for rep, got in enumerate(per_rank):
        for j, (g, w) in enumerate(zip(got, wants)):
            msg = hl.compare("%s rank %d result %d" % (name, rep, j), g, w, tol)
            if msg:
                return msg
    return None


def rand(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def triton_gemm_split_k():
    """__triton_gemm after the split-k rewrite: the fusion computes the partial products
    (the computation already holds the split), a reduce outside adds them
    (gemm_fusion_autotuner_test.cc's ApplySplitKWithoutAlteringTiling form)."""
    x = rand((55, 120), np.float32, 1)
    y = rand((120, 20), np.float32, 2)
    text = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}

%triton_gemm_dot (parameter_0: f32[55,120], parameter_1: f32[120,20]) -> f32[3,55,20] {
  %parameter_0 = f32[55,120]{1,0} parameter(0)
  %bitcast.0 = f32[55,3,40]{2,1,0} bitcast(f32[55,120]{1,0} %parameter_0)
  %parameter_1 = f32[120,20]{1,0} parameter(1)
  %bitcast.1 = f32[3,40,20]{2,1,0} bitcast(f32[120,20]{1,0} %parameter_1)
  ROOT %dot.1 = f32[3,55,20]{2,1,0} dot(f32[55,3,40]{2,1,0} %bitcast.0, f32[3,40,20]{2,1,0} %bitcast.1), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}

ENTRY %e (p0: f32[55,120], p1: f32[120,20]) -> f32[55,20] {
  %p0 = f32[55,120]{1,0} parameter(0)
  %p1 = f32[120,20]{1,0} parameter(1)
  %triton_gemm = f32[3,55,20]{2,1,0} fusion(f32[55,120]{1,0} %p0, f32[120,20]{1,0} %p1), kind=kCustom, calls=%triton_gemm_dot, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"16","block_n":"64","block_k":"32","split_k":"3","num_stages":"1","num_warps":"2","num_ctas":"1"}},"force_earliest_schedule":false}
  %constant = f32[] constant(0)
  ROOT %reduce = f32[55,20]{1,0} reduce(f32[3,55,20]{2,1,0} %triton_gemm, f32[] %constant), dimensions={0}, to_apply=%add
}
"""
    return check_all("split-k triton gemm", run("splitk", text, [x, y], 1),
                     [(x.astype(np.float64) @ y).astype(np.float32)], (1e-5, 1e-5))


def triton_softmax():
    """A generic __triton fusion (block_level_fusion_config): the softmax normaliser
    XLA's SoftmaxRewriterTriton forms."""
    x = rand((8, 16), np.float32, 3)
    text = """HloModule softmax

max_computation {
  arg_0 = f32[] parameter(0)
  arg_1 = f32[] parameter(1)
  ROOT maximum = f32[] maximum(arg_0, arg_1)
}

add_computation {
  arg_0.1 = f32[] parameter(0)
  arg_1.1 = f32[] parameter(1)
  ROOT add = f32[] add(arg_0.1, arg_1.1)
}

triton_softmax_computation {
  param_0 = f32[8,16]{1,0} parameter(0)
  constant = f32[] constant(-inf)
  reduce = f32[8]{0} reduce(param_0, constant), dimensions={1}, to_apply=max_computation
  broadcast = f32[8,16]{1,0} broadcast(reduce), dimensions={0}
  subtract = f32[8,16]{1,0} subtract(param_0, broadcast)
  exponential = f32[8,16]{1,0} exponential(subtract)
  constant.1 = f32[] constant(0)
  reduce.1 = f32[8]{0} reduce(exponential, constant.1), dimensions={1}, to_apply=add_computation
  broadcast.1 = f32[8,16]{1,0} broadcast(reduce.1), dimensions={0}
  ROOT divide = f32[8,16]{1,0} divide(exponential, broadcast.1)
}

ENTRY main {
  param_0 = f32[8,16]{1,0} parameter(0)
  ROOT triton_softmax = f32[8,16]{1,0} fusion(param_0), kind=kCustom, calls=triton_softmax_computation, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":{"kind":"__triton","block_level_fusion_config":{"num_warps":"1","output_tiles":[{"sizes":["1","16"]}],"num_ctas":1,"num_stages":1}},"force_earliest_schedule":false}
}
"""
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return check_all("triton softmax", run("softmax", text, [x], 1),
                     [(e / e.sum(axis=1, keepdims=True)).astype(np.float32)], (1e-6, 1e-6))


def triton_nested_gemm():
    """__triton_nested_gemm_fusion: the operands of the dot are themselves kCustom
    fusions (a computation named like an instruction, as XLA's dumps print it), one
    with an elementwise prologue; the dot carries an algorithm."""
    x = rand((32, 32), np.float32, 4)
    y = rand((32, 32), np.float32, 5)
    cfg = ('{"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":'
           '{"kind":"__triton_nested_gemm_fusion","block_level_fusion_config":{"num_warps":"4",'
           '"output_tiles":[{"sizes":["%s","%s"]}],"num_ctas":1,"num_stages":1,'
           '"is_tma_allowed":false,"is_warp_specialization_allowed":false}},'
           '"force_earliest_schedule":false,"reification_cost":[],'
           '"device_type":"DEVICE_TYPE_INVALID"}')
    text = """HloModule jit_matmul_with_elementwise, entry_computation_layout={(f32[32,32]{1,0}, f32[32,32]{1,0})->f32[32,32]{1,0}}

%%parameter_0 (parameter_0.1: f32[32,32]) -> f32[32,32] {
  ROOT %%parameter_0.1 = f32[32,32]{1,0} parameter(0)
}

%%parameter_1 (parameter_0.2: f32[32,32]) -> f32[32,32] {
  %%parameter_0.2 = f32[32,32]{1,0} parameter(0)
  ROOT %%abs = f32[32,32]{1,0} abs(f32[32,32]{1,0} %%parameter_0.2)
}

%%gemm_fusion_dot.1_computation (parameter_0: f32[32,32], parameter_1: f32[32,32]) -> f32[32,32] {
  %%parameter_0 = f32[32,32]{1,0} parameter(0)
  %%block_fusion = f32[32,32]{1,0} fusion(f32[32,32]{1,0} %%parameter_0), kind=kCustom, calls=%%parameter_0, backend_config=%s
  %%parameter_1 = f32[32,32]{1,0} parameter(1)
  %%block_fusion.1 = f32[32,32]{1,0} fusion(f32[32,32]{1,0} %%parameter_1), kind=kCustom, calls=%%parameter_1, backend_config=%s
  ROOT %%dot.0 = f32[32,32]{1,0} dot(f32[32,32]{1,0} %%block_fusion, f32[32,32]{1,0} %%block_fusion.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_f32_f32_f32
}

ENTRY %%main.4 (x.1: f32[32,32], y.1: f32[32,32]) -> f32[32,32] {
  %%x.1 = f32[32,32]{1,0} parameter(0)
  %%y.1 = f32[32,32]{1,0} parameter(1)
  ROOT %%gemm_fusion_dot.1 = f32[32,32]{1,0} fusion(f32[32,32]{1,0} %%x.1, f32[32,32]{1,0} %%y.1), kind=kCustom, calls=%%gemm_fusion_dot.1_computation, backend_config=%s
}
""" % (cfg % ("32", "32"), cfg % ("32", "16"), cfg % ("32", "32"))
    return check_all("nested triton gemm", run("nested", text, [x, y], 1),
                     [(x.astype(np.float64) @ np.abs(y)).astype(np.float32)], (1e-5, 1e-5))


def cudnn_fusion():
    """A __cudnn$fusion (cuDNN GEMM fusion): dot with a convert prologue and a scale."""
    x = rand((16, 32), np.float16, 6)
    y = rand((32, 8), np.float32, 7)
    text = """HloModule m

fusion1 {
  p0 = f16[16,32]{1,0} parameter(0)
  c0 = f32[16,32]{1,0} convert(p0)
  p1 = f32[32,8]{1,0} parameter(1)
  d = f32[16,8]{1,0} dot(c0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  two = f32[] constant(2)
  b = f32[16,8]{1,0} broadcast(two), dimensions={}
  ROOT m = f32[16,8]{1,0} multiply(d, b)
}

ENTRY e {
  p0 = f16[16,32]{1,0} parameter(0)
  p1 = f32[32,8]{1,0} parameter(1)
  ROOT _ = f32[16,8]{1,0} fusion(p0, p1), kind=kCustom, calls=fusion1,
    backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":{"kind":"__cudnn$fusion","cudnn_fusion_config":{"plan_id":"0"}},"force_earliest_schedule":false}
}
"""
    want = (2 * (x.astype(np.float64) @ y)).astype(np.float32)
    return check_all("cudnn fusion", run("cudnn", text, [x, y], 1), [want], (1e-5, 1e-5))


def dynamic_slice_fusion_with_gemm():
    """dynamic_address_computation: a __custom_fusion whose computation slices its
    operands and calls cuBLAS (the DynamicSliceFusionRewriter form)."""
    a = rand((2, 8, 8), np.float32, 8)
    b = rand((2, 8, 8), np.float32, 9)
    gemm_cfg = ('{"gemm_backend_config":{"alpha_real":1,"beta":0,"dot_dimension_numbers":'
                '{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],'
                '"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"alpha_imag":0,'
                '"precision_config":{"operand_precision":["DEFAULT","DEFAULT"]},'
                '"epilogue":"DEFAULT"}}')
    text = """HloModule test

dynamic-slice-fusion {
  p0 = f32[2,8,8]{2,1,0} parameter(0)
  p1 = f32[2,8,8]{2,1,0} parameter(1)
  c1 = s32[] constant(1)
  c0 = s32[] constant(0)
  slice.13 = f32[1,8,8]{2,1,0} dynamic-slice(p0, c1, c0, c0), dynamic_slice_sizes={1,8,8}
  bitcast.41 = f32[8,8]{1,0} bitcast(slice.13)
  slice.14 = f32[1,8,8]{2,1,0} dynamic-slice(p1, c0, c0, c0), dynamic_slice_sizes={1,8,8}
  bitcast.42 = f32[8,8]{1,0} bitcast(slice.14)
  custom-call.1 = (f32[8,8]{1,0}, s8[256]{0}) custom-call(bitcast.41, bitcast.42), custom_call_target="__cublas$gemm", backend_config=%s
  ROOT get-tuple-element = f32[8,8]{1,0} get-tuple-element(custom-call.1), index=0
}

ENTRY main.9 {
  p0 = f32[2,8,8]{2,1,0} parameter(0)
  p1 = f32[2,8,8]{2,1,0} parameter(1)
  ROOT fusion = f32[8,8]{1,0} fusion(p0, p1), kind=kCustom, calls=dynamic-slice-fusion,
    backend_config={"fusion_backend_config":{"kind":"__custom_fusion","custom_fusion_config":{"name":"dynamic_address_computation"}}}
}
""" % gemm_cfg
    want = (a[1].astype(np.float64) @ b[0]).astype(np.float32)
    return check_all("dynamic-slice fusion gemm", run("dyn", text, [a, b], 1), [want],
                     (1e-5, 1e-5))


def triton_custom_call_with_computation():
    """The older form (early-2023 XLA, triton_autotuner_test.cc): custom-call target
    "__triton" with called_computations and the tiling as a quoted backend_config."""
    x = np.random.default_rng(9).integers(-4, 5, (16, 8)).astype(np.int8)
    y = rand((8, 24), np.float16, 10)
    text = """HloModule module

%out (parameter_0: s8[16,8], parameter_1: f16[8,24]) -> f16[16,24] {
  %parameter_0 = s8[16,8]{1,0} parameter(0)
  %c.1 = f16[16,8]{1,0} convert(s8[16,8]{1,0} %parameter_0)
  %parameter_1 = f16[8,24]{1,0} parameter(1)
  ROOT %out.1 = f16[16,24]{1,0} dot(f16[16,8]{1,0} %c.1, f16[8,24]{1,0} %parameter_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %e (x: s8[16,8], y: f16[8,24]) -> f16[16,24] {
  %x = s8[16,8]{1,0} parameter(0)
  %y = f16[8,24]{1,0} parameter(1)
  ROOT %custom-call = f16[16,24]{1,0} custom-call(s8[16,8]{1,0} %x, f16[8,24]{1,0} %y), custom_call_target="__triton", called_computations={%out}, backend_config="{\\\"block_m\\\":\\\"32\\\",\\\"block_n\\\":\\\"32\\\",\\\"block_k\\\":\\\"32\\\",\\\"split_k\\\":\\\"1\\\",\\\"num_stages\\\":\\\"1\\\",\\\"num_warps\\\":\\\"4\\\"}"
}
"""
    want = (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float16)
    return check_all("__triton custom-call", run("triton-cc", text, [x, y], 1), [want],
                     (1e-3, 1e-2))


def triton_kernel_custom_call_is_an_error():
    """A custom-call that carries a Triton kernel (jax-triton / Pallas GPU lowering:
    TTIR text in backend_config) has no HLO to run: it fails before launch, named."""
    with hl.tempdir("fusion-err") as d:
        msgs = []
        for target in ("__gpu$xla.gpu.triton", "triton_kernel_call"):
            path = os.path.join(d, "p.hlo")
            with open(path, "w") as f:
                f.write("""HloModule m

ENTRY e {
  p = f32[8]{0} parameter(0)
  ROOT cc = f32[8]{0} custom-call(p), custom_call_target="%s", api_version=API_VERSION_TYPED_FFI, backend_config={name = "add_one", ir = "tt.func @add_one() { tt.return }", num_stages = 3 : i32, num_warps = 4 : i32, grid_x = 1 : i32, grid_y = 1 : i32, grid_z = 1 : i32, debug = false}
}
""" % target)
            r = hl.launch(path, replicas=RANKS, extra=("--zeros",))
            out = r.stdout + r.stderr
            if r.returncode == 0 or target not in out or "Triton kernel" not in out:
                msgs.append("%s: expected a pre-launch error naming it\n%s" % (target,
                                                                            r.describe()))
        return msgs[0] if msgs else None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("triton_gemm_split_k", triton_gemm_split_k),
        ("triton_generic_softmax", triton_softmax),
        ("triton_nested_gemm_fusion", triton_nested_gemm),
        ("cudnn_gemm_fusion", cudnn_fusion),
        ("dynamic_slice_custom_fusion_with_cublas", dynamic_slice_fusion_with_gemm),
        ("triton_custom_call_with_called_computation", triton_custom_call_with_computation),
        ("triton_kernel_custom_call_fails_before_launch", triton_kernel_custom_call_is_an_error),
    ])
