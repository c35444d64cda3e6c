"""A stand-in for the terraform binary: logs its arguments, answers from a JSON script (env FAKE_TF_SCRIPT).

Script: {"<command>": {"code": int, "stdout": str, "stderr": str}, "plans": {"tfplan": {...}, ...}}.
"""

import json
import os
import sys

args = sys.argv[1:]
with open(os.environ["FAKE_TF_SCRIPT"]) as f:
    script = json.load(f)
with open(os.environ["FAKE_TF_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
command = args[0] if args else ""
answer = script.get(command, {})
for arg in args:
    if arg.startswith("-out="):
        with open(arg[len("-out=") :], "w") as plan:
            plan.write("fake plan\n")
if command == "show":
    answer = {"stdout": json.dumps(script["plans"][args[-1]])}
if command == "output" and "stdout" not in answer:
    answer = {"stdout": json.dumps({"vpc_id": {"sensitive": False, "type": "string", "value": "vpc-1"}})}
sys.stdout.write(answer.get("stdout", ""))
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("code", 0))
