#!/usr/bin/env python3
"""Extract where each SGLang release turns FlashInfer allreduce fusion on by itself, from the unpacked wheels,
and write it as rules (rules/knowledge/sglang_fusion_auto_on.yaml).

    python scripts/extract_sglang_fusion_auto_on.py SRC_ROOT [-o rules/knowledge/sglang_fusion_auto_on.yaml]

SRC_ROOT holds one folder per release (SRC_ROOT/0.5.5/sglang/..., an unpacked wheel each; the layout
scripts/grep_releases.py reads). SGLang turns the fusion on in its post-init for the models it has
fusion code for: `enable_flashinfer_allreduce_fusion = True` under model-specific branches
(0.5.5-0.5.13, server_args.py), `flashinfer_allreduce_fusion_backend = "auto"` (0.5.14), `return
{"flashinfer_allreduce_fusion_backend": ...}` of the `_flashinfer_allreduce_fusion_auto_enable` pass
(0.5.15+, arg_groups/overrides.py). Every such site whose enclosing `if` tests name the model
architecture is an auto-on; its tests (read with `ast`, never imported) are translated one by one
into rule conditions:

  model_arch in [...] / in NAME        request.model.architecture in the list (NAME: the module's set or list)
  is_sm90_supported() ... or ...       gpu.sm_majors, the majors read from each predicate's own definition
  get_platform().is_sm90 ...           (srt/utils/common.py; get_platform() maps is_X to is_X_supported)
  tp_size > 1                          request.tp_size > 1
  not enable_dp_attention              no --enable-dp-attention (read before SGLang turns it off at --dp-size 1)
  not attn_dp_enabled_of(view)         no attention DP (request.attention_dp_size 1; 0.5.22+)
  nnodes == 1 [or is_sm100...]         request.nnodes 1 [or those majors]
  not is_h20_device                    GPU 0's name not an H20 ("H20" in it and not "H200", as SGLang tests it)
  moe_a2a_backend == 'none'            launch.moe_a2a_backend none
  not prefer_custom_dsv41              not model_type deepseek_v41 (SGLang keeps custom allreduce for it at TP 4
                                       on Blackwell; topoctl does not claim the fusion for that model type at all)

and these are taken as the launch topoctl judges has them: the fusion left out of the launch (`not
enable_flashinfer_allreduce_fusion`, `..._backend is None`: the rule's effect is a `defaults`, which
only applies to a launch that does not name the setting), `is_cuda()`, `attn_cp_size <= 1` (no
context parallel). A test that is not in this table stops the extraction with its text and place: a
new gate in a new release is read and added here, never guessed. MiMo-V2's cutedsl auto-on (0.5.23)
has its own conditions (dtype, TP sizes) and is left out; `not is_deepseek_nsa(hf_config)`
(0.5.5-0.5.6.post2, DeepSeek V3.2's sparse attention) is noted in the rule's evidence and not
tested.

Consecutive releases whose auto-on sites translate to the same conditions become one rule, scoped
`>=first,<next`, with the file:line of its first and last release and of the release where it
changes. The rules are info rules with `effect.defaults: {flashinfer_allreduce_fusion: true}`: check
and recommend then judge and price a launch that leaves the fusion out as SGLang runs it, and a rule
that says SGLang clears the fusion (`implies`, deterministic inference) still wins. The output is
deterministic; after regenerating, run scripts/compile_knowledge.py and the oracle comparison
(`python scripts/sglang_oracle_compare.py --settings`).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grep_releases import release_folders, releases, write_or_print  # noqa: E402  (shared by the extractors)

FILES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/overrides.py")
UTILS = "sglang/srt/utils/common.py"
OUTPUT = "rules/knowledge/sglang_fusion_auto_on.yaml"
# Tests of the auto-on that hold for every launch topoctl judges with such a rule (see the module
# docstring).
TAKEN_AS_GIVEN = (
    "not enable_flashinfer_allreduce_fusion",
    "flashinfer_allreduce_fusion_backend is None",
    "is_cuda()",
    "attn_cp_size <= 1",
)
NOTED_ONLY = ("not is_deepseek_nsa(hf_config)",)
MIMO = ("MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM")


class GateError(Exception):
    """A test of an auto-on site that the table does not translate."""


@dataclass
class Gate:
    """One auto-on site of one release, translated."""

    at: str  # file:line of the assignment or return
    architectures: list[str]
    conditions: list[dict[str, Any]] = field(default_factory=list)
    noted: list[str] = field(default_factory=list)

    def key(self) -> Any:
        return (tuple(self.architectures), repr(self.conditions), tuple(self.noted))


# ------------------------------------------------------------------------------------------ reading
# the source
def _is_site(node: ast.AST) -> bool:
    """An assignment or return that turns the fusion on."""

    def on(value: ast.AST | None) -> bool:
        return value is not None and not (
            isinstance(value, ast.Constant) and value.value in (None, False)
        )

    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Attribute)
    ):
        name = node.targets[0].attr
        if name == "enable_flashinfer_allreduce_fusion":
            return isinstance(node.value, ast.Constant) and node.value.value is True
        return name == "flashinfer_allreduce_fusion_backend" and on(node.value)
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
        return any(
            isinstance(k, ast.Constant)
            and k.value == "flashinfer_allreduce_fusion_backend"
            and on(v)
            for k, v in zip(node.value.keys, node.value.values, strict=True)
        )
    return False


def _sites(tree: ast.Module) -> list[tuple[ast.AST, list[tuple[ast.expr, bool]], ast.AST | None]]:
    """(site, enclosing if tests with their branch, enclosing function) of every site in the module."""
    found: list[tuple[ast.AST, list[tuple[ast.expr, bool]], ast.AST | None]] = []

    def walk(node: ast.AST, chain: list[tuple[ast.expr, bool]], function: ast.AST | None) -> None:
        for name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                inner = (
                    chain + [(node.test, name == "body")]
                    if isinstance(node, ast.If) and name in ("body", "orelse")
                    else chain
                )
                if _is_site(child):
                    found.append((child, inner, function))
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    walk(child, [], child)
                else:
                    walk(child, inner, function)

    walk(tree, [], None)
    return found


def _module_strings(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a list, tuple, set or frozenset({...}) of string literals."""
    out: dict[str, list[str]] = {}
    for stmt in tree.body:
        target = (
            stmt.targets[0]
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            else stmt.target
            if isinstance(stmt, ast.AnnAssign)
            else None
        )
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if (
            isinstance(value, ast.Call)
            and getattr(value.func, "id", "") in ("frozenset", "set", "tuple", "list")
            and len(value.args) == 1
        ):
            value = value.args[0]
        if isinstance(target, ast.Name) and isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            items = [
                e.value
                for e in value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
            if len(items) == len(value.elts):
                out[target.id] = items
    return out


PREDICATES = (
    "is_sm90_supported",
    "is_sm100_supported",
    "is_blackwell_supported",
    "is_sm120_supported",
)


def sm_majors(release_dir: str) -> dict[str, list[int]]:
    """{predicate: majors} from the release's own definitions in srt/utils/common.py: a function
    testing `get_device_capability(device)[0] == 10` / `in [10, 12]` (0.5.5-0.5.6.post2), or a name
    bound to `partial(_check_cuda_device_version, device_capability_majors=[10, 12], ...)` (0.5.7+).
    """
    tree = ast.parse(open(os.path.join(release_dir, UTILS), encoding="utf-8").read())
    out: dict[str, list[int]] = {}
    composed: dict[
        str, list[str]
    ] = {}  # 0.5.6.post2: is_blackwell_supported = is_sm100 or is_sm120
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in PREDICATES:
            composed[stmt.name] = [
                node.func.id
                for node in ast.walk(stmt)
                if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in PREDICATES
            ]
            for node in ast.walk(stmt):
                if (
                    isinstance(node, ast.Compare)
                    and "get_device_capability" in ast.unparse(node.left)
                    and ast.unparse(node.left).endswith("[0]")
                ):
                    operand = ast.literal_eval(node.comparators[0])
                    out[stmt.name] = [operand] if isinstance(operand, int) else sorted(operand)
        elif isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name) and t.id in PREDICATES]
            majors = [
                ast.literal_eval(k.value)
                for node in ast.walk(stmt.value)
                if isinstance(node, ast.Call)
                for k in node.keywords
                if k.arg == "device_capability_majors"
            ]
            for name in names:
                if majors:
                    out[name] = sorted(majors[0])
    for name, parts in composed.items():
        if name not in out and parts and all(part in out for part in parts):
            out[name] = sorted({major for part in parts for major in out[part]})
    return out


# --------------------------------------------------------------------------------------------
# translating
def _normal(text: str) -> str:
    text = re.sub(r"\b(self|view|cfg|server_args)\.", "", text)
    return re.sub(r"get_platform\(\)\.is_(\w+)", r"is_\1_supported()", text)


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


def _majors_of(text: str, majors: dict[str, list[int]]) -> list[int] | None:
    """The SM majors an `is_X_supported() or ...` test accepts, or None when the text is not such a
    test."""
    names = re.fullmatch(r"\(?\s*(is_\w+_supported\(\)(\s+or\s+is_\w+_supported\(\))*)\s*\)?", text)
    if not names:
        return None
    found: list[int] = []
    for name in re.findall(r"(is_\w+_supported)\(\)", names.group(1)):
        if name not in majors:
            raise GateError(f"no definition of {name}() with a compute capability test in {UTILS}")
        found.extend(majors[name])
    return sorted(set(found))


NO_ATTENTION_DP = {"fact": "request.attention_dp_size", "le": 1}
# `not enable_dp_attention` is read before SGLang turns DP attention off at --dp-size 1: the
# model-specific adjustments (where the auto-on is) run before the data-parallelism handling in
# __post_init__ (server_args.py, 0.5.5-0.5.18) and in the pipeline (arg_groups/pipeline.py,
# 0.5.19-0.5.21), so the flag as written decides.
NO_DP_ATTENTION_FLAG = {"not": {"fact": "launch.dp_attention", "eq": True}}
ONE_NODE = {"fact": "request.nnodes", "eq": 1}
NOT_H20 = {
    "not": {
        "all": [
            {"fact": "gpu.name", "glob": "*H20*"},
            {"not": {"fact": "gpu.name", "glob": "*H200*"}},
        ]
    }
}
FIXED: dict[str, dict[str, Any]] = {
    "tp_size > 1": {"fact": "request.tp_size", "gt": 1},
    "not enable_dp_attention": NO_DP_ATTENTION_FLAG,
    "not attn_dp_enabled_of(view)": NO_ATTENTION_DP,
    "nnodes == 1": ONE_NODE,
    "not is_h20_device": NOT_H20,
    # a launch that leaves the backend out has none (the launch fact is unset then, so not `eq:
    # none`)
    "moe_a2a_backend == 'none'": {"not": {"fact": "launch.moe_a2a_backend", "ne": "none"}},
    "not prefer_custom_dsv41": {"not": {"fact": "request.model.model_type", "eq": "deepseek_v41"}},
}


def _architectures(text: str, strings: dict[str, list[str]]) -> list[str] | None:
    match = re.fullmatch(r"\(?(?:is_mimo or )?model_arch in (.+?)\)?", text) or re.fullmatch(
        r"model_arch == '([^']+)'", text
    )
    if not match:
        return None
    operand = match.group(1)
    if operand in strings:
        return sorted(strings[operand])
    try:
        value = ast.literal_eval(operand)
    except (ValueError, SyntaxError) as error:
        raise GateError(
            f"architecture list {operand!r} is neither a literal nor a module-level list"
        ) from error
    return sorted([value] if isinstance(value, str) else value)


def translate(
    site: ast.AST,
    chain: list[tuple[ast.expr, bool]],
    strings: dict[str, list[str]],
    majors: dict[str, list[int]],
    at: str,
) -> Gate | None:
    """The site as conditions, or None when no test names the architecture (the old flag's spelling,
    not an auto-on)."""
    architectures: list[str] | None = None
    conditions: list[dict[str, Any]] = []
    noted: list[str] = []
    negated: list[str] = []
    if not any(branch and "model_arch" in ast.unparse(test) for test, branch in chain):
        return None
    for test, branch in chain:
        if not branch:  # an elif/else: the tests of the branch not taken, kept to check below
            negated.append(_normal(ast.unparse(test)))
            continue
        for part in _conjuncts(test):
            text = _normal(ast.unparse(part))
            listed = _architectures(text, strings)
            if listed is not None:
                architectures = sorted(set(architectures or listed) & set(listed))
                continue
            sm = _majors_of(text, majors)
            one_node_or = re.fullmatch(r"nnodes == 1 or (.+)", text)
            if sm is not None:
                conditions.append({"fact": "gpu.sm_majors", "any_in": sm})
            elif one_node_or and _majors_of(one_node_or.group(1), majors) is not None:
                conditions.append(
                    {
                        "any": [
                            ONE_NODE,
                            {
                                "fact": "gpu.sm_majors",
                                "any_in": _majors_of(one_node_or.group(1), majors),
                            },
                        ]
                    }
                )
            elif text in FIXED:
                conditions.append(dict(FIXED[text]))
            elif text in TAKEN_AS_GIVEN:
                continue
            elif text in NOTED_ONLY:
                noted.append(text)
            else:
                raise GateError(f"{at}: test {text!r} is not in the translation table")
    if architectures is None:
        return None
    architectures = [name for name in architectures if name not in MIMO]
    for text in negated:  # an earlier branch for other architectures only: nothing to add
        first_test = _conjuncts(ast.parse(text, mode="eval").body)[0]
        listed = _architectures(_normal(ast.unparse(first_test)), strings)
        if listed is None or set(listed) & set(architectures):
            raise GateError(
                f"{at}: the branch not taken ({text!r}) is not about other architectures"
            )
    return Gate(at, architectures, conditions, noted)


def release_gates(release_dir: str) -> list[Gate]:
    """Every auto-on of one release, in file order."""
    majors = sm_majors(release_dir)
    gates: list[Gate] = []
    for relative in FILES:
        path = os.path.join(release_dir, relative)
        if not os.path.isfile(path):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        strings = _module_strings(tree)
        for site, chain, _function in _sites(tree):
            gate = translate(
                site, chain, strings, majors, f"{relative}:{getattr(site, 'lineno', 0)}"
            )
            if gate is not None:
                gates.append(gate)
    return gates


# ------------------------------------------------------------------------------------------------
# rules
def groups(root: str) -> list[dict[str, Any]]:
    """Runs of consecutive releases with the same auto-on gates: {first, last, gates, last_gates}."""
    out: list[dict[str, Any]] = []
    for release in releases(root):
        if not os.path.isfile(os.path.join(root, release, UTILS)):
            continue
        gates = release_gates(os.path.join(root, release))
        key = [gate.key() for gate in gates]
        if out and out[-1]["key"] == key:
            out[-1].update(last=release, last_gates=gates)
        else:
            out.append(
                {"key": key, "first": release, "last": release, "gates": gates, "last_gates": gates}
            )
    return out


def _when(first: str, following: str | None, gates: list[Gate]) -> dict[str, Any]:
    version = f">={first},<{following}" if following else f">={first}"
    sites = [
        {
            "all": [
                {"fact": "request.model.architecture", "in": gate.architectures},
                *gate.conditions,
            ]
        }
        for gate in gates
    ]
    return {
        "all": [
            {"fact": "software.sglang", "version": version},
            {"not": {"fact": "launch.flashinfer_allreduce_fusion", "set": True}},
            sites[0] if len(sites) == 1 else {"any": sites},
        ]
    }


def _majors_in(conditions: list[dict[str, Any]]) -> list[int]:
    for condition in conditions:
        if condition.get("fact") == "gpu.sm_majors":
            return list(condition["any_in"])
    return [9]


def _tests(release: str, gates: list[Gate]) -> list[dict[str, Any]]:
    gate = gates[0]
    sm = _majors_in(gate.conditions)[0] * 10
    arch = gate.architectures[0]
    snapshot: dict[str, Any] = {
        "gpus": [{"index": 0, "sm": sm, "name": "NVIDIA test GPU"}],
        "software": {"sglang": release},
    }
    request: dict[str, Any] = {"tp_size": 2, "model": {"architecture": arch}}

    def case(name: str, expect: str, **changes: Any) -> dict[str, Any]:
        return {
            "name": name,
            "expect": expect,
            "snapshot": snapshot,
            "request": {**request, **changes},
        }

    tests = [
        case(f"{arch} at TP 2 on SM{sm}, nothing said about the fusion", "fire"),
        case(
            "the launch names the fusion itself",
            "silent",
            launch={"flashinfer_allreduce_fusion": False},
        ),
        case(
            "an architecture without fusion code",
            "silent",
            model={"architecture": "LlamaForCausalLM"},
        ),
    ]
    if NO_ATTENTION_DP in gate.conditions or NO_DP_ATTENTION_FLAG in gate.conditions:
        tests.append(
            case(
                "attention DP over the TP group",
                "silent",
                launch={"dp_attention": True, "dp_size": 2},
            )
        )
    if {"fact": "request.tp_size", "gt": 1} in gate.conditions:
        tests.append(case("TP 1", "silent", tp_size=1))
    return tests


def _describe(gates: list[Gate]) -> str:
    parts = []
    for gate in gates:
        tests = [_condition_text(condition) for condition in gate.conditions]
        parts.append(
            f"{', '.join(gate.architectures)}" + (f" when {'; '.join(tests)}" if tests else "")
        )
    return "; or ".join(parts)


def _condition_text(condition: dict[str, Any]) -> str:
    if condition.get("fact") == "gpu.sm_majors":
        return "SM major " + " or ".join(str(m) for m in condition["any_in"])
    if condition == NO_ATTENTION_DP:
        return "no attention DP"
    if condition == NO_DP_ATTENTION_FLAG:
        return "no --enable-dp-attention"
    if condition.get("fact") == "request.tp_size":
        return "TP > 1"
    if condition == ONE_NODE:
        return "one node"
    if condition == NOT_H20:
        return "not an H20"
    if condition.get("not", {}).get("fact") == "launch.moe_a2a_backend":
        return "no MoE all-to-all backend"
    if "any" in condition:
        return "one node or SM major " + " or ".join(str(m) for m in condition["any"][1]["any_in"])
    if "not" in condition and condition["not"].get("fact") == "request.model.model_type":
        return "not model_type deepseek_v41"
    return repr(condition)


def rule(group: dict[str, Any], following: dict[str, Any] | None, latest: str) -> dict[str, Any]:
    first, last, gates = group["first"], group["last"], group["gates"]
    releases_doc: dict[str, Any] = {
        "package": "sglang",
        "holds_from": {"release": first, "at": gates[0].at},
    }
    if last != first:
        releases_doc["last_holding"] = {"release": last, "at": group["last_gates"][0].at}
    if following is not None:
        where = following["gates"][0].at if following["gates"] else f"{FILES[-1]}: no auto-on"
        releases_doc["stops_at"] = {
            "release": following["first"],
            "at": where,
            "note": "the auto-on gate changes (next rule)",
        }
    releases_doc["read_through"] = latest
    scope = f"SGLang {first}" + (f"-{last}" if last != first else "")
    noted = sorted({text for gate in gates for text in gate.noted})
    return {
        "id": f"sglang-fusion-auto-on-{first}",
        "title": f"SGLang {first}"
        + (f"-{last}" if last != first else "")
        + " turns FlashInfer allreduce fusion on by itself for the models it has fusion code for",
        "severity": "info",
        "scope": f"{scope}: {_describe(gates)}; a launch that leaves the fusion out",
        "tags": ["allreduce", "flashinfer", "sglang-sets"],
        "when": _when(first, following["first"] if following else None, gates),
        "effect": {"defaults": {"flashinfer_allreduce_fusion": True}},
        "message": (
            "SGLang turns FlashInfer allreduce fusion on in its post-init for this model on this "
            "machine (the launch does not name it): the fused allreduce + residual + RMSNorm "
            "kernels run, not only the allreduce path the launch chose."
        ),
        "remediation": "Nothing to do; --enforce-disable-flashinfer-allreduce-fusion keeps it off.",
        "evidence": [
            {
                "source": f"upstream:sglang {scope.split(' ', 1)[1]}",
                "reference": "auto-on sites read by scripts/extract_sglang_fusion_auto_on.py: "
                + "; ".join(
                    f"{gate.at} ({len(gate.architectures)} architectures)" for gate in gates
                )
                + (f"; not tested: {', '.join(noted)}" if noted else ""),
                "level": "upstream-reported",
                "summary": f"In {scope} the auto-on holds for {_describe(gates)}, read from each "
                "release's source.",
                "scope": scope,
                "releases": releases_doc,
            }
        ],
        "tests": _tests(first, gates),
    }


def render(found: list[dict[str, Any]], root_releases: list[str]) -> str:
    import yaml

    rules = [
        rule(group, found[i + 1] if i + 1 < len(found) else None, root_releases[-1])
        for i, group in enumerate(found)
        if group["gates"]
    ]
    header = (
        f"# Generated by scripts/extract_sglang_fusion_auto_on.py from the unpacked SGLang wheels "
        f"{root_releases[0]}..{root_releases[-1]}; do not edit by hand.\n"
        "# Where each release turns FlashInfer allreduce fusion on by itself (effect.defaults), "
        "one rule per "
        "run of releases with the same gate.\n"
    )

    class Plain(yaml.SafeDumper):
        """No anchors and aliases: each rule reads on its own."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    return header + yaml.dump(
        {"schema_version": 1, "rules": rules},
        Dumper=Plain,
        sort_keys=False,
        width=120,
        default_flow_style=None,
        allow_unicode=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "src_root", help="folder with one unpacked wheel per release (SRC_ROOT/<version>/sglang/)"
    )
    parser.add_argument(
        "-o", "--output", help=f"write here (atomically) instead of stdout, e.g. {OUTPUT}"
    )
    parser.add_argument(
        "--doc-rows",
        action="store_true",
        help="print the rules' rows for the table of built-in rules in docs/rules.md instead",
    )
    args = parser.parse_args(argv)
    found = release_folders(args.src_root)
    if found is None:
        return 2
    try:
        text = render(groups(args.src_root), found)
        if args.doc_rows:
            import yaml

            text = "".join(
                f"| `{r['id']}` | {r['severity']} | {r['scope']} | upstream:sglang |\n"
                for r in yaml.safe_load(text)["rules"]
            )
    except GateError as error:
        print(
            f"error: {error} (hint: read the gate in that release and extend the table in this "
            "script)",
            file=sys.stderr,
        )
        return 1
    write_or_print(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
