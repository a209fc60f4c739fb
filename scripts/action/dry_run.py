"""Runs the steps of the repository's action.yml on this machine, as GitHub's runner would run the
composite action, to try it (and test it) without GitHub:

    python3 scripts/action/dry_run.py --workspace DIR [--input NAME=VALUE ...] [--temp DIR]

Each `run:` step runs with bash in the workspace, with `${{ inputs.* }}`, `${{ steps.*.outputs.* }}`,
`${{ runner.temp }}` and `${{ github.action_path }}` replaced, and GITHUB_ENV, GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files as on GitHub (the summary is kept in TEMP/step-summary.md). A `uses:`
step is not run: the runner prints what it would have done. After a failing step only steps
with `if: always()` run, and the runner exits with the first failure's status.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ACTION = Path(__file__).resolve().parent.parent.parent / "action.yml"


def main():
    parser = argparse.ArgumentParser(description="Run action.yml's steps locally.")
    parser.add_argument("--workspace", required=True, help="the repository the action runs in")
    parser.add_argument("--input", action="append", default=[], help="an input as NAME=VALUE")
    parser.add_argument("--temp", help="RUNNER_TEMP (a new folder by default)")
    options = parser.parse_args()

    action = yaml.safe_load(ACTION.read_text())
    inputs = {name: str(spec.get("default", "")) for name, spec in action.get("inputs", {}).items()}
    for given in options.input:
        name, _, value = given.partition("=")
        if name not in inputs:
            sys.exit("dry_run.py: action.yml has no input '%s'." % name)
        inputs[name] = value
    for name, spec in action.get("inputs", {}).items():
        if spec.get("required") and not inputs[name]:
            sys.exit("dry_run.py: the input '%s' is required." % name)

    temp = Path(options.temp or tempfile.mkdtemp(prefix="liftoff-action-"))
    temp.mkdir(parents=True, exist_ok=True)
    files = {name: temp / name for name in ("env", "step-summary.md")}
    for path in files.values():
        path.touch()
    environment = dict(os.environ)
    environment.update({
        "GITHUB_ACTION_PATH": str(ACTION.parent), "GITHUB_WORKSPACE": str(Path(options.workspace).resolve()),
        "RUNNER_TEMP": str(temp), "GITHUB_ENV": str(files["env"]), "GITHUB_STEP_SUMMARY": str(files["step-summary.md"]),
    })
    outputs = {}
    context = {"runner.temp": str(temp), "github.action_path": str(ACTION.parent),
               "github.workspace": environment["GITHUB_WORKSPACE"]}

    def expand(text):
        def value(match):
            expression = match.group(1).strip()
            if expression.startswith("inputs."):
                return inputs.get(expression[len("inputs."):], "")
            step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
            if step:
                return outputs.get(step.group(1), {}).get(step.group(2), "")
            return context.get(expression, "")
        return re.sub(r"\$\{\{(.*?)\}\}", value, str(text))

    failure = 0
    for number, step in enumerate(action["runs"]["steps"], start=1):
        name = step.get("name", "step %d" % number)
        if failure and "always()" not in str(step.get("if", "")):
            print("== %s: skipped after a failure" % name, flush=True)
            continue
        if "uses" in step:
            settings = {key: expand(value) for key, value in (step.get("with") or {}).items()}
            print("== %s: would use %s with %s" % (name, step["uses"], settings), flush=True)
            continue
        output = temp / ("output-%d" % number)
        output.write_text("")
        env = dict(environment)
        env["GITHUB_OUTPUT"] = str(output)
        for key, value in (step.get("env") or {}).items():
            env[key] = expand(value)
        for line in files["env"].read_text().splitlines():
            key, _, value = line.partition("=")
            if key:
                env[key] = value
                environment[key] = value
        print("== %s" % name, flush=True)
        status = subprocess.run(["bash", "-e", "-c", expand(step["run"])], cwd=environment["GITHUB_WORKSPACE"], env=env).returncode
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        if status != 0 and not failure:
            print("== %s failed with status %d" % (name, status), flush=True)
            failure = status
    print("== summary: %s" % files["step-summary.md"], flush=True)
    sys.exit(failure)


if __name__ == "__main__":
    main()
