"""topoctl/core/safe_read.py: each limit's worst case stays under a bound counted in operations or
bytes (never time).

Operations are counted with sys.setprofile (Python and C function calls made while parsing) or the
YAML composer's own count of nodes; bytes with tracemalloc's peak or with a reader that counts what
it hands out.
"""

from __future__ import annotations

import glob
import io
import json
import os
import shlex
import sys
import tracemalloc

import pytest
import yaml
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.core import safe_read as limits
from topoctl.core.safe_read import LimitError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def calls_made(function, *args):
    """(result or exception, number of function calls - Python and C - made while running
    function(*args))."""
    count = [0]

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            count[0] += 1

    sys.setprofile(profile)
    try:
        outcome = function(*args)
    except Exception as exc:  # the limits raise; the count is what matters
        outcome = exc
    finally:
        sys.setprofile(None)
    return outcome, count[0]


def peak_bytes(function, *args):
    tracemalloc.start()
    try:
        try:
            function(*args)
        except Exception:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- file size
# ------------------------------------------------------------------------------------------------
class CountingReader(io.RawIOBase):
    """An endless file (like /dev/zero) that counts the bytes it hands out."""

    def __init__(self) -> None:
        self.handed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = len(buffer)
        buffer[:size] = b"\0" * size
        self.handed += size
        return size


@pytest.mark.parametrize(
    "limit",
    [
        limits.MAX_SNAPSHOT_BYTES,
        limits.MAX_RULE_FILE_BYTES,
        limits.MAX_LAUNCH_ENV_BYTES,
        limits.MAX_MODEL_CONFIG_BYTES,
    ],
)
def test_an_endless_file_is_read_only_up_to_the_limit(limit):
    reader = CountingReader()
    with pytest.raises(LimitError) as caught:
        limits.read_bounded(io.BufferedReader(reader), limit, "/dev/zero")
    assert reader.handed <= limit + 1 + io.DEFAULT_BUFFER_SIZE
    assert "larger than" in caught.value.message and caught.value.exit_code == 2


def test_dev_zero_as_a_snapshot_is_one_line_exit_2(capsys):
    from topoctl.cli.app import main

    assert main(["show", "--topology", "/dev/zero"]) == 2
    assert "/dev/zero is a character device, not a regular file" in capsys.readouterr().err


def test_a_file_past_the_limit_is_refused_by_its_size_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:  # sparse: 1 GiB of size, no bytes written
        handle.truncate(1024**3)
    read: list[int] = []
    monkeypatch.setattr(
        limits, "read_bounded", lambda handle, limit, origin: read.append(limit) or b""
    )
    with pytest.raises(LimitError, match="larger than 1 MiB"):
        limits.read_file(str(big), limits.MAX_RULE_FILE_BYTES)
    assert read == []


# -- nesting depth
# --------------------------------------------------------------------------------------------
def test_deep_yaml_stops_at_the_depth_limit_after_that_many_nodes():
    text = "[" * 900 + "]" * 900
    loader = limits.yaml_loader("deep.yaml", text=text)
    with pytest.raises(LimitError, match="nested deeper than 64 levels"):
        loader.get_single_data()
    assert loader.events <= limits.MAX_DEPTH + 1
    # deeper than libyaml's own bound (1,000 flow levels): its scanner refuses it first, a YAMLError
    # the readers word as "not valid YAML"; either way nothing deep is ever built
    with pytest.raises((LimitError, yaml.YAMLError)):
        limits.load_yaml("[" * 100_000 + "]" * 100_000, "deep.yaml")


def test_deep_block_yaml_stops_too():
    text = "".join(f"{' ' * i}a:\n" for i in range(2000))
    loader = limits.yaml_loader("deep.yaml", text=text)
    with pytest.raises(LimitError):
        loader.get_single_data()
    assert loader.events <= 2 * limits.MAX_DEPTH + 2  # a key and a mapping per level


def test_deep_json_is_refused_in_bounded_memory():
    text = "[" * 200_000 + "]" * 200_000
    with pytest.raises(LimitError, match="nested deeper"):
        limits.loads_json(text, "deep.json")
    assert peak_bytes(limits.loads_json, text, "deep.json") < 1_000_000  # the 400 KB text aside


def test_json_just_past_the_depth_limit_is_refused_and_at_it_accepted():
    assert limits.loads_json("[" * 64 + "]" * 64, "ok.json")
    with pytest.raises(LimitError):
        limits.loads_json("[" * 65 + "]" * 65, "deep.json")


# -- YAML aliases
# ---------------------------------------------------------------------------------------------
LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
)


def test_an_alias_bomb_is_refused_after_composing_its_few_nodes():
    assert len(LAUGHS) < 500  # ten levels of ten: 10**10 values if expanded
    loader = limits.yaml_loader("laughs.yaml", text=LAUGHS)
    with pytest.raises(LimitError, match="aliases expanded"):
        loader.get_single_data()
    assert loader.events <= 150
    assert peak_bytes(limits.load_yaml, LAUGHS, "laughs.yaml") < 2_000_000


def test_a_rule_file_gets_the_smaller_expansion_bound():
    text = "a: &a [" + ",".join(["x"] * 1000) + "]\nb: [" + ",".join(["*a"] * 300) + "]\n"
    assert limits.load_yaml(text, "ok.yaml")  # 300,000 values: fine for a snapshot
    with pytest.raises(LimitError):
        limits.load_yaml(text, "site.yaml", max_nodes=limits.MAX_RULE_FILE_NODES)


def test_too_many_aliases_and_recursive_aliases():
    many = "a: &a 1\nb: [" + ",".join(["*a"] * (limits.MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(LimitError, match="more than 1000 YAML aliases"):
        limits.load_yaml(many, "x.yaml")
    for text in ("&a [*a]", "a: &a {b: [1, *a]}"):
        with pytest.raises(LimitError, match="refers to a value that contains it"):
            limits.load_yaml(text, "x.yaml")


# -- integers and values
# --------------------------------------------------------------------------------------
def test_a_huge_yaml_integer_is_refused_before_conversion():
    text = "x: " + "9" * 1_000_000
    loader = limits.yaml_loader("big.yaml", text=text)
    with pytest.raises(LimitError, match="more than 40 digits"):
        loader.get_single_data()
    assert (
        loader.events <= 3
    )  # the document, the mapping, the key: refused at the value, never converted


@pytest.mark.parametrize(
    "text", ["x: 0x" + "f" * 20, "x: 18446744073709551616", "x: -18446744073709551616"]
)
def test_integers_of_64_bits_or_more_are_refused(text):
    with pytest.raises(LimitError, match="bits"):
        limits.load_yaml(text, "x.yaml")
    assert limits.load_yaml("x: 18446744073709551615", "x.yaml") == {"x": 2**64 - 1}


@pytest.mark.parametrize(
    "text, words",
    [
        ("x: .inf", "not finite"),
        ("x: 2026-01-01", "date"),
        ("x: !!binary aGVsbG8=", "bytes"),
        ("!!set {a: null}", "set"),
        ("? [a]\n: 1", "unhashable"),
    ],
)
def test_values_that_are_not_plain_json_are_refused(text, words):
    with pytest.raises((LimitError, yaml.YAMLError)) as caught:
        limits.load_yaml(text, "x.yaml")
    assert words in str(caught.value) or words in getattr(caught.value, "message", "")


def test_the_bounded_loader_reads_what_safe_load_reads():
    """Same semantics as yaml.safe_load, with libyaml's parser and with the pure-Python one."""
    files = glob.glob(os.path.join(ROOT, "rules", "**", "*.yaml"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "autoconf", "data", "*.yaml"))
    assert len(files) >= 5
    for path in files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        expected = yaml.safe_load(text)
        assert limits.load_yaml(text, path, use_c=False) == expected
        if limits.has_c_yaml():
            assert limits.load_yaml(text, path, use_c=True) == expected


# -- the libyaml fast path
# -----------------------------------------------------------------------------------
_PLAIN_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "yes",
            "No",
            "on",
            "~",
            "0o17",
            "0x1F",
            "1_000",
            "190:20:30",
            ".5",
            "1e3",
            "-.inf",
            "null",
            "",
            "2026-01-01",
            "<<",
            "=",
            "!x",
            "*a",
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(0, 9), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.skipif(not limits.has_c_yaml(), reason="the fast path needs libyaml")
@settings(max_examples=examples(300), deadline=None)
@given(_PLAIN_VALUES, st.sampled_from([None, False, True]))
def test_the_fast_path_reads_what_safe_load_reads(value, flow):
    text = yaml.safe_dump(value, default_flow_style=flow, sort_keys=False)
    fast = limits._fast_yaml(text, limits.MAX_NODES, limits.MAX_DEPTH)
    assert fast is not limits._SLOW
    assert repr(fast) == repr(
        yaml.safe_load(text)
    )  # repr: 1, 1.0 and True differ, key order counts


@pytest.mark.skipif(not limits.has_c_yaml(), reason="the fast path needs libyaml")
@pytest.mark.parametrize(
    "text",
    [
        "a: &x [1]\nb: *x\n",
        "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
        "a: 1\na: 2\n",
        "x: 2026-01-01\n",
        "x: !!binary aGVsbG8=\n",
        "!!set {a: null}",
        "x: .inf\n",
        "x: 18446744073709551616\n",
        "x: " + "9" * 50,
        "? [a]\n: 1\n",
        "[" * 65 + "]" * 65,
        "--- 1\n--- 2\n",
        "a: [1\n",
        "x: !custom 1\n",
    ],
)
def test_anything_but_a_plain_document_takes_the_bounded_composer(text):
    """Aliases, merge keys, duplicate keys, tags beyond JSON's kinds, values past a limit and broken
    YAML are left to the bounded composer, so its answer or its error is the one load_yaml gives."""
    assert limits._fast_yaml(text, limits.MAX_NODES, limits.MAX_DEPTH) is limits._SLOW
    try:
        expected: object = limits.load_yaml(text, "x.yaml", use_c=True)
    except (LimitError, yaml.YAMLError) as exc:
        expected = (type(exc), str(exc))
    try:
        got: object = limits.load_yaml(text, "x.yaml")
    except (LimitError, yaml.YAMLError) as exc:
        got = (type(exc), str(exc))
    assert got == expected


@pytest.mark.skipif(not limits.has_c_yaml(), reason="the fast path needs libyaml")
def test_the_fast_path_keeps_the_node_bound():
    text = "[" + ",".join(["1"] * 1000) + "]"
    assert limits._fast_yaml(text, 1000, limits.MAX_DEPTH) is limits._SLOW
    assert limits._fast_yaml(text, 1002, limits.MAX_DEPTH) == [1] * 1000
    assert (
        limits._fast_yaml("[" * 64 + "]" * 64, limits.MAX_NODES, limits.MAX_DEPTH)
        is not limits._SLOW
    )


# -- GPU count
# ------------------------------------------------------------------------------------------------
def test_a_capture_claiming_many_gpus_is_refused_before_any_per_gpu_question(monkeypatch):
    from topoctl.probe.capture import Session
    from topoctl.probe.collect import probe_capture

    asked = []
    real_ask = Session.ask
    monkeypatch.setattr(
        Session, "ask", lambda self, *args: asked.append(args[:2]) or real_ask(self, *args)
    )
    capture = {
        "capture_version": 1,
        "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": 128}},
    }
    assert len(json.dumps(capture)) < 100
    with pytest.raises(LimitError, match="claims 128 GPUs"):
        probe_capture(capture, name="tiny.json")
    assert asked == []


def test_a_real_capture_holds_enough_answers_for_its_gpus():
    for path in glob.glob(os.path.join(ROOT, "fixtures", "*", "capture.json")):
        with open(path, encoding="utf-8") as handle:
            capture = json.load(handle)
        count = capture["nvml"].get("nvmlDeviceGetCount", {}).get("ok")
        if isinstance(count, int):
            limits.check_capture_gpus(count, len(capture["nvml"]), path)


# -- launch words
# ---------------------------------------------------------------------------------------------
def test_a_long_word_is_split_in_a_constant_number_of_calls():
    word = "a" * (limits.MAX_WORD_CHARS - 1)
    result, calls = calls_made(limits.split_words, f"--model-path '{word}' --tp 8", "launch.env:1")
    assert result == ["--model-path", word, "--tp", "8"]
    assert calls < 1000  # shlex makes one call or more per character: 65,000+
    _, shlex_calls = calls_made(shlex.split, f"--model-path '{word}'")
    assert shlex_calls > 50 * calls  # the measure does see the difference


def test_a_word_past_the_limit_and_too_many_words_are_refused():
    with pytest.raises(LimitError, match="characters long"):
        limits.split_words("a" * (limits.MAX_WORD_CHARS + 1), "launch.env:1")
    result, calls = calls_made(limits.split_words, "a " * 1_000_000, "launch.env:1")
    assert isinstance(result, LimitError) and "more than 4,096 words" in result.message
    assert calls < 20 * limits.MAX_TOKENS  # it stops at the limit, not after a million words


def test_the_launch_command_limit_through_the_cli(capsys):
    from topoctl.cli.app import main

    assert main(["check", "--system", "h200-4x-nvswitch-vm", "--", *["--tp-size"] * 5000]) == 2
    assert "more than 4,096" in capsys.readouterr().err


@settings(max_examples=examples(1000), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab '\"\\\n\t\r$#é")), max_size=40))
def test_split_words_is_shlex_split(text):
    try:
        expected = shlex.split(text)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)):
            limits.split_words(text, "x")
        return
    assert limits.split_words(text, "x") == expected


# -- the one reading layer: regular files only, wherever a path is reached from
# ---------------------------------
LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--tp-size", "4"]
SYSTEM_ARGS = ["--system", "h200-4x-nvswitch-vm"]


def _fifo(folder, name: str) -> str:
    path = os.path.join(str(folder), name)
    os.mkfifo(path)  # no writer: a plain open() of it would block forever
    return path


def _refused(err: str, path: str) -> bool:
    lines = err.strip().splitlines()
    return len(lines) == 2 and f"{path} is a FIFO, not a regular file" in lines[0]


@pytest.mark.parametrize("surface", ["topology", "capture", "launch.env", "model-config"])
def test_a_fifo_named_on_the_command_line_is_one_line_exit_2(cli, tmp_path, surface):
    fifo = _fifo(
        tmp_path, {"launch.env": "launch.env", "rules": "site.yaml"}.get(surface, "input.json")
    )
    argv = {
        "topology": ["show", "--topology", fifo],
        "capture": ["probe", "--from-capture", fifo],
        "launch.env": ["check", fifo, *SYSTEM_ARGS],
        "model-config": ["recommend", *SYSTEM_ARGS, "--model-config", fifo],
    }[surface]
    code, _, err = cli(argv)
    assert code == 2 and _refused(err, fifo), err


def test_fifos_reached_indirectly_are_refused_by_name(cli, tmp_path):
    """Inside a folder, a docker --env-file, a compose env_file, an SGLang --config, a model
    folder's weights."""
    env_fifo = _fifo(tmp_path, "vars.env")
    code, _, err = cli(
        [
            "check",
            *SYSTEM_ARGS,
            "--",
            "docker",
            "run",
            "--gpus",
            "all",
            "--env-file",
            env_fifo,
            "img",
            *LAUNCH,
        ]
    )
    assert code == 2 and _refused(err, env_fifo), err

    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  s:\n    image: lmsysorg/sglang:v0.5.12\n    env_file: vars.env\n"
        f"    command: {' '.join(LAUNCH)}\n"
    )
    code, _, err = cli(["check", str(compose), *SYSTEM_ARGS])
    assert code == 2 and "vars.env is a FIFO" in err, err

    config_fifo = _fifo(tmp_path, "server.yaml")
    code, _, err = cli(
        [
            "check",
            *SYSTEM_ARGS,
            "--sglang-version",
            "0.5.12",
            "--",
            *LAUNCH,
            "--config",
            config_fifo,
        ]
    )
    assert code == 2 and _refused(err, config_fifo), err

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps(
            {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100}
        )
    )
    weights = _fifo(model, "model.safetensors")
    code, _, err = cli(["recommend", *SYSTEM_ARGS, "--model-path", str(model)])
    assert code == 2 and _refused(err, weights), err


def test_a_fifo_inside_a_checked_folder_is_named_and_never_opened(cli, tmp_path):
    (tmp_path / "launch.env").write_text("SGLANG_ARGS='--model-path m --tp-size 4'\n")
    _fifo(tmp_path, "deploy.yaml")
    code, out, err = cli(["check", str(tmp_path), *SYSTEM_ARGS])
    assert code in (0, 1, 2) and "deploy.yaml" in out + err and "FIFO" in out + err


def test_a_fifo_as_the_knowledge_cache_is_not_read(cli, tmp_path, monkeypatch):
    from topoctl.core import knowledge_cache as cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TOPOCTL_NO_CACHE", raising=False)
    folder = tmp_path / "topoctl"
    folder.mkdir()
    for name in (
        "rules",
        "gpus",
        "rule-settings",
    ):  # every section the command may look up, as FIFOs
        for stamp in range(1):
            _fifo(folder, f"{name}-{stamp}.json")
    assert cache._read(str(folder / "rules-0.json"), []) is None
    code, _, err = cli(["check", *SYSTEM_ARGS, "--", *LAUNCH])
    assert code in (0, 1), err


def test_an_sglang_config_file_goes_through_the_bounded_loader(cli, tmp_path):
    bomb = tmp_path / "bomb.yaml"  # 485 bytes that safe_load expands to 10^9 values
    bomb.write_text(
        "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n"
            for i in range(9)
        )
    )
    code, _, err = cli(
        ["check", *SYSTEM_ARGS, "--sglang-version", "0.5.12", "--", *LAUNCH, "--config", str(bomb)]
    )
    assert code == 2 and "aliases expanded" in err, err
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * (limits.MAX_LAUNCH_FILE_BYTES + 1))
    code, _, err = cli(
        ["check", *SYSTEM_ARGS, "--sglang-version", "0.5.12", "--", *LAUNCH, "--config", str(big)]
    )
    assert code == 2 and "larger than 4 MiB" in err, err
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"tp-size: 4\nserved-model-name: caf\xe9\n")
    code, _, err = cli(
        ["check", *SYSTEM_ARGS, "--sglang-version", "0.5.12", "--", *LAUNCH, "--config", str(latin)]
    )
    assert code == 2 and f"{latin} is not UTF-8" in err, err


# -- counts a user gives: checked against the target before anything is built in proportion
# -----------------------
@pytest.mark.parametrize(
    "flags",
    [
        ["--tp-size", "1000000000"],
        ["--dp-size", "1000000000"],
        ["--tp-size", "100000", "--dp-size", "100000"],
        ["--base-gpu-id", "1000000000", "--gpu-id-step", "1000000000"],
    ],
)
def test_huge_parallel_sizes_are_judged_without_building_every_rank(cli, flags, monkeypatch):
    import tracemalloc

    tracemalloc.start()
    code, out, _ = cli(
        [
            "check",
            *SYSTEM_ARGS,
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "m",
            *flags,
        ]
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert code == 1 and "BLOCK" in out
    assert peak < 200 * 1024 * 1024  # one position per rank would be 8 GB


@pytest.mark.parametrize("version", ["1" * 5000, "0." + "9" * 5000, "v" + "1." * 3000 + "1"])
def test_a_5000_digit_version_is_one_line_exit_2(cli, version):
    code, _, err = cli(["check", *SYSTEM_ARGS, "--sglang-version", version, "--", *LAUNCH])
    lines = err.strip().splitlines()
    assert (
        code == 2
        and len(lines) == 2
        and "is not an SGLang version" in lines[0]
        and len(lines[0]) < 200
    )


def test_a_fifo_as_a_helm_template_or_an_entrypoint_script_is_never_opened(cli, tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: sglang\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("tp: 4\n")
    template = _fifo(chart / "templates", "deployment.yaml")
    code, out, err = cli(["check", str(chart), *SYSTEM_ARGS])
    assert code in (0, 1, 2) and (code != 2 or "deployment.yaml" in out + err)
    _fifo(tmp_path, "entrypoint.sh")
    (tmp_path / "Dockerfile").write_text(
        'FROM lmsysorg/sglang:v0.5.12\nENTRYPOINT ["/entrypoint.sh"]\n'
        'CMD ["python3", "-m", "sglang.launch_server", "--model-path", "m"]\n'
    )
    code, _, err = cli(["check", str(tmp_path / "Dockerfile"), *SYSTEM_ARGS])
    assert code in (0, 1, 2), err
    assert os.path.exists(template)
