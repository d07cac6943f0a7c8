"""SGLang flag sets: facts from the extracted release data, version selection, argparse resolution."""

from __future__ import annotations

import argparse
import json
from importlib import resources

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from topoctl.core.errors import TopoctlError
from topoctl.rules.sglang.flags import (
    FlagSet,
    known_versions,
    load_flag_set,
    match_version,
    newest_version,
)

VERSIONS = known_versions()


def test_known_versions_cover_the_supported_releases():
    assert set(VERSIONS) <= set(known_versions())
    assert known_versions() == sorted(known_versions(), key=Version)


@pytest.mark.parametrize("version", VERSIONS)
def test_data_files_are_extracted_not_hand_typed(version):
    path = resources.files("topoctl.rules.sglang").joinpath(f"generated/sglang-{version}.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["sglang_version"] == version
    assert doc["extracted_by"] == "scripts/extract_sglang_flags.py"
    assert doc["source"]["file"] == "sglang/srt/server_args.py"
    assert doc["source"]["wheel"].startswith(f"sglang-{version}-")
    assert len(doc["source"]["sha256"]) == 64
    assert doc["flag_count"] == len(doc["flags"]) > 200
    assert len(path.read_bytes()) < 300_000


# ---- cuda graph batch-size flags: renamed in 0.5.18, gone in 0.5.23
# ----------------------------------


@pytest.mark.parametrize("version", ["0.5.5", "0.5.12"])
def test_cuda_graph_max_bs_is_a_real_flag_before_0_5_18(version):
    fs = load_flag_set(version)
    for flag in ("--cuda-graph-max-bs", "--cuda-graph-bs"):
        assert fs.has(flag)
        assert not fs.is_deprecated(flag)
        assert fs.takes_value(flag)
        assert fs.resolve(flag).kind == "exact"
    assert fs.get("--cuda-graph-max-bs")["type"] == "int"
    assert not fs.has("--cuda-graph-max-bs-decode")


def test_cuda_graph_max_bs_is_a_deprecated_alias_in_0_5_18():
    fs = load_flag_set("0.5.18")
    assert fs.is_deprecated("--cuda-graph-max-bs")
    assert fs.replacement("--cuda-graph-max-bs") == "--cuda-graph-max-bs-decode"
    assert fs.replacement("--cuda-graph-bs") == "--cuda-graph-bs-decode"
    assert fs.takes_value("--cuda-graph-max-bs")
    assert fs.resolve("--cuda-graph-max-bs=64").kind == "exact"


def test_cuda_graph_max_bs_is_gone_and_ambiguous_in_0_5_23():
    fs = load_flag_set("0.5.23")
    assert not fs.has("--cuda-graph-max-bs")
    assert fs.get("--cuda-graph-max-bs") is None
    assert fs.has("--cuda-graph-max-bs-decode")
    assert fs.takes_value("--cuda-graph-max-bs-decode")
    r = fs.resolve("--cuda-graph-max-bs")
    assert r.kind == "ambiguous" and not r.ok
    assert "--cuda-graph-max-bs-decode" in r.candidates
    assert fs.resolve("--cuda-graph-bs=8").kind == "ambiguous"
    assert fs.suggest("--cuda-graph-max-bs")[0] == "--cuda-graph-max-bs-decode"


def test_flashinfer_allreduce_fusion_flag_is_a_deprecated_alias_in_0_5_23():
    fs = load_flag_set("0.5.23")
    assert fs.is_deprecated("--enable-flashinfer-allreduce-fusion")
    assert (
        fs.replacement("--enable-flashinfer-allreduce-fusion")
        == "--flashinfer-allreduce-fusion-backend=auto"
    )
    assert "auto" in fs.choices("--flashinfer-allreduce-fusion-backend")
    assert fs.has("--enforce-disable-flashinfer-allreduce-fusion")
    assert fs.is_deprecated("--enable-dp-attention")
    assert not load_flag_set("0.5.12").is_deprecated("--enable-flashinfer-allreduce-fusion")


@pytest.mark.parametrize("version", VERSIONS)
def test_communication_flags_exist_in_every_version(version):
    fs = load_flag_set(version)
    for flag in (
        "--tp-size",
        "--ep-size",
        "--dp-size",
        "--disable-custom-all-reduce",
        "--enable-torch-symm-mem",
        "--enable-symm-mem",
        "--enable-nccl-nvls",
        "--enable-mscclpp",
        "--enable-p2p-check",
        "--moe-a2a-backend",
        "--speculative-algorithm",
        "--speculative-draft-model-path",
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
    ):
        assert fs.has(flag), flag
    assert not fs.takes_value("--enable-p2p-check")
    assert not fs.takes_value("--disable-custom-all-reduce")
    assert fs.takes_value("--tp-size")
    assert {"none", "deepep", "mooncake"} <= set(fs.choices("--moe-a2a-backend"))


def test_moe_a2a_backend_choices_grow():
    assert "flashinfer" not in load_flag_set("0.5.5").choices("--moe-a2a-backend")
    assert {"nixl", "mori", "flashinfer"} <= set(
        load_flag_set("0.5.23").choices("--moe-a2a-backend")
    )


def test_pcie_ipc_allreduce_env_appears_in_0_5_23_only():
    assert load_flag_set("0.5.23").has_env("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE")
    for v in ("0.5.5", "0.5.12", "0.5.18"):
        assert not load_flag_set(v).has_env("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE")


# ---- version selection
# ---------------------------------------------------------------------------------


def test_exact_version():
    fs = load_flag_set("0.5.23")
    assert (fs.version, fs.requested, fs.exact) == ("0.5.23", "0.5.23", True)


def test_every_release_is_exact_post_releases_included():
    for version in ("0.5.20", "0.5.12.post1", "0.5.5.post3", "0.5.10rc0"):
        fs = load_flag_set(version)
        assert (fs.version, fs.exact, fs.match, fs.warning) == (version, True, "exact", None)


def test_nearest_older_version_is_used_and_noted():
    fs = load_flag_set(
        "0.5.9.post1"
    )  # no such release: 0.5.9's data, said in the note and the warning
    assert (
        fs.version == "0.5.9"
        and fs.requested == "0.5.9.post1"
        and not fs.exact
        and fs.match == "older"
    )
    assert "0.5.9.post1" in fs.note and "0.5.9" in fs.note and "older" in fs.note
    assert "0.5.9.post1" in fs.warning and "nearest older" in fs.warning


def test_newer_than_every_release_uses_the_newest_and_warns():
    newest = newest_version()
    assert newest == known_versions()[-1] and not Version(newest).is_prerelease
    for version in ("0.6.0", "99.0", f"{newest}.post9", "0.5.99rc1", "0.5.99.dev4"):
        fs = load_flag_set(version)
        assert fs.version == newest and fs.match == "newest" and fs.newer_than_all
        assert version in fs.warning and f"to {newest}" in fs.warning


@pytest.mark.parametrize(
    "version, expected",
    [
        ("0.5.12rc1", "0.5.12"),  # a pre-release without data of its own: the release it leads to
        ("0.5.10rc1", "0.5.10"),  # not 0.5.10rc0's data: only an exact match uses pre-release data
        ("0.5.12.dev3", "0.5.12"),  # a dev build (setuptools-scm names it after the next release)
        ("0.5.12.post1.dev0", "0.5.12.post1"),
    ],
)
def test_pre_release_and_dev_builds_use_their_release(version, expected):
    fs = load_flag_set(version)
    assert fs.version == expected and fs.match == "release" and not fs.exact
    assert "pre-release or dev build" in fs.warning


@pytest.mark.parametrize(
    "version, expected", [("0.5.12+cu129", "0.5.12"), ("v0.5.10rc0+local", "0.5.10rc0")]
)
def test_local_builds_are_their_release_exactly(version, expected):
    assert match_version(version) == (expected, "exact")


def test_version_older_than_all_data_is_an_error():
    with pytest.raises(TopoctlError) as exc:
        load_flag_set("0.4.0")
    assert "0.5.5" in exc.value.hint
    assert exc.value.exit_code == 2


def test_garbage_version_is_an_error():
    with pytest.raises(TopoctlError):
        load_flag_set("latest-ish")


def test_takes_value_of_unknown_flag_raises():
    with pytest.raises(KeyError):
        load_flag_set("0.5.23").takes_value("--no-such-flag")


def test_argv_flags_skips_values():
    fs = load_flag_set("0.5.23")
    res = fs.argv_flags(
        ["--model-path", "m", "--tp-size", "8", "--enable-p2p-check", "--cuda-graph-max-bs", "64"]
    )
    assert [r.kind for r in res] == ["exact", "exact", "exact", "ambiguous"]


# ---- resolve() agrees with a real argparse parser built from the same data
# ------------------------------


class _Ambiguous(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Ambiguous(message)


def _real_parser(fs: FlagSet) -> argparse.ArgumentParser:
    parser = _Parser(prog="sglang serve", allow_abbrev=fs.allow_abbrev)
    for i, (_primary, info) in enumerate(sorted(fs.flags.items())):
        parser.add_argument(*info["options"], dest=f"f{i}", action="store_true")
    return parser


_PARSERS: dict[str, tuple[FlagSet, argparse.ArgumentParser]] = {}


def _pair(version: str):
    if version not in _PARSERS:
        fs = load_flag_set(version)
        _PARSERS[version] = (fs, _real_parser(fs))
    return _PARSERS[version]


def _argparse_reading(parser: argparse.ArgumentParser, token: str):
    """What argparse makes of one token, as (kind, option, explicit value), on any Python from 3.9
    to 3.13.

    `_parse_optional` is private and its shape changed: up to 3.12.6 it returns None or a 3-tuple
    (action, option_string, explicit_arg); 3.13 returns a 4-tuple (action, option_string, sep,
    explicit_arg); 3.12.7+ returns a list of such 4-tuples. An ambiguous prefix calls parser.error()
    up to 3.12 and raises ArgumentError from 3.13 on. All of these are folded into one reading here.
    """
    try:
        got = parser._parse_optional(token)
    except _Ambiguous as exc:
        assert "ambiguous option" in str(exc), exc
        return ("ambiguous", None, None)
    except argparse.ArgumentError as exc:
        assert "ambiguous option" in str(exc), exc
        return ("ambiguous", None, None)
    return _normalise_reading(got)


def _normalise_reading(got):
    if isinstance(got, list):
        if len(got) != 1:
            return ("ambiguous", None, None)
        got = got[0]
    if got is None:
        return ("positional", None, None)
    if len(got) == 4:
        action, option, _sep, value = got
    else:
        action, option, value = got
    if action is None:
        return ("unknown", None, None)
    return ("match", option, value)


@pytest.mark.parametrize(
    "shape, expected",
    [
        (None, ("positional", None, None)),
        (("A", "--tp-size", None), ("match", "--tp-size", None)),  # <= 3.12.6
        (("A", "--tp-size", "=", "4"), ("match", "--tp-size", "4")),  # 3.13
        ([("A", "--tp-size", "=", "4")], ("match", "--tp-size", "4")),  # 3.12.7+
        ([(None, "--zz", None, None)], ("unknown", None, None)),
        ((None, "--zz", None), ("unknown", None, None)),
        ([("A", "--a", None, None), ("B", "--ab", None, None)], ("ambiguous", None, None)),
    ],
)
def test_argparse_readings_of_every_python_shape_are_normalised(shape, expected):
    assert _normalise_reading(shape) == expected


def test_argparse_reading_on_this_python():
    fs, parser = _pair("0.5.23")
    assert _argparse_reading(parser, "--tp-size")[:2] == ("match", "--tp-size")
    assert _argparse_reading(parser, "--tp-size=4") == ("match", "--tp-size", "4")
    assert _argparse_reading(parser, "--cuda-graph-max-bs")[0] == "ambiguous"
    assert _argparse_reading(parser, "--no-such-flag-at-all") == ("unknown", None, None)
    assert _argparse_reading(parser, "model")[0] == "positional"


def _tokens():
    opts = sorted({o for v in VERSIONS for o in load_flag_set(v).all_options()})
    cut = st.builds(lambda o, n: o[: max(1, n)], st.sampled_from(opts), st.integers(1, 60))
    with_value = st.builds(lambda t, v: f"{t}={v}", cut, st.text("0123456789abc=", max_size=4))
    noise = st.text("-abcdeghimnprstuvx=0123456789 .", max_size=20)
    return st.one_of(st.sampled_from(opts), cut, with_value, noise)


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(VERSIONS), token=_tokens())
def test_resolve_agrees_with_argparse(version, token):
    fs, parser = _pair(version)
    r = fs.resolve(token)  # never raises
    kind, option, value = _argparse_reading(parser, token)
    if kind == "match":
        assert r.kind in ("exact", "prefix"), (token, r)
        assert r.option == option and r.value == value
    else:
        assert r.kind == kind, (token, r, kind)


@settings(max_examples=examples(300), deadline=None)
@given(token=st.text(max_size=40))
def test_resolve_never_crashes(token):
    for v in VERSIONS:
        r = load_flag_set(v).resolve(token)
        assert r.kind in ("exact", "prefix", "ambiguous", "unknown", "positional")
        assert (r.flag is not None) == r.ok


@settings(max_examples=examples(200), deadline=None)
@given(
    minor=st.integers(5, 30),
    micro=st.integers(0, 40),
    post=st.one_of(st.none(), st.integers(0, 5)),
    pre=st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b", "rc"]), st.integers(0, 3))),
    dev=st.one_of(st.none(), st.integers(0, 9)),
    local=st.one_of(st.none(), st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)),
)
def test_match_version_is_total_and_never_looks_past_the_release(
    minor, micro, post, pre, dev, local
):
    text = (
        f"0.{minor}.{micro}"
        + (f"{pre[0]}{pre[1]}" if pre else "")
        + (f".post{post}" if post is not None else "")
        + (f".dev{dev}" if dev is not None else "")
    )
    want = Version(text)
    if want < Version("0.5.5"):
        return
    chosen, how = match_version(text)
    assert chosen in known_versions() and how in ("exact", "release", "older", "newest")
    assert match_version(text + (f"+{local}" if local else "")) == (
        chosen,
        how,
    )  # a local label changes nothing
    release = Version(want.base_version + (f".post{want.post}" if want.post is not None else ""))
    if how == "exact":
        assert Version(chosen) == want
    else:
        assert not Version(chosen).is_prerelease and Version(chosen) <= release
        assert (how == "newest") == (chosen == newest_version() and Version(chosen) < release)
