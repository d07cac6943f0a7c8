"""Record and replay of the probe's raw answers.

A live probe asks questions through `Session.ask(section, key, live)`. The session calls `live()`,
normalises the outcome to `{"ok": value}` or `{"err": reason}`, keeps it when recording, and hands it
back as an `Answer`. A replaying session never calls `live()`: it answers from the capture, and a question
the capture does not hold answers `NotRecorded`, which the probe treats like any failed call. That keeps
old captures readable as the probe learns new questions.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Callable

from topoctl import __version__
from topoctl.errors import TopoctlError

CAPTURE_VERSION = 1
SECTIONS = ("nvml", "files", "host", "software", "torch")


class ProbeFailure(Exception):
    """A question the hardware or OS could not answer; `reason` is short and stable (e.g. NotSupported)."""

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

    def ask(self, section: str, key: str, live: Callable[[], Any]) -> Answer:
        if self.replaying:
            outcome = self._replay.get(section, {}).get(key)
            if not isinstance(outcome, dict):
                return Answer(False, reason="NotRecorded")
        else:
            try:
                outcome = {"ok": live()}
            except ProbeFailure as failure:
                outcome = {"err": failure.reason}
            except Exception as exc:  # a probe question must never take the CLI down
                outcome = {"err": f"{type(exc).__name__}: {str(exc)[:200]}"}
            if self.recording:
                self.recorded[section][key] = outcome
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
        for section in SECTIONS:
            document[section] = dict(sorted(self.recorded[section].items()))
        return document


def load_capture(path: str) -> dict[str, Any]:
    """Read a capture file (JSON) written by `topoctl probe --record`, or a fixture folder holding capture.json."""
    import os

    if os.path.isdir(path):
        path = os.path.join(path, "capture.json")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise TopoctlError(f"no such capture: {path}", hint="record one with `topoctl probe --record FILE`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopoctlError(f"cannot read capture {path}: {exc}", hint="check the path and its permissions") from None
    except ValueError as exc:
        raise TopoctlError(f"{path}: not a valid capture (JSON error: {exc})",
                           hint="record one with `topoctl probe --record FILE`") from None
    if not isinstance(data, dict) or data.get("capture_version") != CAPTURE_VERSION:
        found = data.get("capture_version") if isinstance(data, dict) else type(data).__name__
        raise TopoctlError(f"{path}: not a topoctl capture (capture_version {found!r}, expected {CAPTURE_VERSION})",
                           hint="record one with `topoctl probe --record FILE`")
    for section in SECTIONS:
        if not isinstance(data.get(section, {}), dict):
            raise TopoctlError(f"{path}: section {section!r} must be a mapping", hint="re-record the capture")
    return data
