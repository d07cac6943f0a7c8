"""Record and replay of the probe's raw answers.

A live probe asks questions through `Session.ask(section, key, live)`. The session calls `live()`,
normalises the outcome to `{"ok": value}` or `{"err": reason}`, keeps it when recording, and hands
it back as an `Answer`. A replaying session never calls `live()`: it answers from the capture, and a
question the capture does not hold answers `NotRecorded`, which the probe treats like any failed
call. That keeps old captures readable as the probe learns new questions.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from topoctl import __version__
from topoctl.core.errors import TopoctlError, one_line

CAPTURE_VERSION = 1
SECTIONS = ("nvml", "files", "host", "software", "torch")


class ProbeFailure(Exception):
    """A question the hardware or OS could not answer; `reason` is short and stable (e.g.
    NotSupported)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Answer:
    """One answer: `ok` with a plain JSON value, or not ok with a reason."""

    ok: bool
    value: Any = None
    reason: str | None = None

    def get(self, default: Any = None) -> Any:
        return self.value if self.ok else default


class Session:
    """Asks live questions (optionally recording them) or replays a capture."""

    def __init__(self, replay: dict[str, Any] | None = None, record: bool = False) -> None:
        self.replaying = replay is not None
        self.recording = record and not self.replaying
        self._replay = replay or {}
        self.recorded: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
        self.meta: dict[str, Any] = {k: v for k, v in self._replay.items() if k not in SECTIONS}
        # Set to a dict to learn where a live probe spends its time (`topoctl probe --timings`):
        # question kind (section and function) -> [count, seconds], summed over threads.
        self.call_times: dict[str, list[float]] | None = None
        self._times_lock = threading.Lock()

    def note_time(self, kind: str, seconds: float) -> None:
        """Add one timed call of `kind` (`topoctl probe --timings`); safe from the probe's worker
        threads."""
        if self.call_times is None:
            return
        with self._times_lock:
            entry = self.call_times.setdefault(kind, [0, 0.0])
            entry[0] += 1
            entry[1] += seconds

    def ask(self, section: str, key: str, live: Callable[[], Any]) -> Answer:
        if self.replaying:
            outcome = self._replay.get(section, {}).get(key)
            if not isinstance(outcome, dict):
                return Answer(False, reason="NotRecorded")
        else:
            # NVML calls are timed where they are made (probe/nvml.py), so a handle lookup or a lock
            # wait inside `live` is not charged to the question that happened to trigger it.
            timed = self.call_times is not None and section != "nvml"
            started = time.perf_counter() if timed else 0.0
            try:
                outcome = {"ok": live()}
            except ProbeFailure as failure:
                outcome = {"err": failure.reason}
            except Exception as exc:  # a probe question must never take the CLI down
                outcome = {"err": f"{type(exc).__name__}: {str(exc)[:200]}"}
            if self.recording:
                with (
                    self._times_lock
                ):  # a record may be written while a timed-out probe's threads still run
                    self.recorded[section][key] = outcome
            if timed:
                self.note_time(
                    f"{section} {key.split('|')[0].split(':')[0]}", time.perf_counter() - started
                )
        if "err" in outcome:
            return Answer(False, reason=str(outcome["err"]))
        return Answer(True, value=outcome.get("ok"))

    def capture_document(self, description: str = "") -> dict[str, Any]:
        """The recorded answers as a capture document (see docs/architecture.md, Capture format)."""
        document: dict[str, Any] = {
            "capture_version": CAPTURE_VERSION,
            "topoctl_version": __version__,
            "recorded_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            "synthetic": False,
            "description": description,
        }
        with self._times_lock:
            for section in SECTIONS:
                document[section] = dict(sorted(self.recorded[section].items()))
        return document


def _capture_path(path: str) -> str:
    """A folder means its capture.json; a bare name that is no file here means the built-in capture
    of that name (the reference systems, and `no-gpu`, shipped in the package), so that an installed
    topoctl replays them without a clone of the repository."""
    import os

    if os.path.isdir(path):
        return os.path.join(path, "capture.json")
    if os.path.exists(path) or "/" in path or os.sep in path or path.startswith("."):
        return path
    from topoctl.snapshot.catalogue import builtin_capture

    return builtin_capture(path) or path


def load_capture(path: str) -> dict[str, Any]:
    """Read a capture file (JSON) written by `topoctl probe --record`, or a fixture folder holding
    capture.json.

    Errors name the JSON parser's position, never a line or a value of the file.
    """
    hint = (
        "record one with `topoctl probe --record FILE`, or name a built-in capture (topoctl "
        "recommend --list-systems)"
    )
    path = _capture_path(path)
    from topoctl.core import safe_read as limits

    try:
        raw = limits.read_file(path, limits.MAX_SNAPSHOT_BYTES)
    except FileNotFoundError:
        raise TopoctlError(f"no such capture: {path}", hint=hint) from None
    except OSError as exc:
        raise TopoctlError(
            f"cannot read capture {path}: {exc.strerror or type(exc).__name__}",
            hint="check the path and its permissions",
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TopoctlError(
            f"{path} is not UTF-8 text", hint="pass the file written by `topoctl probe --record`"
        ) from None
    if not text.strip():
        raise TopoctlError(f"{path}: not a valid capture (the file is empty)", hint=hint)
    try:
        data = limits.loads_json(text, path)
    except ValueError as exc:
        where = (
            f" at line {exc.lineno}, column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise TopoctlError(
            f"{path}: not a valid capture (JSON error: {getattr(exc, 'msg', 'malformed')}{where})",
            hint=hint,
        ) from None
    if not isinstance(data, dict):
        kind = {
            list: "a JSON list",
            str: "a JSON string",
            bool: "a JSON boolean",
            type(None): "JSON null",
        }.get(type(data), "a JSON number")
        raise TopoctlError(f"{path}: not a topoctl capture ({kind})", hint=hint)
    version = data.get("capture_version")
    if version != CAPTURE_VERSION or isinstance(version, bool):
        found = (
            "missing"
            if version is None
            else (str(version) if isinstance(version, int) else "not a number")
        )
        raise TopoctlError(
            f"{path}: not a topoctl capture (capture_version {found}, expected {CAPTURE_VERSION})",
            hint=hint,
        )
    for section in SECTIONS:
        if not isinstance(data.get(section, {}), dict):
            raise TopoctlError(
                f"{path}: section {section!r} must be a mapping", hint="re-record the capture"
            )
    check_answers(data, path)
    return data


# ------------------------------------------------------------------------------------ typed answers
# The type of the value each NVML question answers with, as probe/nvml.py records it: a status or a
# count is an integer (never a bool: JSON's false would read as NVML's 0, "OK", and a box without
# P2P would pass), a name a string. A recorded answer of another type is exit 2 naming it, never a
# value the probe reads.
_INT, _TEXT, _PAIR, _NONE, _FABRIC = (
    "an integer",
    "a string",
    "a list of two integers",
    "null",
    "a fabric record",
)
NVML_ANSWER_TYPES = {
    **dict.fromkeys(
        (
            "nvmlSystemGetCudaDriverVersion",
            "nvmlDeviceGetCount",
            "nvmlDeviceGetArchitecture",
            "nvmlDeviceGetMemoryInfo",
            "nvmlDeviceGetVirtualizationMode",
            "nvmlDeviceGetCurrPcieLinkGeneration",
            "nvmlDeviceGetMaxPcieLinkGeneration",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
            "nvmlDeviceGetCurrPcieLinkWidth",
            "nvmlDeviceGetMaxPcieLinkWidth",
            "nvmlDeviceGetNvLinkState",
            "nvmlDeviceGetNvLinkVersion",
            "nvmlDeviceGetNvLinkRemoteDeviceType",
            "nvmlDeviceGetP2PStatus",
            "nvmlDeviceGetTopologyCommonAncestor",
            "nvmlDeviceGetPcieReplayCounter",
        ),
        _INT,
    ),
    **dict.fromkeys(
        (
            "nvmlSystemGetDriverVersion",
            "nvmlSystemGetNVMLVersion",
            "nvmlDeviceGetName",
            "nvmlDeviceGetUUID",
            "nvmlDeviceGetPciInfo",
            "nvmlDeviceGetNvLinkRemotePciInfo",
        ),
        _TEXT,
    ),
    **dict.fromkeys(("nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetMigMode"), _PAIR),
    "nvmlInit": _NONE,
    "nvmlDeviceGetGpuFabricInfoV": _FABRIC,
}
FILE_ANSWER_TYPES = {"read": _TEXT, "realpath": _TEXT}
_MAX_ANSWER_INT = 2**64


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_ANSWER_INT


def _fits(kind: str, value: object) -> bool:
    if kind == _INT:
        return _is_count(value)
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _PAIR:
        return (
            isinstance(value, list) and len(value) == 2 and all(_is_count(item) for item in value)
        )
    if kind == _NONE:
        return value is None
    if not isinstance(value, dict):  # the fabric record probe/nvml.py writes
        return False
    uuid = value.get("cluster_uuid")
    return all(_is_count(value.get(key)) for key in ("state", "status", "clique_id")) and (
        uuid is None or isinstance(uuid, str)
    )


def _answer_kind(section: str, key: str) -> str | None:
    if section == "nvml":
        return NVML_ANSWER_TYPES.get(key.split("|")[0])
    if section == "files":
        return FILE_ANSWER_TYPES.get(key.split(":")[0])
    return None


def check_answers(data: dict[str, Any], path: str) -> None:
    """Every recorded answer is `{"ok": value}` or `{"err": "reason"}`, and an NVML or file answer's
    value has the type that question answers with; anything else is a TopoctlError (exit 2) naming
    the answer."""
    hint = (
        "re-record the capture with `topoctl probe --record FILE` (a hand-edited answer has "
        "the wrong type)"
    )
    for section in SECTIONS:
        for key, outcome in data.get(section, {}).items():
            where = f"{path}: {section}[{one_line(key, 120)!r}]"
            if (
                not isinstance(outcome, dict)
                or len(outcome) != 1
                or not ({"ok", "err"} & set(outcome))
            ):
                raise TopoctlError(
                    f'{where} must be {{"ok": value}} or {{"err": reason}}', hint=hint
                )
            if "err" in outcome:
                if not isinstance(outcome["err"], str):
                    raise TopoctlError(f"{where}.err must be a string reason", hint=hint)
                continue
            kind = _answer_kind(section, key)
            if kind is not None and not _fits(kind, outcome["ok"]):
                shown = one_line(json.dumps(outcome["ok"]), 40)
                raise TopoctlError(f"{where}.ok must be {kind}, not {shown}", hint=hint)
