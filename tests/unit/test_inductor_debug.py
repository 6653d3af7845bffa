"""--inductor-dir: output_code.py comments, the provenance JSON and fx_graph_readable.py lines → each generated
kernel's nodes and source lines (parsers/inductor_debug), and the clear errors on a wrong folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.parsers.inductor_debug import read_inductor_dir

# ruff: noqa: E501 - the generated code's own long lines, as Inductor writes them

# the shape of a real Triton output_code.py (torch 2.11), cut down
_TRITON = """# AOT ID: ['0_inference']
from torch._inductor.async_compile import AsyncCompile
async_compile = AsyncCompile()


# kernel path: /tmp/torchinductor_root/zy/czydm3arz4oze5oe4ltzbzigh3amsabovpoyqqld64gvjmylfnsd.py
# Topologically Sorted Source Nodes: [, input_2, input_3], Original ATen: [aten.addmm, aten.gelu, aten.native_layer_norm]
# Source node to ATen node mapping:
#    => add_tensor_1
#   input_2 => add, erf, mul
#   input_3 => var_mean
# Graph fragment:
#   %mul : Tensor "f32[256, 1024][1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor]
#   return %getitem_1,%buf2,%add_2
triton_per_fused_addmm_gelu_native_layer_norm_0 = async_compile.triton('triton_per_fused_addmm_gelu_native_layer_norm_0', '''
import triton
''', device_str='cuda')


async_compile.wait(globals())

class Runner:
    def call(self, args):
        # Topologically Sorted Source Nodes: [input_1, ], Original ATen: [aten.t, aten.addmm]
        # [Provenance debug handles] extern_kernels.mm:1
        extern_kernels.mm(arg2_1, reinterpret_tensor(arg0_1, (1024, 1024), (1, 1024), 0), out=buf0)
        # [Provenance debug handles] triton_per_fused_addmm_gelu_native_layer_norm_0:2
        triton_per_fused_addmm_gelu_native_layer_norm_0.run(buf4, arg1_1, 256, 1024, stream=stream0)
        return (buf4, )
"""

_READABLE = """class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[1024, 1024]"):
        # File: /home/me/model.py:201 in forward, code: x = self.a2(self.a(x))
        mul: "f32[256, 1024]" = torch.ops.aten.mul.Tensor(addmm, 0.5)
        erf: "f32[256, 1024]" = torch.ops.aten.erf.default(mul_1);  mul_1 = None
        var_mean = torch.ops.aten.var_mean.correction(mul_2, [1], correction = 0, keepdim = True)
        # File: /home/me/model.py:203 in resume, code: return self.b(x).softmax(-1)
        relu: "f32[256, 1024]" = torch.ops.aten.relu.default(addmm_1)
        return (add_5,)
"""

# a C++ (CPU) kernel has no comment block above its definition: the provenance JSON names its nodes
_CPP = """# AOT ID: ['1_inference']
cpp_fused__softmax_relu_0 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* in_out_ptr0) {}
''')

class Runner:
    def call(self, args):
        # Topologically Sorted Source Nodes: [input_1], Original ATen: [aten.t, aten.addmm]
        extern_kernels.addmm(arg1_1, arg2_1, out=buf0)
        # [Provenance debug handles] cpp_fused__softmax_relu_0:2
        cpp_fused__softmax_relu_0(buf2, buf4)
"""


def _debug_dir(tmp_path: Path) -> Path:
    run = tmp_path / "torch_compile_debug" / "run_1" / "torchinductor"
    g0 = run / "model__0_inference_0.0"
    g0.mkdir(parents=True)
    (g0 / "output_code.py").write_text(_TRITON)
    (g0 / "fx_graph_readable.py").write_text(_READABLE)
    g1 = run / "model__1_inference_1.1"
    g1.mkdir(parents=True)
    (g1 / "output_code.py").write_text(_CPP)
    (g1 / "fx_graph_readable.py").write_text(_READABLE)
    (g1 / "inductor_provenance_tracking_node_mappings.json").write_text(
        json.dumps(
            {
                "cppCodeToPost": {"extern_kernels.addmm:1": ["addmm"], "cpp_fused__softmax_relu_0:2": ["relu", "div"]},
                "postToPre": {"relu": ["input_2"], "div": ["softmax"]},
            }
        )
    )
    return tmp_path


def test_triton_kernel_comments(tmp_path: Path) -> None:
    by_name = {s.kernel: s for s in read_inductor_dir(str(_debug_dir(tmp_path)))}
    s = by_name["triton_per_fused_addmm_gelu_native_layer_norm_0"]
    assert s.graph == "0_inference"
    assert s.kernel_hash == "czydm3arz4oze5oe4ltzbzigh3amsabovpoyqqld64gvjmylfnsd"
    assert s.source_nodes == ("input_2", "input_3")
    assert s.aten_ops == ("aten.addmm", "aten.gelu", "aten.native_layer_norm")
    # the mapping line with an empty source node does not end the mapping
    assert s.post_grad_nodes == ("add_tensor_1", "add", "erf", "mul", "var_mean")
    assert s.source_lines == ("model.py:201 in forward: x = self.a2(self.a(x))",)
    assert s.line == 15 and s.path.endswith("output_code.py")


def test_cpp_kernel_from_provenance(tmp_path: Path) -> None:
    by_name = {s.kernel: s for s in read_inductor_dir(str(_debug_dir(tmp_path)))}
    s = by_name["cpp_fused__softmax_relu_0"]
    assert s.graph == "1_inference"
    assert s.post_grad_nodes == ("relu", "div")
    # the comment above extern_kernels.addmm belongs to that call, not to the next kernel
    assert s.aten_ops == ()
    assert s.source_nodes == ("input_2", "softmax")
    assert s.source_lines == ("model.py:203 in resume: return self.b(x).softmax(-1)",)


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not a folder"):
        read_inductor_dir(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match=r"no output_code\.py"):
        read_inductor_dir(str(tmp_path / "empty"))
