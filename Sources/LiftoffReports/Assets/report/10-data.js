  // ------------------------------------------------------------------ Colours

  // FNV-1a (64-bit) over the UTF-8 bytes with the same palette as the Swift SVG renderer, so a
  // function has the same colour here, in the timeline and in the standalone flame.svg. The
  // 64-bit arithmetic is done in two 32-bit halves (no BigInt needed).
  var colourCache = new Map();
  var utf8 = new TextEncoder();

  function mod64(hi, lo, m) {
    return ((hi % m) * (4294967296 % m) + (lo % m)) % m;
  }

  // Names of Swift async functions of a task's logical stack: coloured cool, not warm.
  var asyncNameSet = new Set();

  function flameColour(name) {
    var cached = colourCache.get(name);
    if (cached) return cached;
    var bytes = utf8.encode(name);
    var hi = 0xcbf29ce4;
    var lo = 0x84222325;
    for (var i = 0; i < bytes.length; i++) {
      lo = (lo ^ bytes[i]) >>> 0;
      // hash * (2^40 + 0x1b3) mod 2^64: the 2^40 term only adds lo << 8 to the high half.
      var low = lo * 0x1b3;
      var carry = Math.floor(low / 4294967296);
      hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
      lo = low >>> 0;
    }
    var async = asyncNameSet.has(name);
    var red = (async ? 80 : 205) + mod64(hi, lo, async ? 60 : 50);
    var green = (async ? 150 : 0) + mod64(hi >>> 8, (((hi & 0xff) << 24) | (lo >>> 8)) >>> 0, async ? 70 : 230);
    var blue = (async ? 205 : 0) + mod64(hi >>> 16, (((hi & 0xffff) << 16) | (lo >>> 16)) >>> 0, async ? 50 : 55);
    var colour = 'rgb(' + red + ',' + green + ',' + blue + ')';
    colourCache.set(name, colour);
    return colour;
  }

  // Mid-tone colours that carry white labels; the main lanes get fixed, recognisable ones.
  var LANE_PALETTE = [
    '#4e79a7', '#3c9c97', '#e07b29', '#3f9a52', '#9a6fb0', '#c24f4f', '#8c6d52', '#5f6fd1', '#b5569a', '#6b7d8f'
  ];
  var FIXED_LANES = { main: 0, mainAfterFirstFrame: 1 };

  function makeLaneColours(lanes) {
    var colours = new Map();
    var next = 2;
    lanes.forEach(function (lane) {
      if (colours.has(lane)) return;
      if (Object.prototype.hasOwnProperty.call(FIXED_LANES, lane)) {
        colours.set(lane, LANE_PALETTE[FIXED_LANES[lane]]);
      } else {
        colours.set(lane, LANE_PALETTE[next % LANE_PALETTE.length]);
        next++;
      }
    });
    return function (lane) {
      return colours.get(lane) || '#6b7d8f';
    };
  }

  // ------------------------------------------------------------------ Data

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  function str(value) {
    return value === null || value === undefined ? '' : String(value);
  }

  function numOr(value, fallback) {
    return isNum(value) ? value : fallback;
  }

  /**
   * The page's data as the views use it. Its shape is the contract in
   * Schemas/report-data-1.schema.json, which the renderer's output is tested against, so only
   * derived values are added here: names on one line, the end of the timeline, the async names.
   */
  function normalise(d) {
    var data = {
      title: d.title,
      subtitle: d.subtitle,
      targetMs: d.targetMs,
      ttffMs: d.ttffMs,
      lifeCycle: d.lifeCycle,
      readyName: d.readyName || 'first frame',
      durationMs: d.durationMs,
      // The loader's time before sampling, by the kernel's counts (one sentence), or null.
      preMain: typeof d.preMain === 'string' ? oneLine(d.preMain) : null,
      // The loader's objects, relocation and initializers (one sentence), or null.
      loader: typeof d.loader === 'string' ? oneLine(d.loader) : null,
      phases: d.phases,
      markers: d.markers,
      names: d.names.map(oneLine),
      // Full signatures behind short names, by index in `names`.
      fullNames: d.fullNames.map(function (name) { return name === null ? null : oneLine(name); }),
      // Where each name's function is (`File.swift:42`, `inlined · …`), by index in `names`.
      locations: d.locations.map(function (place) { return place === null ? null : oneLine(place); }),
      flame: d.flame,
      threads: d.threads,
      insights: d.insights,
      coverage: list(d.coverage),
      tasks: d.tasks,
      spanRows: d.spanRows,
      violations: d.violations,
      hangs: d.hangs,
      budgets: d.budgets,
      counts: d.counts
    };
    data.tasks.forEach(function (task) {
      task.name = oneLine(task.name);
      task.dependencies = task.dependencies.map(oneLine);
    });
    var end = data.durationMs;
    data.phases.forEach(function (p) { end = Math.max(end, p.endMs); });
    data.markers.forEach(function (m) { end = Math.max(end, m.timeMs, numOr(m.endMs, 0)); });
    data.endMs = end;
    // Swift async functions of a task's logical stack, by index in `names`: their own colours.
    asyncNameSet = new Set(d.asyncNames.map(function (index) { return data.names[index]; }));
    colourCache.clear();
    return data;
  }

  /**
   * Typed-array copy of a TREE with two derived columns: `end` (one past the last node of each
   * subtree: preorder makes a subtree contiguous) and `x` (samples to the left of each node
   * inside the root, children packed from their parent's left edge in order).
   */
  // "(N blocked, M runnable, K disk)": what a node's waits were (blocked in a call, waiting for a
  // core, waiting for the disk).
  function waitKinds(waiting, runnable, disk) {
    disk = disk || 0;
    if (!runnable && !disk) return ' (blocked)';
    if (runnable >= waiting) return ' (runnable: waiting for a core)';
    if (disk >= waiting) return ' (waiting for the disk)';
    var parts = [];
    if (waiting - runnable - disk > 0) parts.push(fmtInt(waiting - runnable - disk) + ' blocked');
    if (runnable) parts.push(fmtInt(runnable) + ' runnable');
    if (disk) parts.push(fmtInt(disk) + ' disk');
    return ' (' + parts.join(', ') + ')';
  }

  function prepareTree(raw, names) {
    var nameCol = list(raw.name);
    var totalCol = list(raw.total);
    var selfCol = list(raw.self);
    var parentCol = list(raw.parent);
    var depthCol = list(raw.depth);
    var waitingCol = list(raw.waiting);
    var runnableCol = list(raw.runnable);
    var diskCol = list(raw.disk);
    var n = Math.min(nameCol.length, totalCol.length, parentCol.length, depthCol.length);
    var tree = {
      n: n, names: names,
      name: new Int32Array(n), total: new Float64Array(n), self: new Float64Array(n),
      parent: new Int32Array(n), depth: new Int32Array(n), end: new Int32Array(n), x: new Float64Array(n),
      waiting: new Float64Array(n), runnable: new Float64Array(n), disk: new Float64Array(n)
    };
    var i;
    for (i = 0; i < n; i++) {
      tree.name[i] = nameCol[i] | 0;
      tree.total[i] = Math.max(0, +totalCol[i] || 0);
      tree.self[i] = Math.max(0, +selfCol[i] || 0);
      tree.parent[i] = parentCol[i] | 0;
      tree.depth[i] = Math.max(0, depthCol[i] | 0);
      tree.waiting[i] = Math.max(0, +waitingCol[i] || 0);
      tree.runnable[i] = Math.min(tree.waiting[i], Math.max(0, +runnableCol[i] || 0));
      tree.disk[i] = Math.min(tree.waiting[i] - tree.runnable[i], Math.max(0, +diskCol[i] || 0));
    }
    var open = [];
    for (i = 0; i < n; i++) {
      while (open.length && tree.depth[open[open.length - 1]] >= tree.depth[i]) tree.end[open.pop()] = i;
      open.push(i);
    }
    while (open.length) tree.end[open.pop()] = n;
    var cursor = new Float64Array(n);
    for (i = 1; i < n; i++) {
      var p = tree.parent[i];
      if (p < 0 || p >= i) p = 0;
      tree.x[i] = cursor[p];
      cursor[p] += tree.total[i];
      cursor[i] = tree.x[i];
    }
    return tree;
  }

  function treeLabel(tree, node) {
    return frameName(tree.names, tree.name[node]);
  }

  var lowerCaseNames = new WeakMap();

  /**
   * Per entry of the names table: 1 when the name, the full signature behind a short name or
   * the function's file and line contains `query` (case-insensitive).
   */
  function matchNames(names, query, fullNames, locations) {
    if (!lowerCaseNames.has(names)) {
      lowerCaseNames.set(names, names.map(function (name, index) {
        var full = fullNames && fullNames[index];
        var place = locations && locations[index];
        return [name, full, place].filter(Boolean).join('\n').toLowerCase();
      }));
    }
    var lower = lowerCaseNames.get(names);
    var needle = query.toLowerCase();
    var matches = new Uint8Array(names.length);
    for (var i = 0; i < names.length; i++) if (lower[i].indexOf(needle) !== -1) matches[i] = 1;
    return matches;
  }

  /** Samples under matched frames, each matched subtree counted once (nested matches skipped). */
  function matchedSamples(tree, matches) {
    var sum = 0;
    var i = 1; // the synthetic root never matches
    while (i < tree.n) {
      if (matches[tree.name[i]]) {
        sum += tree.total[i];
        i = tree.end[i];
      } else {
        i++;
      }
    }
    return sum;
  }

  function stripThreadId(label) {
    return label.replace(/\s*\(\d+\)\s*$/, '');
  }

  /** Whether a task ran on the main thread: by its thread name, else by its lane. */
  function makeMainTaskTest(data) {
    var labels = new Set(['main', 'main thread']);
    data.threads.forEach(function (thread) {
      if (!thread.isMain) return;
      labels.add(str(thread.label).toLowerCase());
      labels.add(stripThreadId(str(thread.label)).toLowerCase());
    });
    return function (task) {
      var thread = task.thread.trim().toLowerCase();
      if (thread) return labels.has(thread) || labels.has(stripThreadId(thread));
      return task.lane === 'main' || task.lane === 'mainAfterFirstFrame';
    };
  }

  // ------------------------------------------------------------------ Tooltip

  var tooltip = null;

  function showTooltip(event, title, rows) {
    if (!tooltip) {
      tooltip = h('div', { class: 'tooltip', role: 'tooltip', hidden: '' });
      document.body.appendChild(tooltip);
    }
    tooltip.textContent = '';
    append(tooltip, h('div', { class: 'tt-title' }, title));
    rows.forEach(function (row) {
      if (row) append(tooltip, h('div', { class: 'tt-row' }, row));
    });
    tooltip.hidden = false;
    var box = tooltip.getBoundingClientRect();
    var x = event.clientX + 14;
    var y = event.clientY + 16;
    if (x + box.width > window.innerWidth - 8) x = Math.max(8, event.clientX - box.width - 14);
    if (y + box.height > window.innerHeight - 8) y = Math.max(8, event.clientY - box.height - 12);
    tooltip.style.left = x + 'px';
    tooltip.style.top = y + 'px';
  }

  function hideTooltip() {
    if (tooltip) tooltip.hidden = true;
  }

  // ------------------------------------------------------------------ Page structure

  function card(id, title, hint) {
    var head = h('div', { class: 'card-head' }, [h('h2', null, title)]);
    var section = h('section', { class: 'card', id: id }, [head]);
    if (hint) append(section, h('p', { class: 'hint' }, hint));
    return { section: section, head: head };
  }

  function stat(label, value, tone) {
    return h('div', { class: 'stat' + (tone ? ' ' + tone : '') }, [
      h('span', { class: 'label' }, label),
      h('span', { class: 'value' }, value)
    ]);
  }

  function emptyNote(text) {
    return h('p', { class: 'empty' }, text || 'None recorded.');
  }

  function stackList(frames) {
    if (!frames.length) return h('p', { class: 'empty stack-caption' }, 'No stack recorded.');
    return h('ol', { class: 'stack' }, frames.map(function (frame) { return h('li', null, oneLine(frame)); }));
  }

  function table(headers, rows) {
    var head = h('tr', null, headers.map(function (header) {
      return h('th', { class: header.num ? 'num' : null, scope: 'col' }, header.label);
    }));
    return h('div', { class: 'table-wrap' }, h('table', null, [h('thead', null, head), h('tbody', null, rows)]));
  }

  function cell(content, numeric) {
    return h('td', { class: numeric ? 'num' : null }, content);
  }

