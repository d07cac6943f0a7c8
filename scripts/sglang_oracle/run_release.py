"""One SGLang release as an oracle: its own parser and ServerArgs post-init, on stubbed hardware.

    python scripts/sglang_oracle/run_release.py SRC_DIR HARDWARE_JSON < launches.jsonl > outcomes.jsonl

SRC_DIR holds the release wheel's unpacked `sglang/` package; HARDWARE_JSON is one machine's answers
(hardware.Hardware as JSON). SGLang's modules read some answers once, at import (module-level `_is_cuda =
is_cuda()`), so one process serves one release on one machine. Each input line is a launch
{"id", "argv", "env", "arch"[, "engine_checks": true]}; each output line its outcome:
  {"id", "kind": "ok", "final": {field: value}, "changed": {field: [parsed, final]}, "env_set": {NAME: value},
   "gates": {...}[, "engine_check": {"kind": "ok"} or a startup-error, with engine_checks]}
  {"id", "kind": "startup-error", "type", "message", "at": "sglang/...py:LINE"}   raised by a raise/assert of SGLang
  {"id", "kind": "argparse-error", "message"}                                      argparse refused the argv
  {"id", "kind": "oracle-error", "type", "message", "at"}   the stubs could not answer (not a verdict)
Run one release per process: SGLang's modules stay in sys.modules.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sglang_flags.real_parser import StubFinder, is_stub  # noqa: E402

from sglang_oracle import fake_torch, gates  # noqa: E402
from sglang_oracle.hardware import Hardware  # noqa: E402
from sglang_oracle.model_config import FakeModelConfig  # noqa: E402

# ServerArgs fields every outcome records (the settings topoctl's rules speak of), when the release
# has them.
RECORDED = (
    "tp_size",
    "dp_size",
    "ep_size",
    "pp_size",
    "enable_dp_attention",
    "disable_custom_all_reduce",
    "enable_torch_symm_mem",
    "enable_symm_mem",
    "enable_nccl_nvls",
    "enable_flashinfer_allreduce_fusion",
    "flashinfer_allreduce_fusion_backend",
    "enforce_disable_flashinfer_allreduce_fusion",
    "enable_aiter_allreduce_fusion",
    "enable_p2p_check",
    "disable_cuda_graph",
    "cuda_graph_max_bs",
    "cuda_graph_max_bs_decode",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_adaptive",
    "moe_a2a_backend",
    "moe_runner_backend",
    "enable_deterministic_inference",
    "attention_backend",
    "sampling_backend",
    "nnodes",
)
# Fields post-init fills in that say nothing about the machine or the launch (a random seed, names).
NOISE = {
    "random_seed",
    "served_model_name",
    "tokenizer_path",
    "device",
    "mm_process_config",
    "tensor_parallel_size",
    "data_parallel_size",
    "expert_parallel_size",
    "pipeline_parallel_size",
}
OUTCOME_ENV_PREFIXES = ("NCCL_", "SGLANG_", "TORCH_", "CUDA_", "NVSHMEM_")


def plain(value: Any) -> Any:
    if is_stub(value):
        return "<stub>"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return repr(value)[:80]


def _sglang_frame(exc: BaseException) -> tuple[str, str]:
    """(file:line, the source text there) of the innermost frame inside the sglang package."""
    where, text = "", ""
    for frame in traceback.extract_tb(exc.__traceback__):
        marker = frame.filename.replace("\\", "/").rfind("/sglang/")
        if marker >= 0:
            where = f"{frame.filename[marker + 1 :]}:{frame.lineno}"
            text = (frame.line or "").strip()
    return where, text


def _classify(exc: BaseException) -> dict[str, Any]:
    """A start-up error is SGLang's own: raised or asserted there, or a crash of its code on plain
    values (`None > 1`). An error that names a stub, or an AttributeError/ImportError (a stubbed
    module or model config lacking what a real one has), is the oracle's, not a verdict."""
    where, text = _sglang_frame(exc)
    raised = text.startswith(("raise ", "assert ", "raise(")) or text == "raise"
    ours = (
        _mentions_stub(exc)
        or not where
        or (not raised and isinstance(exc, (AttributeError, ImportError)))
    )
    return {
        "kind": "oracle-error" if ours else "startup-error",
        "type": type(exc).__name__,
        "message": str(exc)[:300],
        "at": where,
        "raised": raised,
    }


def _mentions_stub(exc: BaseException) -> bool:
    """A stub iterates as empty: unpacking one fails with "got 0"."""
    text = str(exc)
    return (
        "<stub" in text
        or "_StubMeta" in text
        or text.startswith("not enough values to unpack (expected")
        and text.endswith("got 0)")
    )


class Release:
    """The imported release and its lru-cached hardware probes (cleared before each launch)."""

    def __init__(self, src_dir: str, hw: Hardware) -> None:
        fake_torch.install()
        fake_torch.use(hw)
        self.hw = hw
        self.finder = OracleFinder(src_dir, {"sglang.srt.server_args"})
        sys.meta_path.insert(0, finder_first(self.finder))
        with contextlib.redirect_stdout(io.StringIO()):
            from sglang.srt import server_args  # type: ignore[import-not-found]
        self.module = server_args
        self.caches = [
            fn
            for name, mod in list(sys.modules.items())
            if name.startswith("sglang")
            for fn in list(vars(mod).values())
            if isinstance(fn, functools._lru_cache_wrapper)
        ]
        server_args.ServerArgs.get_model_config = _memoized_model_config  # type: ignore[attr-defined]
        model_config = sys.modules.get("sglang.srt.configs.model_config")
        if model_config is None:
            import importlib

            model_config = importlib.import_module("sglang.srt.configs.model_config")
        model_config.ModelConfig.from_server_args = staticmethod(_model_config)
        _no_hub_files()
        # From 0.5.19 construction leaves the record unresolved; launchers call resolve_once(), and
        # the resolved values are read with resolution_result (arg_groups/overrides.py).
        self.resolution_result = None
        if hasattr(server_args.ServerArgs, "resolve_once"):
            from sglang.srt.arg_groups.overrides import resolution_result  # type: ignore[import-not-found]

            self.resolution_result = resolution_result

    def build(self, argv: list[str]) -> Any:
        """prepare_server_args(argv), resolved as a launcher resolves it."""
        args = self.module.prepare_server_args(argv)
        if hasattr(args, "resolve_once"):
            args.resolve_once()
        return args

    def value(self, args: Any, name: str) -> Any:
        if self.resolution_result is not None:
            return self.resolution_result(args, name, getattr(args, name, None))
        return getattr(args, name)

    def answer(self) -> None:
        hw = self.hw
        for fn in self.caches:
            fn.cache_clear()
        namespace = vars(self.module)
        patches: dict[str, Any] = {
            "get_device_memory_capacity": lambda *a, **k: float(hw.memory_mib),
            "is_flashinfer_available": lambda: hw.flashinfer is not None,
            "get_device_name": lambda *a, **k: hw.name,
            "get_nvidia_driver_version": lambda *a, **k: (575, 57, 8),
        }
        for name, value in patches.items():
            if name in namespace:
                namespace[name] = value


# Packages of other vendors' accelerators and optional extras that SGLang probes for with find_spec
# or a guarded import: absent, as on a CUDA machine without them (a stub would say "installed").
ABSENT = {
    "torch_npu",
    "habana_frameworks",
    "intel_extension_for_pytorch",
    "torch_musa",
    "mlx",
    "aiter",
    "torch_xla",
    "vllm",
    "ixformer",
    "mindspore",
    "torch_mlu",
}


class OracleFinder(StubFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return super().find_spec(fullname, path, target)


def finder_first(finder: StubFinder) -> StubFinder:
    return finder


HUB_LOOKUPS = ("cached_file", "hf_hub_download", "try_to_load_from_cache", "file_exists")


def _memoized_model_config(self: Any) -> Any:
    """ServerArgs.get_model_config: built once and kept on self.model_config, which 0.5.5 reads
    directly."""
    if not hasattr(self, "model_config"):
        self.model_config = _model_config()
    return self.model_config


def _hf_config(*args: Any, **kwargs: Any) -> Any:
    return _model_config().hf_config


# SGLang's own readers of a checkpoint's config.json (utils/hf_transformers*): the served model's
# config.
CONFIG_READERS = {"get_config": _hf_config, "get_hf_text_config": _hf_config}


def _no_hub_files() -> None:
    """Hub look-ups imported by name into SGLang's modules answer "no such file" (None, False), as
    for a local checkpoint without the optional files, instead of a stub; SGLang's config readers
    answer the served model's config."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("sglang"):
            continue
        for attr, value in list(vars(module).items()):
            if attr in HUB_LOOKUPS and is_stub(value):
                setattr(
                    module,
                    attr,
                    (lambda *a, **k: False) if attr == "file_exists" else (lambda *a, **k: None),
                )
            elif (
                attr in CONFIG_READERS
                and callable(value)
                and "hf_transformers" in getattr(value, "__module__", "")
            ):
                setattr(module, attr, CONFIG_READERS[attr])


def _model_config(*args: Any, **kwargs: Any) -> Any:
    return FakeModelConfig(os.environ.get("TOPOCTL_ORACLE_ARCH", "LlamaForCausalLM"))


@contextlib.contextmanager
def launch_environment(env: dict[str, str], arch: str) -> Any:
    before = dict(os.environ)
    os.environ.update(env)
    os.environ["TOPOCTL_ORACLE_ARCH"] = arch
    try:
        yield before
    finally:
        os.environ.clear()
        os.environ.update(before)


def env_set(before: dict[str, str], launch_env: dict[str, str]) -> dict[str, str]:
    """What SGLang itself put into (or changed in) the environment."""
    out = {}
    for name, value in os.environ.items():
        if (
            name.startswith(OUTCOME_ENV_PREFIXES)
            and before.get(name) != value
            and launch_env.get(name) != value
        ):
            out[name] = value
    return out


def run_one(release: Release, launch: dict[str, Any]) -> dict[str, Any]:
    hw = release.hw
    release.answer()
    parsed: dict[str, Any] = {}
    original_parse = argparse.ArgumentParser.parse_args

    def keep_namespace(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        namespace = original_parse(self, *args, **kwargs)
        parsed.update(vars(namespace))
        return namespace

    with launch_environment(
        launch.get("env") or {}, launch.get("arch") or "LlamaForCausalLM"
    ) as before:
        argparse.ArgumentParser.parse_args = keep_namespace  # type: ignore[method-assign]
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()) as err,
            ):
                try:
                    args = release.build(["--model-path", "model", *launch["argv"]])
                except SystemExit:
                    return {
                        "id": launch["id"],
                        "kind": "argparse-error",
                        "message": (err.getvalue().strip().splitlines() or [""])[-1][:300],
                    }
        except Exception as exc:  # noqa: BLE001 - the outcome being recorded
            return {"id": launch["id"], **_classify(exc)}
        finally:
            argparse.ArgumentParser.parse_args = original_parse  # type: ignore[method-assign]
        outcome = _ok(release, launch, args, parsed, hw, before)
        if launch.get("engine_checks"):
            outcome["engine_check"] = engine_check(args)
        return outcome


def engine_check(args: Any) -> dict[str, Any]:
    """ServerArgs.check_server_args(), which the engine runs before it starts any process
    (entrypoints/engine.py: _launch_subprocesses, 0.5.5-0.5.23): ok, or its start-up error."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args.check_server_args()
    except Exception as exc:  # noqa: BLE001 - the outcome being recorded
        return _classify(exc)
    return {"kind": "ok"}


def _ok(
    release: Release,
    launch: dict[str, Any],
    args: Any,
    parsed: dict[str, Any],
    hw: Hardware,
    before: dict[str, str],
) -> dict[str, Any]:
    final = {name: plain(release.value(args, name)) for name in RECORDED if hasattr(args, name)}
    changed = {}
    for name in sorted(parsed):
        if name in NOISE or not hasattr(args, name):
            continue
        value, was = plain(release.value(args, name)), plain(parsed.get(name))
        if value != was and isinstance(value, (bool, int, str, type(None))):
            changed[name] = [was, value]
    outcome = {
        "id": launch["id"],
        "kind": "ok",
        "final": final,
        "changed": changed,
        "env_set": env_set(before, launch.get("env") or {}),
    }
    outcome["gates"] = gates.run_all(release, args, hw, {**before, **(launch.get("env") or {})})
    return outcome


def _guard_open() -> None:
    """A stubbed hub lookup (transformers' cached_file) returns a stub, which is 0 as an int: open()
    would read and close standard input. A stub is no file: FileNotFoundError, as for a checkpoint
    without it."""
    import builtins

    real_open = builtins.open

    def guarded(file: Any, *args: Any, **kwargs: Any) -> Any:
        if is_stub(file):
            raise FileNotFoundError(f"no file {file!r}")
        return real_open(file, *args, **kwargs)

    builtins.open = guarded  # type: ignore[assignment]


def _one_formatter() -> None:
    """argparse builds a help formatter (and asks the terminal its size) for every add_argument;
    SGLang's parser, built anew for each launch, has 300-500 options. One formatter per parser gives
    the same parser."""
    original = argparse.ArgumentParser._get_formatter

    def shared(self: argparse.ArgumentParser) -> argparse.HelpFormatter:
        cached = self.__dict__.get("_oracle_formatter")
        if cached is None:
            cached = self.__dict__["_oracle_formatter"] = original(self)
        return cached

    argparse.ArgumentParser._get_formatter = shared  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    src_dir, hardware = (argv if argv is not None else sys.argv[1:])[:2]
    launches = [json.loads(line) for line in sys.stdin.read().splitlines() if line.strip()]
    out = sys.stdout
    logging.disable(logging.CRITICAL)
    _guard_open()
    _one_formatter()
    release = Release(src_dir, Hardware.from_json(json.loads(hardware)))
    for launch in launches:
        out.write(json.dumps(run_one(release, launch), sort_keys=True) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
