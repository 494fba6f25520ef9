"""Child of the kill tests: run scripted edits on a project, reporting each one through stdout.

Usage: ``python -m tests.reliability.kill_child PROJECT SEED TAG``. Before edit i
it writes ``B i``, after the call returns ``R i`` (flushed), forever.
"""

import random
import sys

from marginalia.project import Session
from tests.reliability.edit_script import apply_to_session, next_op


def main(path, seed, tag, out=None):
    out = sys.stdout if out is None else out
    session = Session.open(path, backup_every_edits=7)
    out.write("O\n")
    out.flush()
    item = session.items()[0].id
    rng = random.Random(seed)
    i = 0
    while True:
        op = next_op(rng, {lab.id: lab for lab in session.labels(item)}, item, tag, i)
        out.write(f"B {i}\n")
        out.flush()
        apply_to_session(session, op)
        out.write(f"R {i}\n")
        out.flush()
        i += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
