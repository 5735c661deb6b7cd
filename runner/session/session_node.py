# boxer's javascript and typescript cells (docs/e2b.md, "Code
# interpreter"): a javascript or typescript context of the code
# interpreter is a long-lived node of its own, as E2B's template runs a
# javascript kernel, so that variables, functions and imports outlive a
# cell. session_cell.py loads this file from /code on the first such cell;
# the node runs /code/.boxer-node.js (session_node.js), which says how a
# cell runs.
#
# The context is a bash context's (session_bash.py) with node instead of
# bash: each cell is a JSON line on node's fd 0 naming the cell's files
# (its code, its variables, the FIFOs of its output and the file of its
# records), and node answers "TOKEN STATUS" on the control pipe, which the
# driver alone reads. The records (the cell's value and its error) are
# then read from their file, bounded.
import json
import os
import signal

import boxer_bash

# MAX_RECORDS bounds what a cell's records file is read of: the host drops
# a record over 32 MiB in any case.
MAX_RECORDS = 48 << 20
SCRIPT = "/code/.boxer-node.js"


class NodeContext(boxer_bash.BashContext):
    """A javascript or typescript context: its node, made at its first
    cell, and its count."""

    program = "node"

    def __init__(self, cwd, language):
        super().__init__(cwd)
        self.language = language

    def argv(self):
        return ["node", SCRIPT, self.cwd]

    def setup(self):
        pass

    def command(self, files, token, env, spec):
        env_file = None
        if env:
            env_file = files["env"]
            boxer_bash.write_file(env_file, json.dumps(env).encode("utf-8", "surrogatepass"))
        return json.dumps({
            "token": token, "call": token.split("-")[0], "language": self.language,
            "code": files["code"], "env": env_file, "global_env": spec.get("global_env") or {},
            "out": files["out"], "err": files["err"], "records": files["records"],
        }) + "\n"

    def report(self, files, status, emit):
        try:
            with open(files["records"], "rb") as f:
                data = f.read(MAX_RECORDS + 1)
        except OSError:
            data = b""
        if len(data) > MAX_RECORDS:
            emit(boxer_bash.error("", "the cell's result is over %d MiB: dropped" % (MAX_RECORDS >> 20)), False)
            return
        for line in data.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("kind") in ("result", "error"):
                emit(rec, False)
        if status and status != 130 and not data:
            emit(boxer_bash.error("", str(status)), False)

    def after_interrupt(self, token):
        # node answers an interrupt itself (session_node.js).
        pass
