// The launch history page: click a point, then another, to compare the two commits' launches.
// The entries (commit, time, metrics, functions) are the JSON in #liftoff-data.

(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("liftoff-data").textContent);
  const byCommit = new Map(data.entries.map((entry) => [entry.commit, entry]));
  const panel = document.getElementById("comparison");
  let picked = [];

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function number(value) {
    if (value === undefined || value === null) return "—";
    return Math.abs(value) >= 1e6 ? (value / 1e6).toFixed(2) + " M" : value.toFixed(2);
  }

  function change(before, after) {
    if (before === undefined || after === undefined || before === 0) return ["", ""];
    const fraction = after / before - 1;
    const text = (fraction >= 0 ? "+" : "") + (fraction * 100).toFixed(1) + " %";
    return [text, fraction > 0.005 ? "n worse" : fraction < -0.005 ? "n better" : "n"];
  }

  function table(headers, rows) {
    const element = document.createElement("table");
    const head = document.createElement("tr");
    for (const header of headers) {
      const th = document.createElement("th");
      th.textContent = header;
      head.appendChild(th);
    }
    element.appendChild(head);
    for (const row of rows) element.appendChild(row);
    return element;
  }

  function compare(a, b) {
    panel.textContent = "";
    const title = document.createElement("h2");
    title.textContent = a.commit + " (" + a.time + ") → " + b.commit + " (" + b.time + ")";
    panel.appendChild(title);
    const names = [...new Set([...Object.keys(a.metrics), ...Object.keys(b.metrics)])].sort();
    const metricRows = names.map((name) => {
      const tr = document.createElement("tr");
      const [text, className] = change(a.metrics[name], b.metrics[name]);
      tr.append(cell(name), cell(number(a.metrics[name]), "n"), cell(number(b.metrics[name]), "n"), cell(text, className));
      return tr;
    });
    panel.appendChild(table(["Metric", a.commit, b.commit, "Change"], metricRows));
    const functions = new Map();
    for (const f of a.functions) functions.set(f.name + "\u0000" + f.object, { name: f.name, object: f.object, a: f.ms, b: 0 });
    for (const f of b.functions) {
      const key = f.name + "\u0000" + f.object;
      const known = functions.get(key) || { name: f.name, object: f.object, a: 0, b: 0 };
      known.b = f.ms;
      functions.set(key, known);
    }
    const moved = [...functions.values()].sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a)).slice(0, 10);
    const functionRows = moved.map((f) => {
      const tr = document.createElement("tr");
      const delta = f.b - f.a;
      tr.append(cell(f.name), cell(f.object), cell(number(f.a), "n"), cell(number(f.b), "n"),
        cell((delta >= 0 ? "+" : "") + delta.toFixed(2) + " ms", delta > 0 ? "n worse" : "n better"));
      return tr;
    });
    panel.appendChild(table(["Function", "Object", a.commit + " ms", b.commit + " ms", "Change"], functionRows));
  }

  for (const point of document.querySelectorAll(".point")) {
    point.addEventListener("click", () => {
      const commit = point.getAttribute("data-commit");
      picked = picked.length >= 2 ? [commit] : [...picked, commit];
      for (const other of document.querySelectorAll(".point")) {
        other.classList.toggle("picked", picked.includes(other.getAttribute("data-commit")));
      }
      if (picked.length === 2) {
        const [first, second] = picked.map((c) => byCommit.get(c)).sort((x, y) => data.entries.indexOf(x) - data.entries.indexOf(y));
        compare(first, second);
      } else {
        panel.textContent = "Commit " + commit + " picked: click another point to compare them.";
      }
    });
  }
})();
