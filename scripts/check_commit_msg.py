"""Commit-message check, run by pre-commit at the commit-msg stage (.pre-commit-config.yaml).

The subject (first line) is at most 72 characters and not empty, and a body, when there is one, is
parted from it by a blank line: `git log --oneline`, shortlogs and review tools show the subject
alone, cut at 72. Lines git drops (starting with '#') and the diff of `git commit -v` are not part
of the message.

    python scripts/check_commit_msg.py .git/COMMIT_EDITMSG     # exit 1 with the reason on stderr
"""

from __future__ import annotations

import sys

MAX_SUBJECT = 72
SCISSORS = "# ------------------------ >8 ------------------------"


def message_lines(text: str) -> list[str]:
    """The lines git keeps: up to `git commit -v`'s scissors line, without comment lines."""
    kept = []
    for line in text.splitlines():
        if line.startswith(SCISSORS):
            break
        if not line.startswith("#"):
            kept.append(line.rstrip())
    while kept and not kept[0]:
        kept.pop(0)
    return kept


def problems(text: str) -> list[str]:
    lines = message_lines(text)
    if not lines:
        return ["the commit message is empty"]
    subject = lines[0]
    found = []
    if len(subject) > MAX_SUBJECT:
        found.append(
            f"the subject is {len(subject)} characters, more than {MAX_SUBJECT}: say the what in "
            "the subject "
            "and move the why to the body, after a blank line"
        )
    if len(lines) > 1 and lines[1]:
        found.append(
            "the second line is not blank: part the subject from the body with an empty line"
        )
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_commit_msg.py COMMIT_MSG_FILE", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8", errors="replace") as handle:
        found = problems(handle.read())
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
