"""Turns `liftoff compare --format json` into GitHub annotations: the verdict, each function
that regressed or was added (an error when the launch regressed, a warning otherwise), and, for
counted launches, each function whose own instructions grew most.

    python3 annotate.py comparison.json
"""

import json
import os
import sys


def escape(text):
    """GitHub's workflow-command escaping of a message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text):
    """GitHub's workflow-command escaping of a property (title, file): also `:` and `,`, which
    would end it (a C++ name such as `std::map<int, int>::find`)."""
    return escape(text).replace(":", "%3A").replace(",", "%2C")


def location(function):
    """` file=…,line=…` where the function's source is known and inside the workspace."""
    path = function.get("file")
    if not path:
        return ""
    workspace = os.environ.get("GITHUB_WORKSPACE", "")
    if workspace and path.startswith(workspace.rstrip("/") + "/"):
        path = path[len(workspace.rstrip("/")) + 1:]
    elif path.startswith("/"):
        return ""
    text = ",file=" + escape_property(path)
    if isinstance(function.get("line"), int):
        text += ",line=%d" % function["line"]
    return text


def main():
    comparison = json.load(open(sys.argv[1]))
    verdict = comparison["verdict"]
    level = {"regressed": "error", "inconclusive": "warning"}.get(verdict, "notice")
    print("::%s title=%s::%s" % (level, escape_property("Liftoff: launch " + verdict), escape(comparison["headline"])))
    worse = [f for f in comparison.get("functions", []) if f["verdict"] in ("regressed", "added")]
    worse.sort(key=lambda f: -abs(f["changeMs"]))
    for function in worse[:10]:
        kind = "CPU" if function["kind"] == "cpu" else "waiting"
        message = "%s (%s) %+.1f ms per run (%.1f to %.1f), q = %.3g" % (
            function["name"], kind, function["changeMs"], function["lowerMs"], function["upperMs"], function["qValue"])
        title = escape_property("Liftoff: %s %s" % (function["name"], function["verdict"]))
        print("::%s title=%s%s::%s" % (
            "error" if verdict == "regressed" else "warning", title, location(function), escape(message)))
    counts = comparison.get("instructions")
    if counts:
        grew = [f for f in counts.get("functions", []) if f.get("change", 0) > 0]
        grew.sort(key=lambda f: -f["change"])
        level = "error" if counts.get("verdict") == "regressed" else "warning"
        for function in grew[:10]:
            message = "%s: %+.0f instructions per launch of its own (%.0f to %.0f), %+.0f with what it calls" % (
                function["name"], function["change"], function["base"], function["head"], function.get("inclusiveChange", 0))
            title = escape_property("Liftoff: %s grew (instructions)" % function["name"])
            print("::%s title=%s%s::%s" % (level, title, location(function), escape(message)))


if __name__ == "__main__":
    main()
