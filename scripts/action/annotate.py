"""Turns `liftoff compare --format json` into GitHub annotations: the verdict, and each function
that regressed or was added (an error when the launch regressed, a warning otherwise).

    python3 annotate.py comparison.json
"""

import json
import sys


def escape(text):
    """GitHub's workflow-command escaping of a message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def main():
    comparison = json.load(open(sys.argv[1]))
    verdict = comparison["verdict"]
    level = {"regressed": "error", "inconclusive": "warning"}.get(verdict, "notice")
    print("::%s title=Liftoff: launch %s::%s" % (level, verdict, escape(comparison["headline"])))
    worse = [f for f in comparison.get("functions", []) if f["verdict"] in ("regressed", "added")]
    worse.sort(key=lambda f: -abs(f["changeMs"]))
    for function in worse[:10]:
        kind = "CPU" if function["kind"] == "cpu" else "waiting"
        message = "%s (%s) %+.1f ms per run (%.1f to %.1f), q = %.3g" % (
            function["name"], kind, function["changeMs"], function["lowerMs"], function["upperMs"], function["qValue"])
        print("::%s title=Liftoff: %s %s::%s" % (
            "error" if verdict == "regressed" else "warning", function["name"], function["verdict"], escape(message)))


if __name__ == "__main__":
    main()
