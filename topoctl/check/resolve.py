"""The resolve stage of check, versions and model: which SGLang (and ai-dynamo) release reads each
launch, with the notes said on stderr when one was assumed, and which model a launch serves (for the
memory fit). The nodes a launch spans are resolve_nodes.py, the GPUs one node runs on
resolve_gpus.py.

A launch's argv means something only for a release (its flags, its defaults): the version is
resolved before the parse stage reads the argv with it (topoctl/check/pipeline.py runs them in that
order).

Which version: --sglang-version; else an image tag (a container runs its image's SGLang, not the
host's; a moving tag such as :latest is judged as the newest release with data, and said so), or the
SGLang a Dynamo image's ai-dynamo release pins; else the target's installed SGLang;
else the pin of the ai-dynamo release assumed; else the newest release with flag data. A launch.env
names its own (TOPOCTL_SGLANG_VERSION).

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from topoctl.core.errors import TopoctlError
from topoctl.deploy.launchers import (
    image_dynamo_version,
    image_sglang_version,
    image_tag_build,
    moving_image_tag,
)

if TYPE_CHECKING:
    from topoctl.deploy.launcher_args import DynamoTable
    from topoctl.deploy.launchers import Launch
    from topoctl.deploy.sglang_launch import FlagsFor, ParsedLaunch
    from topoctl.rules.sglang.flags import FlagSet


MOVING_SOURCE = "the moving tag"  # Versions.source of a launch judged by a moving image tag


@dataclass
class Versions:
    """The releases that read one launch: SGLang's flag data, why that one, and the ai-dynamo option
    table (for a `python -m dynamo.sglang` launch; else None)."""

    flags: FlagSet
    source: str
    dynamo: DynamoTable | None = None


class VersionChooser:
    """Which SGLang (and Dynamo) version reads each launch, and the stderr notes saying when one was
    assumed.

    `load_flags(version or None)` gives a release's flag data (None: the newest), `normalise(text)`
    a version as written (an image tag's, a launch.env's); the command gives both, so that a version
    without data is one usage error worded as everywhere else in topoctl."""

    def __init__(
        self,
        installed: str | None,
        installed_source: str,
        dynamo_version: str | None,
        load_flags: Callable[[str | None], FlagSet],
        normalise: Callable[[str], str | None],
    ) -> None:
        self.installed = installed
        self.installed_source = installed_source
        self.dynamo_version = dynamo_version
        self.load_flags = load_flags
        self.normalise = normalise
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def env_file_flags(self, path: str) -> FlagsFor:
        """The flag data a launch.env is read with, chosen from its own TOPOCTL_SGLANG_VERSION when
        nothing else names one (topoctl/deploy/sglang_launch.py parse_env_file calls it with the
        file's metadata)."""

        def flags_for(metadata: dict[str, str], lines: dict[str, str] | None = None) -> FlagSet:
            if self.installed:
                return self.load_flags(self.installed)
            made_for = metadata.get("TOPOCTL_SGLANG_VERSION")
            if not made_for:
                flags = self.load_flags(None)
                self.note(
                    f"{path}: SGLang {flags.version} assumed (no --sglang-version, no SGLang on "
                    "the target, "
                    "no TOPOCTL_SGLANG_VERSION in the file): the newest with flag data"
                )
                return flags
            try:
                return self.load_flags(self.normalise(made_for))
            except TopoctlError as error:
                where = (lines or {}).get("TOPOCTL_SGLANG_VERSION")
                raise TopoctlError(
                    (f"{where}: " if where else "") + f"TOPOCTL_SGLANG_VERSION: {error.message}",
                    hint=error.hint,
                ) from None

        return flags_for

    def _dynamo(self, launch: Launch, where: str) -> tuple[DynamoTable, str]:
        from topoctl.deploy.launcher_args import load_dynamo

        if self.dynamo_version:
            return load_dynamo(self.dynamo_version), "--dynamo-version"
        tagged = image_dynamo_version(launch.image)
        if tagged:
            table = load_dynamo(tagged)
            self.note(
                f"{where}: ai-dynamo {tagged} from the image tag {launch.image}"
                + (f" ({table.note})" if table.note else "")
            )
            return table, f"the image tag {launch.image}"
        table = load_dynamo(None)
        self.note(
            f"{where}: ai-dynamo {table.version} assumed (no --dynamo-version and no Dynamo "
            "image tag): "
            "the newest with option data"
        )
        return table, "assumed"

    def versions(self, launch: Launch, origin: str) -> Versions:
        """The releases that read one launch found in a file (or given after `--`)."""

        where = launch.where or origin
        dynamo, dynamo_from_image = None, False
        if launch.launcher == "dynamo.sglang":
            dynamo, dynamo_source = self._dynamo(launch, where)
            dynamo_from_image = dynamo_source.startswith("the image tag")
        tagged = image_sglang_version(launch.image)
        if self.installed is not None and self.installed_source == "--sglang-version":
            return Versions(self.load_flags(self.installed), self.installed_source, dynamo)
        # A container runs the SGLang of its image, not the host's: an image tag (or the pin of a
        # Dynamo image) names the version that will read the flags, ahead of what the target has
        # installed.
        if tagged:
            version = self.normalise(tagged)
            build = image_tag_build(launch.image)
            self.note(
                f"{where}: SGLang {version} from the image tag {launch.image}"
                + (
                    f" (the target has {self.installed} installed; the container runs its image's)"
                    if self.installed and self.installed != version
                    else ""
                )
                + (f"; {build} names a build of it: the image may differ" if build else "")
            )
            return Versions(self.load_flags(version), f"the image tag {launch.image}", dynamo)
        moving = moving_image_tag(launch.image)
        if moving:  # the image runs whatever release the tag points at today: the newest known
            # (the parse stage says so, sglang-floating-image-tag)
            return Versions(self.load_flags(None), f"{MOVING_SOURCE} :{moving}", dynamo)
        if dynamo is not None and dynamo.sglang_pin and (dynamo_from_image or not self.installed):
            version = self.normalise(dynamo.sglang_pin)
            self.note(
                f"{where}: SGLang {version}, the version ai-dynamo {dynamo.version} pins (its "
                "wheel's "
                "Requires-Dist, extra sglang)"
                + (", which the image runs" if dynamo_from_image else "")
            )
            return Versions(
                self.load_flags(version), f"pinned by ai-dynamo {dynamo.version}", dynamo
            )
        if self.installed:
            return Versions(self.load_flags(self.installed), self.installed_source, dynamo)
        flags = self.load_flags(None)
        self.note(
            f"{where}: SGLang {flags.version} assumed (no --sglang-version, no SGLang on the "
            "target, no "
            "version in an image tag): the newest with flag data"
        )
        return Versions(flags, "assumed", dynamo)


def launch_model(
    parsed: ParsedLaunch, named: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, str]:
    """(model profile, where it came from) for the launch, or (None, "")."""
    if named is not None:
        return named, "--model"
    path = parsed.settings.get("model_path")
    if not isinstance(path, str) or not path or "$" in path:
        return None, ""
    from topoctl.autoconf import models

    if os.path.isdir(path) and os.path.isfile(
        os.path.join(models.resolve_model_dir(path), "config.json")
    ):
        try:
            return models.from_model_dir(path), f"{path}/config.json"
        except TopoctlError:
            return None, ""
    wanted = path.strip("/").lower()
    for name, entry in models.builtin_models().items():
        source = str(entry.get("source") or "").lower()
        if f"huggingface.co/{wanted}/" in source:
            return models.profile(name), f"the built-in profile {name} (--model-path {path})"
    return None, ""
