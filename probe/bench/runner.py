"""The parent of `topoctl bench`: starts the workers, watches them, and assembles `measurements`.

No torch here except through the workers' processes (spawned, so CUDA never initialises in the
parent). The watchdog: each worker announces every measurement before it starts it; when nothing
arrives for `timeout` seconds the item in progress is recorded as hung (for P2P, the pair is marked
unhealthy and a fresh worker goes on with the remaining pairs), the workers are ended, and whatever
was measured is kept. Every row that arrives is handed to `on_update`, which the CLI uses to rewrite
its output file atomically, so a run stopped by Ctrl-C, a hang or a crash leaves a valid snapshot
with the rows measured so far.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import datetime as _dt
import queue as _queue
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TextIO, cast

from topoctl import __version__
from topoctl.probe.bench.plan import Plan
from topoctl.probe.bench.records import Message, MessageSource, Row

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from topoctl.probe.bench.decode_step import Request

STARTUP_S = (
    120.0  # a worker's start-up: spawning Python, importing torch, CUDA and NCCL initialisation
)


@dataclass
class Outcome:
    measurements: dict[str, Any]
    problems: list[str] = field(default_factory=list)  # one line each, shown on stderr
    interrupted: bool = False


class Progress:
    """A one-line progress bar on a terminal, one line per phase otherwise (stderr)."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.total, self.done = max(total, 1), 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.phase: str | None = None

    def step(self, label: str, section: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            width = 30
            filled = int(width * min(self.done, self.total) / self.total)
            self.stream.write(
                f"\rtopoctl bench [{'#' * filled}{'.' * (width - filled)}] "
                f"{self.done}/{self.total} {label[:60]:<60}"
            )
            self.stream.flush()
        elif section != self.phase:
            self.stream.write(f"topoctl bench: {section} ({self.done}/{self.total} done)\n")
            self.stream.flush()
        self.phase = section

    def advance(self) -> None:
        self.done += 1

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _item(current: Message | None, otherwise: str) -> str:
    """What the last start message said was being measured (`otherwise` before any)."""
    return current.get("item", otherwise) if current else otherwise


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def empty_measurements(
    plan: Plan, versions: dict[str, str | None], gpus: list[int]
) -> dict[str, Any]:
    return {
        "method": f"topoctl bench {__version__}",
        "topoctl_version": __version__,
        "measured_at": _dt.datetime.now(_dt.timezone.utc)
        .replace(microsecond=0)
        .isoformat()
        .replace("+00:00", "Z"),
        "versions": versions,
        "gpus": gpus,
        "backend": plan.backend,
        "budget_s": plan.budget_s,
        "timeout_s": plan.timeout_s,
        "model": plan.model_name,
        "model_bytes": plan.model_sizes,
        "complete": False,
        "p2p": [],
        "local_copy": [],
        "allreduce": [],
        "coalescing": [],
        "problems": [],
    }


def expected_items(plan: Plan) -> int:
    """Rows the run will report (for the progress bar): pairs, local copies, allreduce rows,
    coalescing."""
    sizes = len(plan.all_sizes())
    gpu = plan.backend == "nccl"
    timed_paths = 1 + (2 if gpu and "torch_symm_mem" in plan.paths else 0)
    unavailable = (0 if gpu else 2) + (3 if "custom" in plan.paths else 0)
    return (
        len(plan.p2p_pairs)
        + (plan.world_size if gpu else 0)
        + 2 * sizes * timed_paths
        + unavailable
        + 1
    )


class Runner:
    def __init__(
        self,
        plan: Plan,
        measurements: dict[str, Any],
        on_update: Callable[[dict[str, Any]], None],
        progress: Progress,
        gpu_map: Callable[[list[str | None]], list[int]] | None = None,
    ) -> None:
        self.plan, self.m, self.on_update, self.progress = plan, measurements, on_update, progress
        self.gpu_map = gpu_map
        # the workers' side needs torch; the parent only starts them
        import torch.multiprocessing as mp

        self.ctx = mp.get_context("spawn")
        self.children: list[BaseProcess] = []
        self.index_map: list[int] | None = None  # torch device index -> snapshot GPU index

    def _gpu(self, torch_index: int) -> int:
        if self.index_map is None or not 0 <= torch_index < len(self.index_map):
            return torch_index
        return self.index_map[torch_index]

    def translate(self, section: str, row: Row) -> Row:
        """A worker's row in snapshot GPU indices (workers count GPUs in torch's order; their rows
        hold ints)."""
        row = dict(row)
        if section == "p2p":
            row["src"], row["dst"] = (
                self._gpu(cast(int, row["src"])),
                self._gpu(cast(int, row["dst"])),
            )
        elif section == "local_copy":
            row["gpu"] = self._gpu(cast(int, row["gpu"]))
        elif "gpus" in row:
            row["gpus"] = [self._gpu(index) for index in cast("list[int]", row["gpus"])]
        return row

    # -- plumbing
    # ---------------------------------------------------------------------------------------
    def _problem(self, text: str) -> None:
        self.m["problems"].append(text)
        self.on_update(self.m)

    def _stop_children(self) -> None:
        for child in self.children:
            if child.is_alive():
                child.terminate()
        for child in self.children:
            child.join(timeout=5)
            if child.is_alive():
                child.kill()
                child.join(timeout=5)
        self.children = []

    def _pump(
        self,
        queue: MessageSource,
        expect_done: int,
        on_row: Callable[[Message], None],
        on_hang: Callable[[Message | None], None],
    ) -> bool:
        """Read messages until `expect_done` done messages; False when the watchdog fired or a
        worker died."""
        done = 0
        current: Message | None = None
        last = time.monotonic()
        # before a worker's first word, start-up (spawn, import torch, NCCL init) gets STARTUP_S
        heard = False
        while done < expect_done:
            try:
                message = queue.get(timeout=0.2)
            except _queue.Empty:
                allowed = self.plan.timeout_s if heard else max(STARTUP_S, self.plan.timeout_s)
                if time.monotonic() - last > allowed:
                    on_hang(current)
                    return False
                if (
                    self.children
                    and not any(child.is_alive() for child in self.children)
                    and queue.empty()
                ):
                    codes = [child.exitcode for child in self.children]
                    self._problem(f"a bench worker ended without finishing (exit codes {codes})")
                    return False
                continue
            last, heard = time.monotonic(), True
            kind = message.get("kind")
            if kind == "start":
                current = message
                self.progress.step(message["item"], message.get("section", ""))
            elif kind == "row":
                on_row(message)
                self.progress.advance()
                self.on_update(self.m)
            elif kind == "devices":
                if self.gpu_map is not None:
                    self.index_map = self.gpu_map(message["bus_ids"])[: self.plan.world_size]
                    self.m["gpus"] = list(self.index_map)
            elif kind == "fatal":
                self._problem(message["reason"])
                return False
            elif kind == "done":
                done += 1
        return True

    # -- phases
    # -----------------------------------------------------------------------------------------
    def run(self) -> bool:
        """Both phases; True when everything planned was measured."""
        complete = True
        try:
            complete = self.p2p() and complete
            complete = self.collectives() and complete
        finally:
            self._stop_children()
            self.progress.close()
        self.m["complete"] = complete
        self.on_update(self.m)
        return complete

    def p2p(self) -> bool:
        from topoctl.probe.bench.worker import p2p_worker

        if self.plan.world_size < 2 and self.plan.backend != "nccl":
            return True
        remaining = [list(pair) for pair in self.plan.p2p_pairs]
        complete = True
        hung: list[list[int]] = []
        measured: set[tuple[int, int]] = (
            set()
        )  # in the workers' (torch) numbering, like `remaining`
        while True:
            queue = self.ctx.Queue()
            child = self.ctx.Process(
                target=p2p_worker,
                args=(self.plan.to_dict(), remaining, queue, list(hung)),
                daemon=True,
            )
            child.start()
            self.children = [child]

            def on_row(message: Message) -> None:
                row = self.translate(message["section"], message["row"])
                if message["section"] == "local_copy":
                    self.m["local_copy"].append(row)
                    return
                self.m["p2p"].append(row)
                measured.add((cast(int, message["row"]["src"]), cast(int, message["row"]["dst"])))

            hung_before = len(hung)

            def on_hang(current: Message | None) -> None:
                if current and current.get("pair"):
                    src, dst = current["pair"]
                    hung.append([src, dst])
                    self.m["p2p"].append(
                        {
                            "src": self._gpu(src),
                            "dst": self._gpu(dst),
                            "healthy": False,
                            "reason": f"timeout after {self.plan.timeout_s:g} s (the copy hung)",
                            "bandwidth_gbps": None,
                            "latency_us": None,
                        }
                    )
                    self.progress.advance()
                    self.on_update(self.m)
                else:
                    self._problem(
                        f"the P2P worker stopped answering for {self.plan.timeout_s:g} s "
                        f"({_item(current, 'starting up')})"
                    )

            finished = self._pump(queue, 1, on_row, on_hang)
            self._stop_children()
            if finished:
                return complete
            complete = False
            remaining = [
                pair for pair in remaining if tuple(pair) not in measured and pair not in hung
            ]
            if len(hung) == hung_before or not remaining:
                return False

    def decode_step(self, requests: list[Request]) -> bool:
        """The decode-step measurements in one worker (one GPU); rows replace the snapshot's rows of
        the same model, dtype and TP as they arrive."""
        from topoctl.probe.bench.decode_ops import merge_op_rows
        from topoctl.probe.bench.decode_step import merge_rows
        from topoctl.probe.bench.worker import decode_step_worker

        queue = self.ctx.Queue()
        child = self.ctx.Process(target=decode_step_worker, args=(requests, queue), daemon=True)
        child.start()
        self.children = [child]
        existing = list(self.m.get("decode_step") or [])
        existing_ops = list(self.m.get("decode_ops") or [])
        fresh: list[Row] = []
        fresh_ops: list[Row] = []

        def on_row(message: Message) -> None:
            if message.get("section") == "decode_ops":
                fresh_ops.append(message["row"])
                self.m["decode_ops"] = merge_op_rows(existing_ops, fresh_ops)
                return
            fresh.append(message["row"])
            self.m["decode_step"] = merge_rows(existing, fresh)
            if not str(message["row"].get("status", "")).startswith("ok"):
                self._problem(
                    f"decode step {message['row'].get('model')} TP {message['row'].get('tp')}: "
                    f"{message['row']['status']}"
                )

        def on_hang(current: Message | None) -> None:
            self._problem(
                f"timeout after {self.plan.timeout_s:g} s: {_item(current, 'starting up')} "
                "made no progress; the rows measured before it are kept"
            )

        try:
            return self._pump(queue, 1, on_row, on_hang)
        finally:
            self._stop_children()
            self.progress.close()

    def collectives(self) -> bool:
        from topoctl.probe.bench.worker import allreduce_worker

        queue = self.ctx.Queue()
        port = free_port()
        self.children = []
        for rank in range(self.plan.world_size):
            child = self.ctx.Process(
                target=allreduce_worker, args=(rank, self.plan.to_dict(), port, queue), daemon=True
            )
            child.start()
            self.children.append(child)

        def on_row(message: Message) -> None:
            self.m[message["section"]].append(self.translate(message["section"], message["row"]))

        def on_hang(current: Message | None) -> None:
            item = _item(current, "process group start-up")
            self._problem(
                f"timeout after {self.plan.timeout_s:g} s: {item} hung (a collective did not "
                "complete); "
                "the rows measured before it are kept"
            )

        finished = self._pump(queue, 1, on_row, on_hang)
        self._stop_children()
        return finished


def run_bench(
    plan: Plan,
    versions: dict[str, str | None],
    gpus: list[int],
    on_update: Callable[[dict[str, Any]], None],
    progress: Progress | None = None,
    gpu_map: Callable[[list[str | None]], list[int]] | None = None,
) -> Outcome:
    """Measure everything `plan` asks for. Ctrl-C ends the workers and returns what was measured."""
    measurements = empty_measurements(plan, versions, gpus)
    progress = progress or Progress(expected_items(plan))
    runner = Runner(plan, measurements, on_update, progress, gpu_map)
    interrupted = False
    try:
        runner.run()
    except KeyboardInterrupt:
        interrupted = True
        runner._stop_children()
        measurements["problems"].append(
            "interrupted (Ctrl-C): the rows measured before it are kept"
        )
        measurements["complete"] = False
        try:
            on_update(measurements)
        except (
            KeyboardInterrupt
        ):  # a second Ctrl-C: the last complete write stays (writes are atomic)
            pass
    return Outcome(measurements, list(measurements["problems"]), interrupted)


def expected_decode_rows(requests: list[Request]) -> int:
    """Rows the decode-step worker sends: a pass per token count, and a row per GEMM and token
    count on a GPU."""
    return sum(len(r.tokens) * (1 + (len(r.gemms) if r.on_gpu else 0)) for r in requests)


def run_decode_step(
    plan: Plan,
    requests: list[Request],
    measurements: dict[str, Any],
    on_update: Callable[[dict[str, Any]], None],
    progress: Progress | None = None,
) -> Outcome:
    """Measure the decode step of every request into `measurements` (the snapshot's, whose other
    rows are kept). Ctrl-C ends the worker and keeps what was measured."""
    measurements.setdefault("problems", [])
    progress = progress or Progress(expected_decode_rows(requests))
    runner = Runner(plan, measurements, on_update, progress)
    interrupted = False
    before = len(measurements["problems"])
    try:
        runner.decode_step(requests)
    except KeyboardInterrupt:
        interrupted = True
        runner._stop_children()
        measurements["problems"].append(
            "interrupted (Ctrl-C): the decode-step rows measured before it are kept"
        )
    try:
        on_update(measurements)
    except KeyboardInterrupt:
        pass
    return Outcome(measurements, list(measurements["problems"][before:]), interrupted)
