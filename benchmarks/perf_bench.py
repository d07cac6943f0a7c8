"""The speed goals of `show`, `check` and `recommend`, each paired with `python -c pass` in the same run, and
how they grow with the GPU count (synthetic 8-128-GPU snapshots, benchmarks/large_snapshots.py).

Usage:  python benchmarks/perf_bench.py [--repeat 9] [--scaling] [--sizes 8,16,32,64,128] [--markdown FILE]

Each command is a fresh process (what a CI job pays), run once per round, all commands interleaved
in every round so that each sees the load the others see; the knowledge cache is warm (filled by one
run before the rounds). Reported per command: the minimum and median wall time over the rounds, and
each divided by `python -c pass`'s minimum and median in the same rounds (ratio of minimums, ratio
of medians): the ratios stay meaningful on a shared machine where absolute times do not. The CPU
time each process used (user + system, from wait4) is reported the same way: on a machine whose
cores other jobs keep busy, a process waits for a core for much of its wall time, while its CPU time
stays what the work costs. The load average over the run is printed with the results. Goals (issue
22): recommend warm <= 6x, check <= 5x, show <= 3x; recommend on 128 GPUs (the most one snapshot may
hold, topoctl.snapshot.document.MAX_GPUS) < 2 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

SYSTEM = "h200-4x-nvswitch-vm"
MODEL = "llama-3.1-70b"  # fits on the 4x H200 system and on every synthetic size
# As installed: bytecode written and read (pip install compiles it). A shell with
# PYTHONDONTWRITEBYTECODE set would make every run compile topoctl's modules again and measure that
# instead.
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
GOALS = {
    "topoctl show --topology <4x H200 snapshot>": 3.0,
    "topoctl check launch.env --system (warm)": 5.0,
    "topoctl recommend --system --model (warm)": 6.0,
}


def _launch(gpus: int) -> list[str]:
    """What check judges on an N-GPU snapshot: TP 8 replicas over every GPU (the rules' pairs inside
    each)."""
    dp = max(1, gpus // 8)
    return [
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--tp",
        str(min(8, gpus)),
    ] + (["--dp", str(dp)] if dp > 1 else [])


def commands(folder: str, scaling: bool, sizes: list[int]) -> dict[str, list[str]]:
    python = sys.executable
    topoctl = [python, "-m", "topoctl"]
    env_file = os.path.join(folder, "launch.env")
    subprocess.run(
        [*topoctl, "recommend", "--system", SYSTEM, "--model", MODEL, "-o", env_file],
        check=True,
        cwd=folder,
        env=CHILD_ENV,
    )
    out = {
        "python -c pass": [python, "-c", "pass"],
        "topoctl --version": [*topoctl, "--version"],
        "topoctl show --topology <4x H200 snapshot>": [
            *topoctl,
            "show",
            "--topology",
            os.path.join(ROOT, "fixtures", SYSTEM, "snapshot.json"),
        ],
        "topoctl check launch.env --system (warm)": [
            *topoctl,
            "check",
            env_file,
            "--system",
            SYSTEM,
        ],
        "topoctl check --system -- <command> (warm)": [
            *topoctl,
            "check",
            "--system",
            SYSTEM,
            *_launch(4),
        ],
        "topoctl recommend --system --model (warm)": [
            *topoctl,
            "recommend",
            "--system",
            SYSTEM,
            "--model",
            MODEL,
        ],
    }
    if scaling:
        from large_snapshots import write_snapshot

        for gpus in sizes:
            path = write_snapshot(gpus, os.path.join(folder, f"synthetic-{gpus}.json"))
            out[f"show, {gpus} GPUs"] = [*topoctl, "show", "--topology", path]
            out[f"check, {gpus} GPUs"] = [*topoctl, "check", "--topology", path, *_launch(gpus)]
            out[f"recommend, {gpus} GPUs"] = [
                *topoctl,
                "recommend",
                "--topology",
                path,
                "--model",
                MODEL,
            ]
    return out


def _run(command: list[str], cwd: str) -> tuple[float, float, int, bytes]:
    """(wall s, CPU s of the process: user + system, exit code, stderr) of one fresh process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=errors, cwd=cwd, env=CHILD_ENV
        )
        _, status, usage = os.wait4(process.pid, 0)
        took = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        return took, usage.ru_utime + usage.ru_stime, process.returncode, errors.read()


def measure(
    runs: dict[str, list[str]], repeat: int, cwd: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU times per command: `repeat` rounds, every command once per round."""
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat + 1):  # the first round warms the cache and the page cache: not kept
        for name, command in runs.items():
            took, used, code, errors = _run(command, cwd)
            if code not in (0, 1):  # 1: check found a blocking problem, still a full run
                raise SystemExit(f"{name}: exit {code}\n{errors.decode(errors='replace')[-500:]}")
            wall[name].append(took)
            cpu[name].append(used)
    return (
        {name: values[1:] for name, values in wall.items()},
        {name: values[1:] for name, values in cpu.items()},
    )


def rows(timings: dict[str, list[float]]) -> list[tuple[str, float, float, float, float]]:
    base = timings["python -c pass"]
    return [
        (
            name,
            min(values),
            statistics.median(values),
            min(values) / min(base),
            statistics.median(values) / statistics.median(base),
        )
        for name, values in timings.items()
    ]


def markdown(
    wall: list[tuple[str, float, float, float, float]],
    cpu: list[tuple[str, float, float, float, float]],
    header: str,
) -> str:
    """The table as docs/performance.md and the README quote it: wall and CPU ratios side by side."""
    lines = [
        header,
        "",
        "| command | wall min s | wall median s | x pass, wall (min / median) | CPU min s | "
        "x pass, CPU (min / median) | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, low, mid, ratio_min, ratio_median), (
        _,
        cpu_low,
        _,
        cpu_ratio_min,
        cpu_ratio_median,
    ) in zip(wall, cpu, strict=True):
        goal = GOALS.get(name)
        verdict = ""
        if goal is not None:
            verdict = (
                f"<= {goal:g}x: wall "
                + ("met" if ratio_min <= goal else "**not met**")
                + ", CPU "
                + ("met" if cpu_ratio_min <= goal else "**not met**")
            )
        elif name.startswith("recommend, 128"):
            verdict = (
                "< 2 s: wall "
                + ("met" if low < 2 else "**not met**")
                + ", CPU "
                + ("met" if cpu_low < 2 else "**not met**")
            )
        lines.append(
            f"| {name} | {low:.3f} | {mid:.3f} | {ratio_min:.2f} / {ratio_median:.2f} | "
            f"{cpu_low:.3f} | {cpu_ratio_min:.2f} / {cpu_ratio_median:.2f} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="add show/check/recommend on synthetic N-GPU snapshots",
    )
    parser.add_argument("--sizes", default="8,16,32,64,128")
    parser.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",") if size]
    with tempfile.TemporaryDirectory() as folder:
        runs = commands(folder, args.scaling, sizes)
        load_before = os.getloadavg()[0]
        started = time.time()
        timings, cpu_times = measure(runs, args.repeat, folder)
        took = time.time() - started
        load_after = os.getloadavg()[0]
    table, cpu_table = rows(timings), rows(cpu_times)
    header = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"{args.repeat} interleaved rounds in {took:.0f} s, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}; load average "
        f"{load_before:.1f} before, {load_after:.1f} after"
    )
    print(header)
    print(
        f"{'command':44s} {'wall min':>8s} {'median':>7s} {'x min':>6s} {'x med':>6s} "
        f"{'CPU min':>8s} {'x min':>6s} {'x med':>6s}"
    )
    for (name, low, mid, ratio_min, ratio_median), (_, cpu_low, _, cpu_min, cpu_median) in zip(
        table, cpu_table, strict=True
    ):
        print(
            f"{name:44s} {low:8.3f} {mid:7.3f} {ratio_min:6.2f} {ratio_median:6.2f} "
            f"{cpu_low:8.3f} {cpu_min:6.2f} {cpu_median:6.2f}"
        )
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(markdown(table, cpu_table, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
