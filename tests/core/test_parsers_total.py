"""Every parser is total: any input gives a result or a one-line TopoctlError (exit 2), never
another exception.

Property tests (hypothesis, derandomized so CI is reproducible) per parser: snapshots, captures,
rule files, launch.env files, launch commands, model configs. Inputs are raw bytes, random JSON/YAML
trees, the hostile shapes of docs/reliability.md (deep nesting, alias bombs, huge integers,
GPU-count claims, long words), and valid documents with one value replaced by something of another
type or size. Each parser gets at least 1,000 examples (EXAMPLES); benchmarks/fuzz_cli.py runs the
same kinds of input through the real console script.
"""

from __future__ import annotations

import copy
import json
import os

import yaml
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topoctl.core.errors import TopoctlError

EXAMPLES = 1000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
SETTINGS = settings(
    max_examples=examples(EXAMPLES),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        ["OK", "NS", "unknown", "9.0", "NV18", "PIX", "pcie", "", "-1", "0x10", "1e400"]
    ),
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=30,
)


def check_error(error: TopoctlError) -> None:
    """What the CLI would print: one line of message, one of hint (control characters are escaped
    there)."""
    assert error.exit_code == 2, (error.exit_code, error.message)
    assert isinstance(error.message, str) and error.message
    assert len(error.message) < 2000


def paths(tree, prefix=()):
    """Every path (tuple of keys/indices) to a value in a JSON tree."""
    yield prefix
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from paths(value, (*prefix, index))


def replaced(tree, path, value):
    """A deep copy of `tree` with the value at `path` replaced (the root itself when path is empty)."""
    if not path:
        return value
    copied = copy.deepcopy(tree)
    node = copied
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copied


def mutations(base):
    """A valid document with one value swapped for a random tree, or deleted."""
    all_paths = list(paths(base))

    @st.composite
    def build(draw):
        path = all_paths[draw(st.integers(min_value=0, max_value=len(all_paths) - 1))]
        if path and draw(st.integers(0, 3)) == 0:
            copied = copy.deepcopy(base)
            node = copied
            for key in path[:-1]:
                node = node[key]
            del node[path[-1]]
            return copied
        return replaced(base, path, draw(trees))

    return build()


def hostile_text():
    """The shapes that used to cost minutes or gigabytes (docs/reliability.md), at random sizes."""
    depth = st.integers(min_value=60, max_value=5000)
    return st.one_of(
        depth.map(lambda n: "[" * n + "]" * n),
        depth.map(lambda n: '{"a":' * n + "1" + "}" * n),
        depth.map(lambda n: "- " * n + "x"),
        depth.map(lambda n: "".join(f"{' ' * i}a:\n" for i in range(n))),
        st.integers(min_value=2, max_value=12).map(
            lambda n: (
                "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                + "".join(
                    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n"
                    for i in range(n)
                )
            )
        ),
        st.just("&a [*a]"),
        st.just("a: &a {b: *a}"),
        st.integers(min_value=41, max_value=100000).map(lambda n: "x: " + "9" * n),
        st.integers(min_value=17, max_value=5000).map(lambda n: "x: 0x" + "f" * n),
        st.integers(min_value=5000, max_value=200000).map(lambda n: '{"x": ' + "9" * n + "}"),
        st.sampled_from(
            [
                "x: 2026-01-01",
                "- !!binary aGVsbG8=",
                "x: .inf",
                "!!set {a, b}",
                "a\n---\nb",
                "!!python/object/apply:os.system [true]",
                "\ufeff{}",
                '{"a": NaN}',
                "[1e999]",
            ]
        ),
    )


def inputs(valid_texts: list[str], mutated=None):
    """Bytes, text and trees, hostile shapes, and (with `mutated`) valid documents with one value
    changed."""
    options = [
        st.binary(max_size=300),
        st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
        trees.map(lambda t: json.dumps(t).encode()),
        trees.map(lambda t: yaml.safe_dump(t).encode()),
        hostile_text().map(str.encode),
        st.sampled_from(valid_texts).flatmap(
            lambda text: st.integers(0, max(len(text) - 1, 0)).map(lambda cut: text[:cut].encode())
        ),
    ]
    if mutated is not None:
        options += [mutated, mutated]
    return st.one_of(*options)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


# -- snapshots
# ------------------------------------------------------------------------------------------------
SNAPSHOT = json.loads(read(os.path.join(FIXTURES, "l40s-4x-pcie-2numa", "snapshot.json")))


@SETTINGS
@given(
    inputs(
        [json.dumps(SNAPSHOT)],
        mutations(SNAPSHOT)
        .flatmap(lambda doc: st.sampled_from([json.dumps(doc), yaml.safe_dump(doc)]))
        .map(str.encode),
    )
)
def test_snapshot_parser_is_total(data):
    from topoctl.probe.render_matrix import render
    from topoctl.snapshot.document import parse_snapshot_text

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    try:
        snapshot = parse_snapshot_text(text, origin="machine.yaml")
    except TopoctlError as error:
        check_error(error)
        return
    render(snapshot)  # what `show` does with what the loader accepted


# -- captures
# -------------------------------------------------------------------------------------------------
CAPTURE = json.loads(read(os.path.join(FIXTURES, "rtx-4090-2x-pcie-no-p2p", "capture.json")))
CLAIMS = st.integers(min_value=0, max_value=5000).map(
    lambda n: json.dumps(
        {"capture_version": 1, "nvml": {"nvmlInit": {"ok": None}, "nvmlDeviceGetCount": {"ok": n}}}
    )
)


@SETTINGS
@given(
    st.one_of(
        inputs([json.dumps(CAPTURE)], mutations(CAPTURE).map(lambda doc: json.dumps(doc).encode())),
        CLAIMS.map(str.encode),
    )
)
def test_capture_parser_is_total(tmp_path_factory, data):
    from topoctl.core.errors import NoGpuError
    from topoctl.probe.capture import load_capture
    from topoctl.probe.collect import probe_capture

    path = tmp_path_factory.mktemp("capture") / "capture.json"
    path.write_bytes(data)
    try:
        snapshot = probe_capture(load_capture(str(path)), name=str(path))
    except NoGpuError as error:
        assert error.exit_code == 3
        return
    except TopoctlError as error:
        check_error(error)
        return
    assert len(snapshot["gpus"]) * (len(snapshot["gpus"]) - 1) <= len(
        json.loads(data).get("nvml", {})
    )


# -- rule files
# -----------------------------------------------------------------------------------------------
RULE_FILE = yaml.safe_load(read(os.path.join(ROOT, "rules", "knowledge", "nccl.yaml")))


@SETTINGS
@given(
    inputs(
        [yaml.safe_dump(RULE_FILE)],
        mutations(RULE_FILE).map(lambda doc: yaml.safe_dump(doc).encode()),
    )
)
def test_rule_file_parser_is_total(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("rules")
    (folder / "site.yaml").write_bytes(data)
    try:
        evaluate_site_rules(str(folder))
    except TopoctlError as error:
        check_error(error)


# -- launch.env
# -----------------------------------------------------------------------------------------------
LAUNCH_ENV = read(os.path.join(ROOT, "docs", "real-hardware", "h200-2x-nvswitch-vm", "launch.env"))
ENV_PIECES = st.sampled_from(
    [
        "SGLANG_ARGS=",
        "'",
        '"',
        "\\",
        "\n",
        " ",
        "#",
        "export ",
        "NCCL_ALGO=",
        "$(x)",
        "`",
        "--tp-size",
        "8",
        "--speculative-algorithm",
        "EAGLE3",
        "=",
        ";",
        "\t",
        "\r",
        "é",
        "--disable-custom-all-reduce",
        "TOPOCTL_SGLANG_VERSION=",
        "0.5.12",
        "a" * 500,
    ]
)


@SETTINGS
@given(
    st.one_of(
        inputs([LAUNCH_ENV]),
        st.lists(ENV_PIECES, max_size=40).map(lambda parts: "".join(parts).encode()),
        st.integers(min_value=1, max_value=200000).map(
            lambda n: ("SGLANG_ARGS='--model-path " + "a" * n + "'\n").encode()
        ),
        st.integers(min_value=1, max_value=20000).map(
            lambda n: ("SGLANG_ARGS='" + "--tp 8 " * n + "'\n").encode()
        ),
    )
)
def test_launch_env_parser_is_total(tmp_path_factory, data):
    from topoctl.cli.commands._options import flag_set_for
    from topoctl.deploy.sglang_launch import parse_env_file

    path = tmp_path_factory.mktemp("env") / "launch.env"
    path.write_bytes(data)
    try:
        parse_env_file(str(path), lambda metadata, lines=None: flag_set_for(None))
    except TopoctlError as error:
        check_error(error)


# -- launch commands
# ------------------------------------------------------------------------------------------
WORDS = st.one_of(
    st.sampled_from(
        [
            "python",
            "python3",
            "-m",
            "sglang.launch_server",
            "sglang",
            "serve",
            "env",
            "--tp-size",
            "--tp",
            "8",
            "-1",
            "1e9",
            "NCCL_ALGO=Tree",
            "--model-path",
            "M",
            "--speculative-algorithm",
            "EAGLE3",
            "--cuda-graph-max-bs",
            "99999999999999999999",
            "--enable-torch-symm-mem",
            "--",
            "=",
            "--tp-size=",
            "-u",
            "--disable-custom-all-reduce",
        ]
    ),
    st.text(max_size=20),
)


@SETTINGS
@given(
    st.one_of(
        st.lists(WORDS, max_size=30),
        st.integers(min_value=1, max_value=10000).map(lambda n: ["--tp-size"] * n),
        st.integers(min_value=1, max_value=100000).map(lambda n: ["--model-path", "m" * n]),
    )
)
def test_launch_command_parser_is_total(tokens):
    from topoctl.cli.commands._options import flag_set_for
    from topoctl.core.safe_read import check_tokens
    from topoctl.deploy.sglang_launch import parse_args, split_command

    try:
        check_tokens(tokens, "the command after --")
        env, args = split_command(tokens)
        parse_args(args, flag_set_for(None))
    except TopoctlError as error:
        check_error(error)


# -- model configs
# --------------------------------------------------------------------------------------------
CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "n_routed_experts": 256,
    "text_config": {"num_hidden_layers": 61, "hidden_size": 7168},
}


@SETTINGS
@given(inputs([json.dumps(CONFIG)], mutations(CONFIG).map(lambda doc: json.dumps(doc).encode())))
def test_model_config_parser_is_total(tmp_path_factory, data):
    from topoctl.autoconf.models import from_hf_config

    path = tmp_path_factory.mktemp("model") / "config.json"
    path.write_bytes(data)
    try:
        profile = from_hf_config(str(path))
    except TopoctlError as error:
        check_error(error)
        return
    json.dumps(profile)  # plain data all the way down


def evaluate_site_rules(folder: str) -> None:
    """What `check --rules DIR` does with a rule file: load it next to the built-in rules, evaluate,
    report."""
    from topoctl.rules.engine import evaluate, load_rules
    from topoctl.snapshot.catalogue import system_snapshot

    ruleset = load_rules(extra_dirs=[folder])
    report = evaluate(
        ruleset,
        system_snapshot("rtx-pro-6000-8x-pcie"),
        {"tp_size": 8, "sglang_version": "0.5.12", "launch": {}},
    )
    report.to_dict()
