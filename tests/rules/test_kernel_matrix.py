"""The kernel matrix: its fatbin reader on nvcc-made synthetic fixtures, and the committed matrix's
shape and facts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from kernel_matrix.cli import OUT, releases_with_flag_data  # noqa: E402
from kernel_matrix.cubin import text_sections  # noqa: E402
from kernel_matrix.fatbin import fatbin_file_entries, lz4_block  # noqa: E402
from kernel_matrix.rules import arch_tokens, classify_kernel, cubin_op  # noqa: E402
from kernel_matrix.scan import _kernel_sms  # noqa: E402
from kernel_matrix.targets import KNOWN_SMS, runs_on  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "kernel_matrix"
TARGETS = ["sm_80", "sm_90a", "sm_100f", "sm_120a", "compute_120"]
KERNELS = {"_Z15my_kernel_alphaPf", "_Z14my_kernel_betaPi"}


@pytest.mark.parametrize("name", ["plain", "lz4"])
def test_fatbin_targets_and_kernel_names(name: str) -> None:
    entries = fatbin_file_entries(FIX / f"{name}.fatbin")
    assert [e.target for e in entries] == TARGETS
    for entry in entries[:4]:
        assert set(text_sections(entry.payload)) == KERNELS
    assert b".entry _Z15my_kernel_alphaPf" in entries[4].payload


def test_lz4_ptx_equals_uncompressed() -> None:
    plain = fatbin_file_entries(FIX / "plain.fatbin")[4].payload
    packed = fatbin_file_entries(FIX / "lz4.fatbin")[4]
    assert packed.compression == "lz4"
    assert packed.payload == plain[: len(packed.payload)] and len(packed.payload) > 500


def test_zstd_entries_need_zstandard_or_decode() -> None:
    pytest.importorskip("zstandard")
    entries = fatbin_file_entries(FIX / "zstd.fatbin")
    assert {e.compression for e in entries} == {"zstd"}
    assert set(text_sections(entries[0].payload)) == KERNELS


def test_lz4_overlapping_match() -> None:
    # token 0x14: one literal "a", then a match of 4+4 bytes at offset 1 -> nine "a"s
    assert (
        lz4_block(bytes([0x14]) + b"a" + bytes([1, 0]) + bytes([0x10]) + b"b", 10)
        == b"a" * 9 + b"b"
    )


def test_runs_on_follows_cuda_compatibility() -> None:
    assert runs_on("sm_80") == [80, 86, 89]
    assert runs_on("sm_90a") == [90]
    assert runs_on("sm_100a") == [100]
    assert runs_on("sm_100f") == [100, 103]
    assert runs_on("sm_120a") == [120]
    assert runs_on("compute_90") == [90, 100, 103, 120, 121]


def test_newest_named_architecture_decides() -> None:
    # an Sm120 GEMM with an Sm90 epilogue, compiled as sm_90a, is not an SM90 kernel
    sm120 = "_ZN7cutlass13device_kernelI17MainloopSm120TmaWarpSpecialized22Sm90TmaWarpSpecializedE"
    assert _kernel_sms(sm120, 4096, "sm_90a") == []
    assert _kernel_sms(sm120, 4096, "sm_120a") == [120]
    assert _kernel_sms("_Z15cvt_fp16_to_fp4Pf", 256, "sm_90a") == []  # a compiled-out stub
    assert _kernel_sms("_Z14moe_sum_kernelPf", 896, "sm_80") == [80, 86, 89]


def test_rules_on_real_symbol_shapes() -> None:
    mla = "_ZN7cutlass13device_kernelINS_4fmha6kernel36Sm100FmhaMlaKernelTmaWarpspecializedIN4cute5tupleI"
    assert classify_kernel("sgl_kernel/sm100/common_ops.abi3.so", mla) == "attention.cutlass_mla"
    assert arch_tokens(mla) == {100}
    assert arch_tokens(
        "_ZN4sm906decode5dense28flash_fwd_splitkv_mla_kernelINS1_6TraitsIN7cutlass6half_tEEE"
    ) == {90}
    assert arch_tokens("_ZN10flashinfer10activation18act_and_mul_kernelI6__halfEEvPS4_i") == set()
    assert classify_kernel("sgl_kernel/flash_ops.abi3.so", "_ZN5flash3anyE") == "attention.fa3"
    assert (
        cubin_op(
            "x/fmha/trtllm-gen/fmhaSm100fKernel_QBfloat16KvE4m3OBfloat16H128PagedKvCausalContext.cubin"
        )
        == "attention.trtllm_mha.prefill"
    )
    assert (
        cubin_op("x/batched_gemm-1/Bmm_Bfloat16_MxE2m1Bfloat16_t128.cubin")
        == "moe.flashinfer_trtllm.mxfp4"
    )


@pytest.fixture(scope="module")
def matrix() -> dict[str, Any]:
    return dict(json.loads(OUT.read_text()))


def test_matrix_covers_every_release(matrix: dict[str, Any]) -> None:
    covered = set(matrix["releases"]) | set(matrix["missing_releases"])
    assert covered == set(releases_with_flag_data())
    for release, body in matrix["releases"].items():
        pinned = {f"{d}{s}" for d, s in body["pins"].items() if s.startswith("==")}
        assert pinned == set(body["wheels"]) | set(body["missing"]), release


def test_every_entry_names_its_source_and_known_sms(matrix: dict[str, Any]) -> None:
    for key, wheel in matrix["wheels"].items():
        for op, entry in wheel["ops"].items():
            assert set(entry["sms"]) <= set(KNOWN_SMS), (key, op)
            assert entry["sources"], (key, op)
            for src in entry["sources"]:
                assert src["wheel"] == wheel["wheel"] and src["file"], (key, op)
                assert entry["read_from"] == "binary" or isinstance(src.get("line"), int), (key, op)


def _sms(matrix: dict[str, Any], release: str, wheel: str, op: str) -> list[int]:
    return list(matrix["releases"][release]["wheels"][wheel][op])


def test_fa3_is_built_for_sm8x_and_sm90_only(matrix: dict[str, Any]) -> None:
    # sgl-kernel 0.3.16.post5's flash_ops.abi3.so holds sm_80, sm_86 and sm_90a cubins and nothing
    # newer
    assert _sms(matrix, "0.5.5", "sgl-kernel==0.3.16.post5", "attention.fa3") == [80, 86, 89, 90]


def test_trtllm_gen_fmha_is_blackwell_datacenter_only(matrix: dict[str, Any]) -> None:
    sms = _sms(matrix, "0.5.10", "flashinfer-cubin==0.6.7.post2", "attention.trtllm_mha.decode")
    assert sms and set(sms) <= {100, 103}


def test_check_reports_a_changed_sm_list() -> None:
    from kernel_matrix.cli import _diff

    old = {"releases": {"0.5.5": {"wheels": {"sgl-kernel==1": {"attention.fa3": [80, 90]}}}}}
    new = {"releases": {"0.5.5": {"wheels": {"sgl-kernel==1": {"attention.fa3": [90]}}}}}
    changes: list[str] = []
    _diff(old, new, "", changes)
    assert changes == ["/releases/0.5.5/wheels/sgl-kernel==1/attention.fa3: [80, 90] -> [90]"]
    changes.clear()
    _diff(old, old, "", changes)
    assert changes == []
