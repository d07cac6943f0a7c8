"""Unit tests of the SGLang flag extractor (scripts/sglang_flags/) on small synthetic wheels.

Every wheel here is SYNTHETIC: a zip made in the test from a few lines of server_args.py-like
source. The declaration forms are the ones SGLang's real wheels use (classic `parser.add_argument`
calls up to 0.5.12; annotated fields `A[T, "help"]` / `A[T, Arg(...)]` registered by
`add_cli_args_from_dataclass` from 0.5.13 on; namespace classes handed to `collect_input_fields` in
0.5.20 and later; Deprecated* action classes), written small. The same synthetic sources are also
run through SGLang's way of building the parser (real_parser.py), so the check that holds the
shipped data to the real wheels is itself tested here, without any wheel.
"""

from __future__ import annotations

import json
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sglang_flags import check as check_mod  # noqa: E402
from sglang_flags.cli import build_document, main, write  # noqa: E402

CHOICES = """
QUANT = ["fp8", "awq"]
"""

ACTIONS = """
import argparse


class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, const=True, default=False, **kwargs):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=default, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)


class DeprecatedAction(argparse.Action):
    def __init__(self, option_strings, dest, error_message=None, **kwargs):
        self.error_message = error_message
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        raise ValueError(self.error_message)
"""

CLASSIC = """
import argparse
import dataclasses
from typing import List, Optional

import torch  # stubbed by the real-parser check; never imported by the extractor

from sglang.srt.actions import DeprecatedAction, DeprecatedStoreTrueAction
from sglang.srt.choices import QUANT

BACKENDS = ["nccl", "custom"]


class Backend:
    FULL = "full"
    DISABLED = "disabled"
    ALL = (FULL, DISABLED)


@dataclasses.dataclass
class ServerArgs:
    model_path: str = ""
    tp_size: int = 1
    quantization: Optional[str] = None
    cuda_graph_bs: Optional[List[int]] = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", type=str, required=True, help="The model.")
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=ServerArgs.tp_size,
                            help="Tensor parallel size.")
        parser.add_argument("--quantization", type=str, choices=[*QUANT, "unquant"], default=None, help="Q.")
        parser.add_argument("--allreduce-backend", choices=BACKENDS, default="nccl", help="AR.")
        parser.add_argument("--graph-backend", choices=Backend.ALL, default="full", help="G.")
        sampling = set(["pytorch", "flashinfer"])
        parser.add_argument("--sampling-backend", choices=sampling, default=None, help="S.")
        parser.add_argument("--cuda-graph-bs", type=int, nargs="+", help="Batch sizes.")
        parser.add_argument("--enable-p2p-check", action="store_true", help="Check P2P.")
        parser.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True, help="Overlap.")
        parser.add_argument("--internal-id", type=int, default=None, help=argparse.SUPPRESS)
        parser.add_argument("--enable-dp-attention", action=DeprecatedStoreTrueAction, new_flag="--attn-dp-size",
                            help="Deprecated. Use --attn-dp-size instead.")
        parser.add_argument("--enable-old-thing", action=DeprecatedAction, error_message="gone", help="Gone.")
        parser.add_argument("--enable-fusion", action="store_true",
                            help="(Deprecated: use --fusion-backend=auto) Fuse.")


def prepare_server_args(argv):
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    raw_args = parser.parse_args(argv)
    return raw_args
"""

# A small stand-in for SGLang's arg_utils: Arg metadata and add_cli_args_from_dataclass, following
# the rules the extractor mirrors (Optional unwrapped, Literal -> choices, list -> nargs "+", bool
# -> store_true, no_cli skipped, a field without a default is required).
ARG_UTILS = """
import argparse
import dataclasses
import typing
from typing import Any, Literal, Optional, get_args, get_origin, get_type_hints


@dataclasses.dataclass(frozen=True)
class Arg:
    help: str = ""
    choices: Any = None
    aliases: Any = None
    cli_name: Any = None
    nargs: Any = None
    action: Any = None
    no_cli: bool = False


def _meta(hint):
    if get_origin(hint) is typing.Annotated:
        base, *extra = get_args(hint)
        for item in extra:
            if isinstance(item, Arg):
                return base, item
            if isinstance(item, str):
                return base, Arg(help=item)
    return hint, None


def _unwrap_optional(t):
    if get_origin(t) is typing.Union:
        rest = [a for a in get_args(t) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return t


def add_cli_args_from_dataclass(parser, cls):
    hints = get_type_hints(cls, include_extras=True)
    for f in dataclasses.fields(cls):
        base, meta = _meta(hints[f.name])
        if meta is None or meta.no_cli:
            continue
        names = [meta.cli_name or "--" + f.name.replace("_", "-")] + list(meta.aliases or [])
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        kw = {"help": meta.help}
        if f.name != names[0].lstrip("-").replace("-", "_"):
            kw["dest"] = f.name
        if has_default:
            kw["default"] = default
        if meta.action is not None:
            parser.add_argument(*names, action=meta.action, **kw)
            continue
        inner = _unwrap_optional(base)
        if get_origin(inner) is Literal:
            vals = list(get_args(inner))
            parser.add_argument(*names, type=type(vals[0]), choices=meta.choices or vals, **kw)
        elif get_origin(inner) is list:
            (elem,) = get_args(inner)
            parser.add_argument(*names, type=elem, nargs=meta.nargs or "+", **kw)
        elif inner is bool:
            parser.add_argument(*names, action="store_true", **kw)
        else:
            if meta.choices:
                kw["choices"] = meta.choices
            if not has_default:
                kw["required"] = True
            parser.add_argument(*names, type=inner, **kw)
"""

DECLARATIVE = """
import argparse
import dataclasses
from typing import Annotated as A
from typing import List, Literal, Optional

from sglang.srt.arg_utils import Arg, add_cli_args_from_dataclass
from sglang.srt.choices import QUANT

DEFAULT_PREFIXES = ["/health", "/metrics"]


@dataclasses.dataclass
class ServerArgs:
    model_path: A[str, "The model."]
    tp_size: A[int, Arg(help="Tensor parallel size.", cli_name="--tp-size", aliases=["--tensor-parallel-size"])] = 1
    quantization: A[Optional[str], Arg(help="Q.", choices=QUANT)] = None
    attention_backend: A[Optional[Literal["fa3", "flashinfer"]], Arg(help="Attention.")] = None
    cuda_graph_bs: A[Optional[List[int]], Arg(help="Batch sizes.")] = None
    enable_p2p_check: A[bool, "Check P2P."] = False
    overlap: A[Optional[bool], Arg(help="Overlap.", action=argparse.BooleanOptionalAction)] = None
    prefixes: A[List[str], Arg(help="Prefixes.")] = dataclasses.field(default_factory=lambda: list(DEFAULT_PREFIXES))
    internal_only: A[bool, Arg(no_cli=True)] = False
    not_a_flag: int = 3

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        add_cli_args_from_dataclass(parser, ServerArgs)


def prepare_server_args(argv):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    ServerArgs.add_cli_args(parser)
    return parser.parse_args(argv)
"""

ENV = """
import os
ENABLED = os.environ.get("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "0") == "1"
CHUNK = os.environ.get("SGLANG_NEW_ALLREDUCE_CHUNK")
"""


def make_wheel(tmp_path: Path, version: str, files: dict[str, str]) -> Path:
    """A synthetic wheel: `files` ({path in sglang/srt/: source}) plus the package __init__ files."""
    path = tmp_path / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("sglang/__init__.py", "")
        archive.writestr("sglang/srt/__init__.py", "")
        for name, text in files.items():
            archive.writestr(f"sglang/srt/{name}", textwrap.dedent(text))
    return path


@pytest.fixture()
def classic(tmp_path):
    return make_wheel(
        tmp_path,
        "9.0.0",
        {
            "server_args.py": CLASSIC,
            "choices.py": CHOICES,
            "actions.py": ACTIONS,
            "distributed/pcie.py": ENV,
        },
    )


@pytest.fixture()
def declarative(tmp_path):
    return make_wheel(
        tmp_path,
        "9.1.0",
        {"server_args.py": DECLARATIVE, "choices.py": CHOICES, "arg_utils.py": ARG_UTILS},
    )


def test_classic_options_aliases_types_and_defaults(classic):
    doc = build_document(classic)
    flags = doc["flags"]
    assert doc["sglang_version"] == "9.0.0" and doc["flag_count"] == len(flags) == 13
    tp = flags["--tensor-parallel-size"]
    assert tp["options"] == ["--tensor-parallel-size", "--tp-size"] and tp["type"] == "int"
    assert tp["default"] == 1  # default=ServerArgs.tp_size, the dataclass field's default
    assert flags["--model-path"]["required"] is True
    assert flags["--cuda-graph-bs"]["nargs"] == "+" and flags["--cuda-graph-bs"]["takes_value"]
    p2p = flags["--enable-p2p-check"]
    assert (p2p["action"], p2p["default"], p2p["takes_value"]) == ("store_true", False, False)


def test_classic_choices_resolved_across_modules_and_scopes(classic):
    flags = build_document(classic)["flags"]
    assert flags["--quantization"]["choices"] == [
        "fp8",
        "awq",
        "unquant",
    ]  # [*QUANT, ...] from another module
    assert flags["--allreduce-backend"]["choices"] == ["nccl", "custom"]
    assert flags["--graph-backend"]["choices"] == [
        "full",
        "disabled",
    ]  # class constants naming class constants
    assert sorted(flags["--sampling-backend"]["choices"]) == [
        "flashinfer",
        "pytorch",
    ]  # a local set


def test_boolean_optional_action_adds_the_no_form_and_takes_no_value(classic):
    overlap = build_document(classic)["flags"]["--overlap"]
    assert overlap["options"] == ["--overlap", "--no-overlap"]
    assert overlap["nargs"] == 0 and not overlap["takes_value"] and overlap["default"] is True


def test_hidden_and_deprecated_flags(classic):
    flags = build_document(classic)["flags"]
    assert flags["--internal-id"]["hidden"] is True and not flags["--internal-id"]["deprecated"]
    dp = flags["--enable-dp-attention"]
    assert dp["deprecated"] and dp["deprecation"]["replacement"] == "--attn-dp-size"
    # the action class's own defaults, read from its __init__
    assert (dp["nargs"], dp["default"], dp["const"], dp["takes_value"]) == (0, False, True, False)
    old = flags["--enable-old-thing"]
    assert old["deprecation"]["fails_launch"] is True and old["nargs"] == 0
    fusion = flags["--enable-fusion"]  # a plain store_true whose help retires it
    assert fusion["deprecation"] == {"how": "help", "replacement": "--fusion-backend=auto"}


def test_env_scan_records_known_and_new_communication_variables(classic):
    env = {e["name"]: e for e in build_document(classic)["env"]}
    assert env["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"]["known"] is True
    assert env["SGLANG_NEW_ALLREDUCE_CHUNK"]["known"] is False  # matched by the all-reduce pattern
    assert env["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"]["files"] == ["sglang/srt/distributed/pcie.py"]


def test_declarative_fields(declarative):
    doc = build_document(declarative)
    flags = doc["flags"]
    assert doc["allow_abbrev"] is False and doc["allow_abbrev_source"] == "explicit"
    assert "--internal-only" not in flags and "--not-a-flag" not in flags
    assert flags["--model-path"]["required"] is True  # no default
    tp = flags["--tp-size"]
    assert (
        tp["options"] == ["--tp-size", "--tensor-parallel-size"]
        and tp["dest"] == "tp_size"
        and tp["default"] == 1
    )
    assert flags["--quantization"]["choices"] == ["fp8", "awq"]
    assert flags["--attention-backend"]["choices"] == ["fa3", "flashinfer"]  # from Literal[...]
    assert flags["--cuda-graph-bs"]["nargs"] == "+" and flags["--cuda-graph-bs"]["type"] == "int"
    assert flags["--enable-p2p-check"]["action"] == "store_true"
    assert (
        flags["--overlap"]["options"] == ["--overlap", "--no-overlap"]
        and flags["--overlap"]["nargs"] == 0
    )
    assert flags["--prefixes"]["default"] == ["/health", "/metrics"]  # a lambda default factory


def test_namespace_classes_handed_to_collect_input_fields(tmp_path):
    server_args = """
    import dataclasses
    from typing import Annotated as A

    from sglang.srt.fields import Parallel, Cache

    _INPUT_NAMESPACES = [Parallel, Cache]
    _annotations = collect_input_fields(_INPUT_NAMESPACES)


    class ServerArgs:
        @staticmethod
        def add_cli_args(parser):
            add_cli_args_from_dataclass(parser, ServerArgs)
    """
    fields = """
    import dataclasses
    from typing import Annotated as A


    @dataclasses.dataclass
    class Parallel:
        tp_size: A[int, "TP."] = 1


    @dataclasses.dataclass
    class Cache:
        page_size: A[int, "Page."] = 16
    """
    wheel = make_wheel(tmp_path, "9.2.0", {"server_args.py": server_args, "fields.py": fields})
    doc = build_document(wheel)
    assert sorted(doc["flags"]) == ["--page-size", "--tp-size"]
    assert (
        doc["flags"]["--page-size"]["origin"] == "field:Cache"
        and doc["flags"]["--page-size"]["default"] == 16
    )
    assert "sglang/srt/fields.py" in doc["source"]["declared_in"]


def test_a_flag_registered_twice_is_a_problem(tmp_path):
    twice = """
    class ServerArgs:
        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--tp-size", type=int)
            parser.add_argument("--tp-size", type=int)
    """
    doc = build_document(make_wheel(tmp_path, "9.3.0", {"server_args.py": twice}))
    assert doc["problems"] == ["--tp-size registered twice"]


def test_a_wheel_without_server_args_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no sglang/srt/server_args.py"):
        build_document(make_wheel(tmp_path, "9.4.0", {"other.py": "X = 1\n"}))


def test_output_is_deterministic_and_written_whole(classic, tmp_path):
    out = tmp_path / "data"
    first = write(build_document(classic), out).read_bytes()
    second = write(build_document(classic), out).read_bytes()
    assert first == second and json.loads(first)["source"]["sha256"]
    assert sorted(p.name for p in out.iterdir()) == [
        "sglang-9.0.0.json"
    ]  # no temporary file left behind


def test_command_line(classic, tmp_path, capsys):
    assert main(["--wheel", str(classic), "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("9.0.0: 13 flags (3 deprecated)")
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path / "d")])
    assert exc.value.code == 2


def test_command_line_with_check_writes_the_report_beside_the_data(classic, tmp_path, capsys):
    out = tmp_path / "d"
    assert main(["--check", "--wheel", str(classic), "--out", str(out)]) == 0
    assert "checked against SGLang's parser" in capsys.readouterr().out
    report = json.loads((out / "sglang_real_parser_check.json").read_text(encoding="utf-8"))
    assert [r["version"] for r in report["results"]] == ["9.0.0"] and report["results"][0][
        "disagreements"
    ] == []
    assert "| 9.0.0 | 13 / 13 |" in (out / "real-parser-check.md").read_text(encoding="utf-8")


# ---- the real-parser check, on the same synthetic sources
# ------------------------------------------------


def _unpack(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(dest)
    return dest


@pytest.mark.parametrize("name", ["classic", "declarative"])
def test_the_real_parser_agrees_with_the_extraction(name, request, tmp_path):
    wheel = request.getfixturevalue(name)
    doc = build_document(wheel)
    write(doc, tmp_path / "data")
    result = check_mod.check_version(
        doc["sglang_version"], _unpack(wheel, tmp_path / "src"), tmp_path / "data"
    )
    assert result["disagreements"] == []
    assert result["flags_real"] == result["flags_data"] == doc["flag_count"]
    assert result["compared_fields"] > 7 * doc["flag_count"]
    if name == "classic":
        assert "torch" in result["stubbed_packages"]


def test_the_check_reports_a_wrong_default_and_a_missing_flag(classic, tmp_path):
    doc = build_document(classic)
    doc["flags"]["--tensor-parallel-size"]["default"] = 2
    del doc["flags"]["--enable-p2p-check"]
    write(doc, tmp_path / "data")
    result = check_mod.check_version("9.0.0", _unpack(classic, tmp_path / "src"), tmp_path / "data")
    assert "--tensor-parallel-size default: real 1, data 2" in result["disagreements"]
    assert "--enable-p2p-check: in the real parser, not in the data" in result["disagreements"]


def test_the_check_records_how_argparse_reads_each_probe(classic, tmp_path):
    doc = build_document(classic)
    write(doc, tmp_path / "data")
    result = check_mod.check_version("9.0.0", _unpack(classic, tmp_path / "src"), tmp_path / "data")
    probes = {tuple(p["argv"]): p for p in result["probes"]}
    assert probes[("--tp", "2")]["ok"]  # a unique prefix of --tp-size (allow_abbrev is on)
    assert not probes[("--no-such-flag-at-all",)]["ok"]
    assert "unrecognized arguments" in probes[("--no-such-flag-at-all",)]["error"]
    assert probes[("--enable-dp-attention",)]["ok"]
