"""A model is its properties: built-in profiles, config.json files and model folders give the same
profile and the same launch; parameter counts agree with what the model cards publish; measurements
follow properties."""

from __future__ import annotations

import json
import os
import struct

import pytest

from topoctl.autoconf import models

# Totals the model cards state (billions of parameters): what the computed counts must come close
# to.
PUBLISHED_TOTAL_B = {
    "deepseek-v3": 671,
    "deepseek-r1": 671,
    "llama-3.1-8b": 8.03,
    "llama-3.1-70b": 70.55,
    "qwen3-235b-a22b": 235,
    "qwen3-30b-a3b": 30.5,
    "gpt-oss-120b": 117,
    "gpt-oss-20b": 21,
    "mixtral-8x7b": 46.7,
    "qwen2.5-72b-instruct": 72.7,
    "qwen3-32b": 32.8,
}
PUBLISHED_ACTIVE_B = {
    "deepseek-v3": 37,
    "qwen3-235b-a22b": 22,
    "qwen3-30b-a3b": 3.3,
    "gpt-oss-120b": 5.1,
    "gpt-oss-20b": 3.6,
    "mixtral-8x7b": 12.9,
}


def _config(name):
    return dict(models.builtin_models()[name]["config"])


def test_at_least_twelve_builtins_each_with_a_source():
    table = models.builtin_models()
    assert len(table) >= 12
    for name, entry in table.items():
        assert entry["source"].startswith("https://huggingface.co/") and entry["source"].endswith(
            "config.json"
        ), name
        prof = models.profile(name)
        assert prof["weight_bytes"] > 0 and prof["active_weight_bytes"] <= prof["weight_bytes"]


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOTAL_B))
def test_parameter_counts_match_the_model_cards(name):
    prof = models.profile(name)
    assert prof["total_params"] / 1e9 == pytest.approx(PUBLISHED_TOTAL_B[name], rel=0.03)
    if name in PUBLISHED_ACTIVE_B:
        assert prof["active_params"] / 1e9 == pytest.approx(PUBLISHED_ACTIVE_B[name], rel=0.1)


def test_properties_of_mla_and_quantized_models():
    ds = models.profile("deepseek-v3")
    assert ds["attention"] == "mla" and ds["kv_lora_rank"] == 512 and ds["qk_rope_head_dim"] == 64
    assert ds["quantization"]["scheme"] == "fp8" and 660e9 < ds["weight_bytes"] < 700e9
    assert ds["kv_bytes_per_token_layer"] == (512 + 64) * 2
    kimi = models.profile("kimi-k2.5")
    assert kimi["quantization"]["scheme"] == "int4" and kimi["quantization"]["group_size"] == 32
    # only the routed experts are int4: attention, shared experts and the dense layer stay bf16
    assert kimi["parts_bytes"]["attention"] == pytest.approx(kimi["parts_params"]["attention"] * 2)
    assert kimi["parts_bytes"]["experts"] == pytest.approx(
        kimi["parts_params"]["experts"] * (0.5 + 2 / 32)
    )
    oss = models.profile("gpt-oss-120b")
    assert (
        oss["quantization"]["scheme"] == "mxfp4"
        and oss["attention"] == "gqa"
        and oss["kv_heads"] == 8
    )
    llama = models.profile("llama-3.1-70b")
    assert not llama["moe"] and llama["weight_bytes"] == pytest.approx(llama["total_params"] * 2)


def test_a_config_json_folder_is_the_builtin_profile(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_config("deepseek-v3")))
    folder = models.from_model_dir(str(tmp_path))
    assert models.identity(folder) == models.identity(models.profile("deepseek-v3"))
    assert folder["weight_bytes"] == pytest.approx(models.profile("deepseek-v3")["weight_bytes"])


def test_the_index_total_size_is_the_weight_bytes(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_config("llama-3.1-8b")))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {}})
    )
    prof = models.from_model_dir(str(tmp_path))
    assert prof["weight_bytes"] == pytest.approx(16060522496)
    assert "metadata.total_size" in prof["weight_bytes_source"]


def test_safetensors_files_without_an_index_count_their_tensor_bytes(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_config("llama-3.1-8b")))
    header = json.dumps({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(
        struct.pack("<Q", len(header)) + header + b"\0" * 32
    )
    assert models.checkpoint_bytes(str(tmp_path))[0] == 32


def test_a_hugging_face_cache_folder_resolves_to_its_snapshot(tmp_path):
    repo = tmp_path / "models--Qwen--Qwen3-32B"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(_config("qwen3-32b")))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    assert models.resolve_model_dir(str(repo)) == str(snap)
    assert models.identity(models.from_model_dir(str(repo))) == models.identity(
        models.profile("qwen3-32b")
    )


def test_a_folder_without_config_is_one_line_exit_2(tmp_path, cli):
    code, _, err = cli(
        ["recommend", "--system", "h200-4x-nvswitch-vm", "--model-path", str(tmp_path)]
    )
    assert code == 2 and "no config.json" in err and len(err.strip().splitlines()) == 2


@pytest.mark.parametrize(
    "system", ["rtx-pro-6000-8x-pcie", "h200-4x-nvswitch-vm", "h100-8x-nvswitch"]
)
def test_folder_config_and_builtin_give_the_same_launch(tmp_path, cli, system):
    config = _config("kimi-k2.5") if system == "rtx-pro-6000-8x-pcie" else _config("qwen3-32b")
    name = "kimi-k2.5" if system == "rtx-pro-6000-8x-pcie" else "qwen3-32b"
    config["_name_or_path"] = (
        "/srv/models/some-local-copy"  # another name: the same model by its properties
    )
    (tmp_path / "config.json").write_text(json.dumps(config))
    outs = []
    for given in (
        ["--model", name],
        ["--model-path", str(tmp_path)],
        ["--model-config", str(tmp_path / "config.json")],
    ):
        code, out, err = cli(["recommend", "--system", system, *given, "--format", "args"])
        assert code == 0, err
        outs.append(out)
    assert outs[0] == outs[1] == outs[2]


def test_a_name_is_not_a_model(tmp_path, cli):
    """A Llama config that calls itself kimi-k2.5 gets none of Kimi-K2.5's measurements."""
    config = _config("llama-3.1-8b")
    config["_name_or_path"] = "kimi-k2.5"
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out, err = cli(
        [
            "recommend",
            "--system",
            "rtx-pro-6000-8x-pcie",
            "--model-config",
            str(tmp_path / "config.json"),
            "--format",
            "json",
        ]
    )
    assert code == 0, err
    chosen = json.loads(out)["chosen"]
    assert (
        chosen["estimated_tok_s"] is None and chosen["level"] == "modelled"
    )  # no Kimi-K2.5 measurement
    assert chosen["predicted_tok_s"] > 0
    assert "cuda-graph-max-bs-128-sm120-kimi" not in out


def test_list_models(cli):
    code, out, _ = cli(["recommend", "--list-models"])
    assert code == 0
    names = [line.split("\t")[0] for line in out.splitlines()]
    assert names == sorted(models.builtin_models()) and "kimi-k2.5" in names
    assert all(os.path.basename(line.split("\t")[-1]) == "config.json" for line in out.splitlines())


# -- model inputs are typed at the edge: a wrong type or range is exit 2 naming the field, never a
# number used --
def _one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("  hint:"), err
    return lines[0]


def _folder(tmp_path, config=None, **files):
    (tmp_path / "config.json").write_text(json.dumps(config or _config("kimi-k2.5")))
    for name, content in files.items():
        (tmp_path / name.replace("__", ".")).write_bytes(
            content if isinstance(content, bytes) else content.encode()
        )
    return str(tmp_path)


def _recommend(cli, *args):
    return cli(["recommend", "--system", "h200-4x-nvswitch-vm", *args])


@pytest.mark.parametrize(
    "key, value",
    [
        ("n_routed_experts", "384"),
        ("n_routed_experts", 2.5),
        ("n_routed_experts", True),
        ("num_attention_heads", 10**9),
        ("num_experts_per_tok", -8),
        ("vocab_size", ["163840"]),
        ("kv_lora_rank", {"a": 1}),
    ],
)
def test_a_mistyped_count_in_config_json_is_exit_2_naming_it(cli, tmp_path, key, value):
    config = _config("deepseek-v3")
    config[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, _, err = _recommend(cli, "--model-config", str(path))
    assert code == 2 and f"{key} must be an integer" in _one_error(err)


def test_per_layer_counts_read_as_their_largest():
    config = _config("deepseek-v3")
    config["num_experts_per_tok"] = [8] * 61
    assert models.from_config(config, "x", "test")["active_experts"] == 8


def test_null_counts_read_as_absent():
    config = _config("llama-3.1-8b")
    config["num_key_value_heads"] = None  # how Hugging Face writes an unset field
    assert models.from_config(config, "x", "test")["kv_heads"] == config["num_attention_heads"]


@pytest.mark.parametrize(
    "quant, field",
    [
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": -4, "type": "int"}}},
            },
            "config_groups.g.weights.num_bits",
        ),
        ({"quant_method": "gptq", "bits": "4"}, "bits"),
        ({"quant_method": "awq", "bits": 4, "group_size": 0.5}, "group_size"),
        ({"quant_method": 8}, "quant_method"),
        ({"quant_method": "fp8", "ignore": "lm_head"}, "ignore"),
        ({"quant_method": "gptq", "config_groups": [1]}, "config_groups"),
    ],
)
def test_a_mistyped_quantization_config_is_exit_2_naming_the_field(cli, tmp_path, quant, field):
    config = _config("llama-3.1-8b")
    config["quantization_config"] = quant
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, _, err = _recommend(cli, "--model-config", str(path))
    assert code == 2 and f"quantization_config.{field} must be" in _one_error(err)


def test_an_mxfp8_checkpoint_counts_one_byte_and_a_scale_per_32_weights():
    """An MXFP8 checkpoint (quant_method mxfp8, as SGLang 0.5.19+ reads it from config.json) stores
    e4m3 weights with one UE8M0 scale per 32 (SGLang 0.5.23
    layers/quantization/mxfp8_block_convert.py:5, :19). Counted at the dtype's 2 bytes it was twice
    its size, and check refused MXFP8 DeepSeek on 8x B200 as not fitting (169.6 GB a GPU)."""
    config = _config("deepseek-v3")
    config["quantization_config"] = {"quant_method": "mxfp8"}
    mx = models.from_config(config, "x", "test")
    fp8 = models.profile("deepseek-v3")
    assert mx["quantization"]["scheme"] == "mxfp8" and mx["quantization"]["group_size"] == 32
    assert mx["weight_bytes"] == pytest.approx(fp8["weight_bytes"], rel=0.04)
    assert mx["weight_bytes"] < 0.6 * mx["total_params"] * 2


def test_gptq_group_size_minus_one_is_per_channel_not_negative_bytes():
    config = _config("llama-3.1-8b")
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": -1}
    prof = models.from_config(config, "x", "test")
    assert prof["weight_bytes"] > 0.25 * prof["total_params"]


def _safetensors(tensors: dict, data: bytes | None = None, length: int | None = None) -> bytes:
    header = json.dumps(tensors).encode()
    size = max((t["data_offsets"][1] for t in tensors.values() if isinstance(t, dict)), default=0)
    return (
        struct.pack("<Q", len(header) if length is None else length)
        + header
        + (data or b"\0" * size)
    )


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", "shorter than its 8-byte header length"),
        (b"\0" * 8, "a header of 0 bytes"),
        (struct.pack("<Q", 10**12) + b"{}", "a header of 1,000,000,000,000 bytes"),
        (
            _safetensors({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}})[:20],
            "a header of",
        ),
        (
            _safetensors({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 31]}}),
            "data_offsets hold 31 bytes",
        ),
        (
            _safetensors({"w": {"dtype": "XX", "shape": [4], "data_offsets": [0, 8]}}),
            "unknown dtype",
        ),
        (
            _safetensors({"w": {"dtype": "BF16", "shape": [-4], "data_offsets": [0, 8]}}),
            "shape must be",
        ),
        (struct.pack("<Q", 4) + b"\xff\xfe{}" + b"\0" * 8, "not JSON"),
    ],
)
def test_a_broken_safetensors_file_is_exit_2_naming_it(cli, tmp_path, content, says):
    folder = _folder(tmp_path, model__safetensors=content)
    code, _, err = _recommend(cli, "--model-path", folder)
    line = _one_error(err)
    assert code == 2 and "model.safetensors" in line and says in line, line


def test_git_lfs_pointers_count_at_the_size_they_name(tmp_path):
    size = models.profile("llama-3.1-8b")["weight_bytes"]
    pointer = (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{'a' * 64}\nsize {int(size)}\n"
    )
    folder = _folder(tmp_path, _config("llama-3.1-8b"), model__safetensors=pointer)
    prof = models.from_model_dir(folder)
    assert (
        prof["weight_bytes"] == pytest.approx(size)
        and "git-lfs pointers" in prof["weight_bytes_source"]
    )


def test_a_git_lfs_pointer_without_a_size_is_exit_2(cli, tmp_path):
    folder = _folder(
        tmp_path, model__safetensors="version https://git-lfs.github.com/spec/v1\noid sha256:ab\n"
    )
    code, _, err = _recommend(cli, "--model-path", folder)
    assert code == 2 and "git-lfs pointer without a positive `size`" in _one_error(err)


@pytest.mark.parametrize("total", [0.5, 0, -5, "16060522496", True, 1024])
def test_an_index_total_size_that_cannot_be_the_weights_is_exit_2(cli, tmp_path, total):
    """1024 bytes is a positive integer, but not 8 B parameters' worth: a 1T model must never fit
    one GPU."""
    index = json.dumps({"metadata": {"total_size": total}, "weight_map": {}})
    folder = _folder(tmp_path, _config("llama-3.1-8b"), model__safetensors__index__json=index)
    code, _, err = _recommend(cli, "--model-path", folder)
    line = _one_error(err)
    assert code == 2 and (
        "total_size must be a positive integer" in line or "more than 8x off" in line
    ), line


@pytest.mark.parametrize("index", [{"metadata": [1, 2]}, {"weight_map": [["a", "b"]]}, [1]])
def test_list_valued_index_metadata_is_exit_2(cli, tmp_path, index):
    folder = _folder(tmp_path, model__safetensors__index__json=json.dumps(index))
    code, _, err = _recommend(cli, "--model-path", folder)
    assert code == 2 and "model.safetensors.index.json" in _one_error(err)


@pytest.mark.parametrize("ref", [b"\xff\xfe\x00", b"../../etc", b"a/b"])
def test_a_refs_main_that_is_not_a_commit_is_exit_2(cli, tmp_path, ref):
    repo = tmp_path / "models--org--m"
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "snapshots" / "abc" / "config.json").write_text(json.dumps(_config("qwen3-32b")))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_bytes(ref)
    code, _, err = _recommend(cli, "--model-path", str(repo))
    assert code == 2 and "refs/main" in _one_error(err)


@pytest.mark.parametrize("kind", ["folder", "dangling-link"])
def test_a_refs_main_that_cannot_be_read_is_exit_2_naming_it(cli, tmp_path, kind):
    """A refs/main that is a folder or a link to nothing ended in exit 70 (found by
    benchmarks/fuzz_hostile.py)."""
    repo = tmp_path / "models--org--m"
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "snapshots" / "abc" / "config.json").write_text(json.dumps(_config("qwen3-32b")))
    (repo / "refs").mkdir()
    if kind == "folder":
        (repo / "refs" / "main").mkdir()
    else:
        (repo / "refs" / "main").symlink_to(tmp_path / "gone")
    code, _, err = _recommend(cli, "--model-path", str(repo))
    assert code == 2 and "refs/main: cannot read it" in _one_error(err)
