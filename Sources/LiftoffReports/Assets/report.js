/*
 * Liftoff launch report: reads the JSON in #liftoff-data and draws every view into #app.
 *
 * Every piece of text that comes from the profile reaches the page through textContent,
 * createTextNode or setAttribute, never through markup, so names may contain anything.
 * Large profiles stay responsive because the flame graph and the flame charts only create
 * elements for what is at least half a pixel wide in the current zoom, up to a cap.
 */
(function () {
  'use strict';

  // ------------------------------------------------------------------ Failure reporting

  // Registered before anything else so that a failure anywhere, including in later event
  // handlers, shows on the page and marks the body for the headless test. The element's id is
  // assembled so that the page's own text never contains it: a test that searches the dumped
  // DOM for it finds it only when something failed.
  var FAILURE_ID = 'report-' + 'error';

  function reportFailure(message) {
    var body = document.body;
    if (!body) return;
    body.dataset.ready = 'error';
    var pre = document.getElementById(FAILURE_ID);
    if (!pre) {
      pre = document.createElement('pre');
      pre.id = FAILURE_ID;
      pre.className = 'failure';
      body.insertBefore(pre, body.firstChild);
    }
    pre.textContent += (pre.textContent ? '\n' : '') + 'The report could not be drawn: ' + message;
  }

  window.addEventListener('error', function (event) {
    reportFailure(event.message || String(event.error));
  });

  // ------------------------------------------------------------------ DOM helpers

  var SVG_NS = 'http://www.w3.org/2000/svg';

  function setAttrs(node, attrs) {
    if (!attrs) return node;
    Object.keys(attrs).forEach(function (key) {
      var value = attrs[key];
      if (value !== null && value !== undefined && value !== false) node.setAttribute(key, String(value));
    });
    return node;
  }

  /** Appends nodes; strings and numbers become text nodes. */
  function append(node, children) {
    if (children === null || children === undefined) return node;
    (Array.isArray(children) ? children : [children]).forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
    });
    return node;
  }

  /** An HTML element with attributes (set with setAttribute) and children. */
  function h(tag, attrs, children) {
    return append(setAttrs(document.createElement(tag), attrs), children);
  }

  /** An SVG element with attributes. */
  function svgEl(tag, attrs) {
    return setAttrs(document.createElementNS(SVG_NS, tag), attrs);
  }

  function svgText(x, y, cls, content) {
    var node = svgEl('text', { x: x, y: y, class: cls });
    node.textContent = content;
    return node;
  }

  // ------------------------------------------------------------------ Formatting

  function isNum(value) {
    return typeof value === 'number' && isFinite(value);
  }

  function groupThousands(text) {
    var parts = text.split('.');
    parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return parts.join('.');
  }

  /** A millisecond value without unit: more digits for small values. */
  function msNumber(value) {
    if (!isNum(value)) return '—';
    var magnitude = Math.abs(value);
    var digits = Number.isInteger(value) || magnitude >= 1000 ? 0 : magnitude >= 1 ? 1 : 2;
    return groupThousands(value.toFixed(digits));
  }

  /** Table cells: always one decimal, so that a column lines up. */
  function tableMs(value) {
    return isNum(value) ? groupThousands(value.toFixed(1)) : '—';
  }

  function fmtMs(value) {
    return isNum(value) ? msNumber(value) + ' ms' : '—';
  }

  function fmtInt(value) {
    return isNum(value) ? groupThousands(String(Math.round(value))) : '—';
  }

  function fmtPct(part, whole) {
    if (!(whole > 0)) return '—';
    var pct = (part * 100) / whole;
    if (pct > 0 && pct < 0.1) return '<0.1%';
    return (pct >= 99.95 ? '100' : pct.toFixed(1)) + '%';
  }

  function plural(count, word, many) {
    return fmtInt(count) + ' ' + (count === 1 ? word : many || word + 's');
  }

  /** Names are shown on one line: newlines and tabs become spaces. */
  function oneLine(text) {
    return String(text === null || text === undefined ? '' : text).replace(/[\r\n\t\u2028\u2029]+/g, ' ');
  }

  /** As much of `text` as fits in `width` pixels at `charWidth` pixels a character. */
  function fitLabel(text, width, charWidth) {
    var room = Math.floor((width - 6) / charWidth);
    if (room < 3) return '';
    return text.length <= room ? text : text.slice(0, room - 1) + '…';
  }

  function clamp(value, low, high) {
    return Math.max(low, Math.min(high, value));
  }

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

  /** The entries of an array that are objects (records), skipping nulls and stray values. */
  function records(value) {
    return list(value).filter(function (entry) { return entry !== null && typeof entry === 'object'; });
  }

  function str(value) {
    return value === null || value === undefined ? '' : String(value);
  }

  function numOr(value, fallback) {
    return isNum(value) ? value : fallback;
  }

  /** Fills in defaults so that the views can rely on the shape of the contract. */
  function normalise(raw) {
    var d = raw && typeof raw === 'object' ? raw : {};
    var budgets = d.budgets && typeof d.budgets === 'object' ? d.budgets : {};
    var frames = budgets.frames && typeof budgets.frames === 'object' ? budgets.frames : {};
    var flame = d.flame && typeof d.flame === 'object' ? d.flame : {};
    var data = {
      title: str(d.title) || 'Liftoff launch profile',
      subtitle: str(d.subtitle),
      targetMs: numOr(d.targetMs, 400),
      ttffMs: isNum(d.ttffMs) ? d.ttffMs : null,
      lifeCycle: d.lifeCycle !== false,
      durationMs: numOr(d.durationMs, 0),
      phases: records(d.phases).filter(function (p) { return isNum(p.startMs) && isNum(p.endMs); }),
      markers: records(d.markers).filter(function (m) { return isNum(m.timeMs); }),
      names: list(d.names).map(oneLine),
      // Full signatures behind short names, by index in `names`.
      fullNames: list(d.fullNames).map(function (name) { return typeof name === 'string' ? oneLine(name) : null; }),
      // Where each name's function is (`File.swift:42`, `inlined · …`), by index in `names`.
      locations: list(d.locations).map(function (place) { return typeof place === 'string' ? oneLine(place) : null; }),
      flame: {
        merged: flame.merged || {}, perThread: flame.perThread || {},
        mergedWall: flame.mergedWall || flame.merged || {}, perThreadWall: flame.perThreadWall || flame.perThread || {}
      },
      threads: records(d.threads),
      tasks: records(d.tasks),
      spanRows: records(d.spanRows),
      violations: records(d.violations),
      hangs: records(d.hangs),
      budgets: {
        frames: { count: numOr(frames.count, 0), slow: numOr(frames.slow, 0), frozen: numOr(frames.frozen, 0) },
        background: records(budgets.background),
        states: records(budgets.states),
        termination: budgets.termination && typeof budgets.termination === 'object' ? budgets.termination : null
      },
      counts: d.counts && typeof d.counts === 'object' ? d.counts : {}
    };
    data.tasks.forEach(function (task) {
      task.name = oneLine(task.name);
      task.lane = str(task.lane);
      task.thread = str(task.thread);
      task.status = str(task.status);
      task.dependencies = list(task.dependencies).map(oneLine);
    });
    var end = data.durationMs;
    data.phases.forEach(function (p) { end = Math.max(end, p.endMs); });
    data.markers.forEach(function (m) { end = Math.max(end, m.timeMs, numOr(m.endMs, 0)); });
    data.endMs = end;
    // Swift async functions of a task's logical stack, by index in `names`: their own colours.
    asyncNameSet = new Set(list(d.asyncNames).filter(function (index) {
      return isNum(index) && index >= 0 && index < data.names.length;
    }).map(function (index) { return data.names[index]; }));
    colourCache.clear();
    return data;
  }

  /**
   * Typed-array copy of a TREE with two derived columns: `end` (one past the last node of each
   * subtree: preorder makes a subtree contiguous) and `x` (samples to the left of each node
   * inside the root, children packed from their parent's left edge in order).
   */
  // "(N blocked, M runnable)" when some of a node's waits were for a core.
  function waitKinds(waiting, runnable) {
    if (!runnable) return ' (blocked)';
    if (runnable >= waiting) return ' (runnable: waiting for a core)';
    return ' (' + fmtInt(waiting - runnable) + ' blocked, ' + fmtInt(runnable) + ' runnable)';
  }

  function prepareTree(raw, names) {
    var nameCol = list(raw.name);
    var totalCol = list(raw.total);
    var selfCol = list(raw.self);
    var parentCol = list(raw.parent);
    var depthCol = list(raw.depth);
    var waitingCol = list(raw.waiting);
    var runnableCol = list(raw.runnable);
    var n = Math.min(nameCol.length, totalCol.length, parentCol.length, depthCol.length);
    var tree = {
      n: n, names: names,
      name: new Int32Array(n), total: new Float64Array(n), self: new Float64Array(n),
      parent: new Int32Array(n), depth: new Int32Array(n), end: new Int32Array(n), x: new Float64Array(n),
      waiting: new Float64Array(n), runnable: new Float64Array(n)
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

  // ------------------------------------------------------------------ 1. Header

  function drawHeader(app, data) {
    var header = h('header', { class: 'report-header' }, [
      h('h1', null, oneLine(data.title)),
      data.subtitle ? h('p', { class: 'subtitle' }, oneLine(data.subtitle)) : null,
      h('nav', { class: 'nav', 'aria-label': 'Sections' }, [
        ['#flame', 'Flame graph'], ['#timeline', 'Timeline'], ['#spans', 'Spans'], ['#tasks', 'Launch tasks'],
        ['#issues', 'Violations & hangs'], ['#budgets', 'Budgets'], ['#sampling', 'Sampling']
      ].map(function (link) { return h('a', { href: link[0] }, link[1]); }))
    ]);
    var hangCount = data.hangs.length;
    var violationCount = data.violations.reduce(function (sum, v) { return sum + Math.max(1, numOr(v.count, 1)); }, 0);
    append(header, h('div', { class: 'headline' }, [
      ttffBadge(data),
      stat('Profile length', fmtMs(data.durationMs)),
      stat('Samples captured', fmtInt(numOr(data.counts.captured, 0))),
      stat('Hangs', fmtInt(hangCount), hangCount ? 'bad' : null),
      stat('Violations', fmtInt(violationCount), violationCount ? 'warn' : null)
    ]));
    append(header, phaseBar(data));
    app.appendChild(header);
  }

  function ttffBadge(data) {
    var target = data.targetMs;
    if (data.ttffMs === null && !data.lifeCycle) {
      // A program without Liftoff's life cycle, profiled to its end: no first frame to miss.
      return h('div', { class: 'ttff none' }, [
        h('span', { class: 'label' }, 'Profiled to its end'),
        h('span', { class: 'value' }, fmtMs(data.durationMs)),
        h('span', { class: 'verdict' }, 'It has no app life cycle: give --ready to time a launch to an output line.')
      ]);
    }
    if (data.ttffMs === null) {
      return h('div', { class: 'ttff none' }, [
        h('span', { class: 'label' }, 'Time to first frame'),
        h('span', { class: 'value' }, 'No first frame'),
        h('span', { class: 'verdict' }, 'No first frame was committed (target ' + fmtMs(target) + ').')
      ]);
    }
    var within = data.ttffMs <= target;
    var verdict = within
      ? 'Within the ' + fmtMs(target) + ' target (' + fmtMs(target - data.ttffMs) + ' to spare)'
      : fmtMs(data.ttffMs - target) + ' over the ' + fmtMs(target) + ' target';
    return h('div', { class: 'ttff ' + (within ? 'good' : 'bad') }, [
      h('span', { class: 'label' }, 'Time to first frame'),
      h('span', { class: 'value' }, fmtMs(data.ttffMs)),
      h('span', { class: 'verdict' }, (within ? '✓ ' : '✗ ') + verdict)
    ]);
  }

  /** The phases as one bar, widths proportional to their durations, with the first frame and target marked. */
  function phaseBar(data) {
    var wrap = h('div', { class: 'phases' });
    if (!data.phases.length || !(data.endMs > 0)) {
      return append(wrap, emptyNote('No launch phases were recorded.'));
    }
    var total = data.endMs;
    var bar = h('div', { class: 'phase-bar', role: 'img', 'aria-label': 'Launch phases' });
    data.phases.forEach(function (phase, index) {
      var length = Math.max(0, phase.endMs - phase.startMs);
      var segment = h('div', { class: 'phase phase-' + (index % 4), title: oneLine(phase.name) + ': ' + fmtMs(length) }, [
        oneLine(phase.name), h('span', { class: 'ms' }, fmtMs(length))
      ]);
      segment.style.flex = '0 0 ' + ((length / total) * 100).toFixed(3) + '%';
      bar.appendChild(segment);
    });
    var scale = h('div', { class: 'phase-scale' }, [
      h('span', { class: 'start' }, '0 ms'), h('span', { class: 'end' }, fmtMs(total))
    ]);
    scale.lastChild.style.left = '100%';
    function tick(timeMs, cls, label) {
      if (!(timeMs >= 0 && timeMs <= total)) return;
      var line = h('div', { class: 'phase-tick ' + cls, title: label });
      line.style.left = ((timeMs / total) * 100).toFixed(3) + '%';
      bar.appendChild(line);
      var text = h('span', null, label);
      text.style.left = line.style.left;
      scale.appendChild(text);
    }
    if (data.ttffMs !== null) tick(data.ttffMs, 'first-frame', 'first frame ' + fmtMs(data.ttffMs));
    if (data.ttffMs === null || Math.abs(data.targetMs - data.ttffMs) > total * 0.08) {
      tick(data.targetMs, 'target', 'target ' + fmtMs(data.targetMs));
    }
    return append(wrap, [bar, scale]);
  }

  // ------------------------------------------------------------------ 2. Flame graph

  var FG_ROW = 18;
  var FG_MIN_PX = 0.5;
  var FG_MAX_ELEMENTS = 10000; // rects and labels together
  var WAITING_FILL = '#c4c9d4'; // frames where threads waited, in every view
  var RUNNABLE_FILL = '#e3c9a8'; // frames where threads waited only for a core (runnable)
  var FG_CHAR = 6.8; // px per character of the 11px monospace label font

  /**
   * Icicle layout: the root is the top row and callees hang below their callers. Clicking a
   * frame zooms into it (it fills the width; its ancestors stay, full width, above it).
   */
  function drawFlameGraph(app, data, shared) {
    var view = card('flame', 'Flame graph',
      'Icicle layout: callers on top, callees below; width is the share of samples. ' +
      'CPU counts the samples of running threads; Wall clock adds the samples of waiting threads: blocked in ' +
      'grey, runnable (waiting for a core) in tan. Click a frame to zoom into it, click an ancestor or Reset to zoom out.');
    var trees = {};
    var state = { mode: 'merged', tree: null, zoom: 0, matches: null };

    var mergedButton = h('button', { type: 'button', 'aria-pressed': 'true' }, 'Merged');
    var threadButton = h('button', { type: 'button', 'aria-pressed': 'false' }, 'Per thread');
    var cpuButton = h('button', { type: 'button', 'aria-pressed': 'true', id: 'samples-cpu' }, 'CPU');
    var wallButton = h('button', { type: 'button', 'aria-pressed': 'false', id: 'samples-wall' }, 'Wall clock');
    var search = h('input', {
      type: 'search', placeholder: 'Search frames…', 'aria-label': 'Search frames', spellcheck: 'false'
    });
    var matchInfo = h('span', { class: 'match-info', 'aria-live': 'polite' });
    var reset = h('button', { type: 'button' }, 'Reset zoom');
    append(view.head, h('div', { class: 'controls' }, [
      h('div', { class: 'segmented', role: 'group', 'aria-label': 'Samples' }, [cpuButton, wallButton]),
      h('div', { class: 'segmented', role: 'group', 'aria-label': 'Threads' }, [mergedButton, threadButton]),
      search, matchInfo, reset
    ]));
    // `id` first, so that the serialised element starts with it (the headless test's marker).
    var svg = svgEl('svg', { id: 'flame-graph', role: 'img', 'aria-label': 'Flame graph' });
    var wrap = h('div', { class: 'flame-wrap' }, svg);
    var note = h('p', { class: 'flame-note' });
    append(view.section, [wrap, note]);
    app.appendChild(view.section);

    function useTree(mode) {
      state.mode = mode;
      var key = mode + (shared.wall ? 'Wall' : '');
      if (!trees[key]) trees[key] = prepareTree(data.flame[key], data.names);
      state.tree = trees[key];
      state.zoom = 0;
      mergedButton.setAttribute('aria-pressed', String(mode === 'merged'));
      threadButton.setAttribute('aria-pressed', String(mode === 'perThread'));
      cpuButton.setAttribute('aria-pressed', String(!shared.wall));
      wallButton.setAttribute('aria-pressed', String(shared.wall));
      updateMatchInfo();
      render();
    }

    function updateMatchInfo() {
      var tree = state.tree;
      if (!state.matches || !tree.n) {
        matchInfo.textContent = '';
        return;
      }
      matchInfo.textContent = 'matched: ' + fmtPct(matchedSamples(tree, state.matches), tree.total[0]) + ' of samples';
    }

    function render() {
      var tree = state.tree;
      svg.textContent = '';
      if (!tree.n || !tree.total[0]) {
        setAttrs(svg, { width: wrap.clientWidth || 600, height: 40 });
        note.textContent = shared.wall || !data.counts.waiting
          ? 'No samples were captured, so there is no flame graph.'
          : 'No thread was running when sampled; switch to Wall clock to see where they waited.';
        return;
      }
      var width = Math.max(200, wrap.clientWidth);
      var layout = flameLayout(tree, state.zoom, width);
      var height = (layout.deepest + 1) * FG_ROW;
      setAttrs(svg, { width: width, height: height, viewBox: '0 0 ' + width + ' ' + height });
      svg.appendChild(flameFrames(tree, layout.frames, state.matches));
      var zoom = state.zoom;
      note.textContent = (zoom ? 'Zoomed into “' + treeLabel(tree, zoom) + '” (' +
          fmtPct(tree.total[zoom], tree.total[0]) + ' of samples). ' : '') +
        (layout.capped ? 'Drawing stopped at ' + fmtInt(FG_MAX_ELEMENTS) + ' elements; zoom in for deeper frames. ' : '') +
        'Frames narrower than half a pixel are not drawn. ' +
        plural(tree.total[0], shared.wall ? 'sample' : 'running sample') +
        (shared.wall && tree.waiting[0] ? ' (' + fmtInt(tree.waiting[0]) + ' waiting)' : '') + ' in ' +
        plural(tree.n, 'node') + '.';
    }

    function frameAt(event) {
      var index = event.target.getAttribute && event.target.getAttribute('data-i');
      return index === null || index === undefined ? -1 : +index;
    }

    svg.addEventListener('click', function (event) {
      var node = frameAt(event);
      if (node < 0) return;
      state.zoom = node;
      hideTooltip();
      render();
    });
    svg.addEventListener('mousemove', function (event) {
      var node = frameAt(event);
      if (node < 0) return hideTooltip();
      var tree = state.tree;
      var zoom = state.zoom;
      var inZoom = node >= zoom && node < tree.end[zoom];
      showTooltip(event, treeLabel(tree, node), [
        data.fullNames[tree.name[node]] || null,
        data.locations[tree.name[node]] || null,
        plural(tree.total[node], 'sample') + (tree.self[node] ? ' (' + fmtInt(tree.self[node]) + ' self)' : ''),
        tree.waiting[node] ? (tree.waiting[node] === tree.total[node] ? 'all waiting' : fmtInt(tree.waiting[node]) +
          ' waiting') + waitKinds(tree.waiting[node], tree.runnable[node]) : null,
        fmtPct(tree.total[node], tree.total[0]) + ' of all samples',
        zoom && inZoom ? fmtPct(tree.total[node], tree.total[zoom]) + ' of the zoomed frame' : null,
        node === zoom ? null : inZoom ? 'Click to zoom in' : 'Click to zoom out to this frame'
      ]);
    });
    svg.addEventListener('mouseleave', hideTooltip);
    reset.addEventListener('click', function () {
      state.zoom = 0;
      render();
    });
    mergedButton.addEventListener('click', function () { useTree('merged'); });
    threadButton.addEventListener('click', function () { useTree('perThread'); });
    cpuButton.addEventListener('click', function () { shared.setWall(false); });
    wallButton.addEventListener('click', function () { shared.setWall(true); });
    shared.onWall(function () { useTree(state.mode); });

    var searchTimer = 0;
    search.addEventListener('input', function () {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(function () {
        var query = search.value.trim();
        state.matches = query ? matchNames(data.names, query, data.fullNames, data.locations) : null;
        updateMatchInfo();
        render();
        shared.setMatches(state.matches);
      }, 120);
    });

    useTree('merged');
    return { render: render };
  }

  /**
   * Which frames to draw when `zoom` fills `width` pixels: the zoomed frame and its ancestors
   * full width, then its descendants breadth-first so that a capped drawing keeps the upper
   * rows whole. A frame narrower than FG_MIN_PX is skipped with its subtree (all narrower still).
   */
  function flameLayout(tree, zoom, width) {
    var frames = [];
    var deepest = 0;
    var elements = 0;
    var labelled = 3 * FG_CHAR + 6; // the narrowest frame that gets a label (see fitLabel)
    var scale = width / Math.max(1, tree.total[zoom]);
    function place(node, x, w, ancestor) {
      frames.push({ node: node, x: x, w: w, ancestor: ancestor });
      deepest = Math.max(deepest, tree.depth[node]);
      elements += w >= labelled ? 2 : 1;
    }
    for (var a = zoom; ; a = tree.parent[a]) {
      place(a, 0, width, a !== zoom);
      if (a <= 0 || tree.parent[a] < 0 || tree.parent[a] >= a) break;
    }
    var queue = [zoom];
    for (var head = 0; head < queue.length; head++) {
      var node = queue[head];
      // Children are contiguous subtrees: the next sibling starts where a subtree ends.
      for (var child = node + 1; child < tree.end[node]; child = tree.end[child]) {
        var w = tree.total[child] * scale;
        if (w < FG_MIN_PX) continue;
        if (elements >= FG_MAX_ELEMENTS) return { frames: frames, deepest: deepest, capped: true };
        place(child, (tree.x[child] - tree.x[zoom]) * scale, w, false);
        queue.push(child);
      }
    }
    return { frames: frames, deepest: deepest, capped: false };
  }

  /** A rect (and a label when it fits) per placed frame. */
  function flameFrames(tree, frames, matches) {
    var fragment = document.createDocumentFragment();
    frames.forEach(function (frame) {
      var node = frame.node;
      var name = treeLabel(tree, node);
      var y = tree.depth[node] * FG_ROW;
      var matched = matches && node !== 0 && matches[tree.name[node]] === 1;
      var waiting = node !== 0 && tree.waiting[node] > 0 && tree.waiting[node] >= tree.total[node];
      fragment.appendChild(svgEl('rect', {
        class: 'fg-frame' + (frame.ancestor ? ' fg-ancestor' : '') + (node === 0 ? ' fg-root' : '') +
          (matched ? ' fg-match' : '') + (waiting ? ' fg-waiting' : ''),
        x: frame.x.toFixed(2), y: y, width: Math.max(frame.w, 0.5).toFixed(2), height: FG_ROW - 1,
        fill: waiting ? (tree.runnable[node] >= tree.waiting[node] ? RUNNABLE_FILL : WAITING_FILL) : flameColour(name),
        'data-i': node
      }));
      var label = fitLabel(name, frame.w, FG_CHAR);
      if (label) fragment.appendChild(svgText((frame.x + 3).toFixed(2), y + FG_ROW - 5, 'fg-label', label));
    });
    return fragment;
  }

  // ------------------------------------------------------------------ 3. Flame charts

  var FC_SPAN_ROW = 18;
  var FC_BAR_ROW = 15;
  var FC_MAX_SPAN_ROWS = 6;
  var FC_MIN_PX = 0.5;
  var FC_MAX_ELEMENTS = 6000; // per chart
  var FC_CHAR = 6.2; // px per character of the 10px monospace label font
  var FC_AXIS_HEIGHT = 50;
  var MARKER_KINDS = ['phase', 'firstFrame', 'state', 'hang', 'mark', 'termination'];

  /** Bars grouped by depth (each depth keeps its time order) and spans packed into rows. */
  function prepareThread(thread, laneOf) {
    var bars = thread.bars && typeof thread.bars === 'object' ? thread.bars : {};
    var nameCol = list(bars.name);
    var depthCol = list(bars.depth);
    var startCol = list(bars.start);
    var endCol = list(bars.end);
    var waitingCol = list(bars.waiting);
    var n = Math.min(nameCol.length, depthCol.length, startCol.length, endCol.length);
    var prepared = {
      id: thread.id, label: oneLine(thread.label) || 'thread ' + str(thread.id), isMain: !!thread.isMain,
      process: oneLine(str(thread.process)), processDetail: oneLine(str(thread.processDetail)),
      samples: numOr(thread.samples, 0), running: numOr(thread.running, numOr(thread.samples, 0)), barCount: n,
      byDepth: [], name: new Int32Array(n), start: new Float64Array(n), end: new Float64Array(n),
      waiting: new Uint8Array(n)
    };
    var counts = [];
    var i;
    for (i = 0; i < n; i++) {
      prepared.name[i] = nameCol[i] | 0;
      prepared.start[i] = +startCol[i] || 0;
      prepared.end[i] = Math.max(prepared.start[i], +endCol[i] || 0);
      prepared.waiting[i] = waitingCol[i] === 2 ? 2 : waitingCol[i] ? 1 : 0;
      var d = Math.max(0, depthCol[i] | 0);
      counts[d] = (counts[d] || 0) + 1;
    }
    for (i = 0; i < counts.length; i++) prepared.byDepth.push(new Int32Array(counts[i] || 0));
    var filled = new Int32Array(counts.length);
    for (i = 0; i < n; i++) {
      var depth = Math.max(0, depthCol[i] | 0);
      prepared.byDepth[depth][filled[depth]++] = i;
    }
    // The contract promises time order within a depth; sort only when a producer broke it.
    prepared.byDepth.forEach(function (indices) {
      for (var k = 1; k < indices.length; k++) {
        if (prepared.start[indices[k]] < prepared.start[indices[k - 1]]) {
          indices.sort(function (x, y) { return prepared.start[x] - prepared.start[y]; });
          return;
        }
      }
    });
    prepared.spans = prepareSpans(thread.spans, laneOf);
    prepared.spanRows = prepared.spans.rows;
    prepared.barsTop = 4 + prepared.spanRows * FC_SPAN_ROW + (prepared.spanRows ? 6 : 0);
    prepared.height = prepared.barsTop + prepared.byDepth.length * FC_BAR_ROW + 4;
    return prepared;
  }

  /** Spans sorted by start and packed greedily into at most FC_MAX_SPAN_ROWS rows. */
  function prepareSpans(raw, laneOf) {
    var spans = list(raw).filter(function (span) {
      return span && isNum(span.startMs) && isNum(span.endMs);
    }).map(function (span) {
      var name = oneLine(span.name);
      return {
        name: name, category: str(span.category), critical: !!span.critical, lane: laneOf.get(name) || '',
        startMs: span.startMs, endMs: Math.max(span.startMs, span.endMs)
      };
    });
    // Longer spans first at equal starts, so an enclosing phase sits above its tasks.
    spans.sort(function (a, b) { return a.startMs - b.startMs || (b.endMs - b.startMs) - (a.endMs - a.startMs); });
    var rowEnds = [];
    spans.forEach(function (span) {
      var row = 0;
      while (row < rowEnds.length && rowEnds[row] > span.startMs) row++;
      row = Math.min(row, FC_MAX_SPAN_ROWS - 1);
      rowEnds[row] = Math.max(row < rowEnds.length ? rowEnds[row] : -Infinity, span.endMs);
      span.row = row;
    });
    spans.rows = rowEnds.length;
    return spans;
  }

  /** Vertical markers shared by every chart: phase starts, first frame, states, hangs, marks, termination. */
  function timelineMarkers(data) {
    var markers = [];
    function add(kind, name, timeMs, endMs) {
      markers.push({ kind: kind, name: name, timeMs: timeMs, endMs: isNum(endMs) ? endMs : null });
    }
    function has(kind) {
      return markers.some(function (m) { return m.kind === kind; });
    }
    data.phases.forEach(function (phase, index) {
      if (index > 0) add('phase', 'start of ' + oneLine(phase.name), phase.startMs);
    });
    data.markers.forEach(function (marker) {
      var kind = MARKER_KINDS.indexOf(marker.kind) >= 0 ? marker.kind : 'other';
      add(kind, oneLine(marker.name) || kind, marker.timeMs, marker.endMs);
    });
    if (data.ttffMs !== null && !has('firstFrame')) add('firstFrame', 'first frame', data.ttffMs);
    if (!has('hang')) {
      data.hangs.forEach(function (hang) {
        if (isNum(hang.startMs)) add('hang', 'hang', hang.startMs, hang.startMs + numOr(hang.durationMs, 0));
      });
    }
    var termination = data.budgets.termination;
    if (termination && isNum(termination.timeMs) && !has('termination')) {
      add('termination', 'termination: ' + oneLine(termination.reason), termination.timeMs);
    }
    return markers;
  }

  /** A round tick step giving roughly one tick per `pixels` pixels. */
  function tickStep(span, width, pixels) {
    var raw = span / Math.max(1, width / pixels);
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var fraction = raw / power;
    return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
  }

  function tickLabel(value, step) {
    var digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    return groupThousands(value.toFixed(Math.min(digits, 4))) + ' ms';
  }

  /**
   * One flame chart per thread over a shared time window (`tl.win`): the wheel zooms around
   * the pointer (a horizontal wheel pans), dragging pans, the buttons zoom around the centre.
   */
  function drawTimeline(app, data, shared) {
    var view = card('timeline', 'Timeline',
      'One flame chart per thread: spans (tasks coloured by lane, critical path outlined), then sampled stacks ' +
      'by depth. Scroll over a chart to zoom around the pointer, drag to pan.');
    app.appendChild(view.section);
    var end = data.endMs > 0 ? data.endMs : 1;
    var laneOf = new Map();
    data.tasks.forEach(function (task) { if (!laneOf.has(task.name)) laneOf.set(task.name, task.lane); });
    var tl = {
      data: data, shared: shared, full: end, minSpan: Math.min(0.05, end), win: { t0: 0, t1: end },
      markers: timelineMarkers(data), charts: [], axisItems: [], pending: false,
      laneColour: makeLaneColours(data.tasks.map(function (task) { return task.lane; }))
    };
    tl.hangs = tl.markers.filter(function (m) { return m.kind === 'hang' && m.endMs !== null; });
    var threads = data.threads.map(function (thread) { return prepareThread(thread, laneOf); });
    // Threads of several processes stay grouped by process, in the order the processes started.
    var processOrder = [];
    threads.forEach(function (thread) { if (processOrder.indexOf(thread.process) < 0) processOrder.push(thread.process); });
    threads.sort(function (a, b) {
      var byProcess = processOrder.indexOf(a.process) - processOrder.indexOf(b.process);
      return byProcess || (b.isMain ? 1 : 0) - (a.isMain ? 1 : 0);
    });
    if (!threads.length) {
      view.section.appendChild(emptyNote('No threads were sampled.'));
      return { render: function () {} };
    }

    var zoomOut = h('button', { type: 'button', title: 'Zoom out', 'aria-label': 'Zoom out' }, '−');
    var zoomIn = h('button', { type: 'button', title: 'Zoom in', 'aria-label': 'Zoom in' }, '+');
    var reset = h('button', { type: 'button' }, 'Reset');
    tl.readout = h('span', { class: 'window-readout', 'aria-live': 'polite' });
    append(view.head, h('div', { class: 'controls' }, [tl.readout, zoomOut, zoomIn, reset]));
    view.section.appendChild(timelineLegend(data, tl.markers, tl.laneColour));
    tl.axis = svgEl('svg', { class: 'fc-axis', role: 'img', 'aria-label': 'Time axis' });
    tl.body = h('div', { class: 'timeline' }, h('div', { class: 'timeline-axis' }, tl.axis));
    view.section.appendChild(tl.body);
    var group = null;
    tl.charts = threads.map(function (thread) {
      if (thread.process && thread.process !== group) {
        group = thread.process;
        tl.body.appendChild(h('div', { class: 'process-group' }, [
          h('span', { class: 'process-name' }, 'Process ' + thread.process),
          h('span', { class: 'thread-meta' }, thread.processDetail)
        ]));
      }
      return addThreadChart(tl, thread);
    }).filter(Boolean);
    attachPanZoom(tl, tl.axis, { items: tl.axisItems });

    zoomIn.addEventListener('click', function () { zoomAround(tl, 0.5, 0.5); });
    zoomOut.addEventListener('click', function () { zoomAround(tl, 0.5, 2); });
    reset.addEventListener('click', function () { setWindow(tl, 0, tl.full); });
    shared.onMatches(function () { scheduleTimeline(tl); });
    renderTimeline(tl);
    return { render: function () { renderTimeline(tl); } };
  }

  /** A collapsible section per thread; threads without bars or spans say so instead of drawing. */
  function addThreadChart(tl, thread) {
    var empty = !thread.barCount && !thread.spans.length;
    var meta = empty ? 'no samples' : plural(thread.samples, 'sample') + ' (' + fmtInt(thread.running) +
      ' running) · ' + plural(thread.barCount, 'bar') +
      ' · ' + plural(thread.spans.length, 'span');
    var details = h('details', { class: 'thread', open: empty ? null : '' }, h('summary', null, [
      h('span', { class: 'thread-name' }, thread.label),
      thread.isMain ? h('span', { class: 'badge badge-main' }, 'main thread') : null,
      h('span', { class: 'thread-meta' }, meta)
    ]));
    tl.body.appendChild(details);
    if (empty) {
      details.appendChild(h('p', { class: 'no-samples' }, 'No samples or spans were recorded on this thread.'));
      return null;
    }
    var svg = svgEl('svg', {
      class: 'flame-chart', 'data-thread': thread.id, role: 'img', 'aria-label': 'Flame chart of ' + thread.label
    });
    var note = h('div', { class: 'fc-note', hidden: '' });
    append(details, [svg, note]);
    var chart = { thread: thread, svg: svg, note: note, items: [], visible: undefined, stale: false };
    attachPanZoom(tl, svg, chart);
    watchVisibility(tl, chart);
    return chart;
  }

  // Charts scrolled out of view (or collapsed) are only marked stale and drawn when they come
  // back into view, so that zooming a profile with many threads redraws just what is seen.
  function watchVisibility(tl, chart) {
    if (typeof IntersectionObserver !== 'function') return;
    if (!tl.observer) {
      tl.observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (entry) {
          var seen = tl.charts.filter(function (c) { return c.svg === entry.target; })[0];
          if (!seen) return;
          seen.visible = entry.isIntersecting;
          if (seen.visible && seen.stale) {
            seen.stale = false;
            drawChart(tl, seen, tl.width);
          }
        });
      }, { rootMargin: '300px 0px' });
    }
    tl.observer.observe(chart.svg);
  }

  function renderTimeline(tl) {
    var width = Math.max(300, tl.body.clientWidth);
    tl.width = width;
    drawAxis(tl, width);
    tl.charts.forEach(function (chart) {
      chart.stale = chart.visible === false;
      if (!chart.stale) drawChart(tl, chart, width);
    });
    tl.readout.textContent = 'Showing ' + msNumber(tl.win.t0) + '–' + fmtMs(tl.win.t1) +
      ' (' + fmtMs(tl.win.t1 - tl.win.t0) + ')';
  }

  // Bursts of wheel and drag events are coalesced into one redraw per animation frame; the
  // timer covers pages whose animation frames are throttled (hidden or headless).
  function scheduleTimeline(tl) {
    if (tl.pending) return;
    tl.pending = true;
    function run() {
      if (!tl.pending) return;
      tl.pending = false;
      renderTimeline(tl);
    }
    requestAnimationFrame(run);
    setTimeout(run, 100);
  }

  function setWindow(tl, t0, span) {
    span = clamp(span, tl.minSpan, tl.full);
    tl.win.t0 = clamp(t0, 0, tl.full - span);
    tl.win.t1 = tl.win.t0 + span;
    scheduleTimeline(tl);
  }

  /** Zooms by `factor`, keeping the time under `fraction` of the width where it is. */
  function zoomAround(tl, fraction, factor) {
    var span = tl.win.t1 - tl.win.t0;
    var next = clamp(span * factor, tl.minSpan, tl.full);
    setWindow(tl, tl.win.t0 + fraction * (span - next), next);
  }

  /** Phase bands, time ticks and a flag per marker (labelled for the first frame and termination). */
  function drawAxis(tl, w) {
    var axis = tl.axis;
    var win = tl.win;
    var k = w / (win.t1 - win.t0);
    var fragment = document.createDocumentFragment();
    tl.axisItems.length = 0;
    tl.data.phases.forEach(function (phase, index) {
      var x0 = clamp((phase.startMs - win.t0) * k, 0, w);
      var x1 = clamp((phase.endMs - win.t0) * k, 0, w);
      if (x1 - x0 < 1) return;
      fragment.appendChild(svgEl('rect', {
        class: 'fc-phase-band' + (index % 2 ? ' odd' : ''), x: x0, y: 0, width: x1 - x0, height: 16
      }));
      var label = fitLabel(oneLine(phase.name), x1 - x0, 6.4);
      if (label) fragment.appendChild(svgText(x0 + 4, 12, 'fc-phase-label', label));
    });
    var step = tickStep(win.t1 - win.t0, w, 110);
    for (var t = Math.ceil(win.t0 / step) * step; t <= win.t1; t += step) {
      var x = (t - win.t0) * k;
      fragment.appendChild(svgEl('line', { class: 'fc-tick', x1: x, x2: x, y1: 16, y2: 22 }));
      if (x < w - 40) fragment.appendChild(svgText(x + 3, 31, 'fc-tick-label', tickLabel(t, step)));
    }
    var labels = [];
    tl.markers.forEach(function (marker) {
      var mx = (marker.timeMs - win.t0) * k;
      if (marker.kind === 'phase' || mx < -1 || mx > w + 1) return;
      var triangle = 'M' + (mx - 4) + ',36 L' + (mx + 4) + ',36 L' + mx + ',44 Z';
      fragment.appendChild(svgEl('path', { class: 'fc-flag ' + marker.kind, d: triangle }));
      if (marker.kind === 'firstFrame' || marker.kind === 'termination') {
        var text = (marker.kind === 'firstFrame' ? 'first frame ' : 'terminated ') + fmtMs(marker.timeMs);
        var flipped = mx + 8 + text.length * 6 > w;
        var label = svgText(flipped ? mx - 7 : mx + 7, 44, 'fc-flag ' + marker.kind, text);
        if (flipped) label.setAttribute('text-anchor', 'end');
        labels.push(label);
      }
      tl.axisItems.push({ kind: 'marker', marker: marker });
      fragment.appendChild(svgEl('rect', {
        class: 'fc-flag-hit', x: mx - 6, y: 33, width: 12, height: 14, 'data-i': tl.axisItems.length - 1
      }));
    });
    // The few labelled flags go last, so their white halo keeps them readable over other flags.
    labels.forEach(function (label) { fragment.appendChild(label); });
    axis.textContent = '';
    setAttrs(axis, { width: w, height: FC_AXIS_HEIGHT, viewBox: '0 0 ' + w + ' ' + FC_AXIS_HEIGHT });
    axis.appendChild(fragment);
  }

  /**
   * Redraws one thread's chart for the current window. `paint` collects the elements, the
   * hover items (looked up by data-i) and the element budget shared by spans and bars.
   */
  function drawChart(tl, chart, w) {
    var thread = chart.thread;
    var k = w / (tl.win.t1 - tl.win.t0);
    var paint = {
      fragment: document.createDocumentFragment(), items: [], elements: 0, capped: false, w: w,
      px: function (t) { return clamp((t - tl.win.t0) * k, -2, w + 2); }
    };
    tl.hangs.forEach(function (hang) {
      var x0 = paint.px(hang.timeMs);
      var x1 = paint.px(hang.endMs);
      if (x1 - x0 >= 0.5) {
        var box = { class: 'fc-hang', x: x0, y: 0, width: x1 - x0, height: thread.height };
        addItem(paint, { kind: 'hang', marker: hang }, 'rect', box);
      }
    });
    if (thread.spanRows) {
      var y = thread.barsTop - 3.5;
      paint.fragment.appendChild(svgEl('line', { class: 'fc-divider', x1: 0, x2: w, y1: y, y2: y }));
    }
    drawSpans(tl, thread, paint);
    drawBars(tl, thread, paint);
    tl.markers.forEach(function (marker) {
      var x = (marker.timeMs - tl.win.t0) * k;
      if (x >= -1 && x <= w + 1) {
        var line = { class: 'fc-marker ' + marker.kind, x1: x, x2: x, y1: 0, y2: thread.height };
        paint.fragment.appendChild(svgEl('line', line));
      }
    });
    chart.items = paint.items;
    chart.svg.textContent = '';
    setAttrs(chart.svg, { width: w, height: thread.height, viewBox: '0 0 ' + w + ' ' + thread.height });
    chart.svg.appendChild(paint.fragment);
    chart.note.hidden = !paint.capped;
    chart.note.textContent = paint.capped
      ? 'Drawing stopped at ' + fmtInt(FC_MAX_ELEMENTS) + ' elements on this thread; zoom in to see the deeper frames.' : '';
  }

  /** Adds an element that shows a tooltip on hover. */
  function addItem(paint, item, tag, attrs) {
    paint.items.push(item);
    attrs['data-i'] = paint.items.length - 1;
    paint.fragment.appendChild(svgEl(tag, attrs));
    paint.elements++;
  }

  /** A label inside a box from x0 to x1, kept inside the visible part of the box. */
  function addBoxLabel(paint, x0, x1, y, cls, text, charWidth) {
    var left = Math.max(x0, 0);
    var label = fitLabel(text, Math.min(x1, paint.w) - left, charWidth);
    if (!label) return;
    paint.fragment.appendChild(svgText((left + 3).toFixed(2), y, cls, label));
    paint.elements++;
  }

  function drawSpans(tl, thread, paint) {
    thread.spans.forEach(function (span) {
      if (span.endMs <= tl.win.t0 || span.startMs >= tl.win.t1 || paint.elements >= FC_MAX_ELEMENTS) return;
      var x0 = paint.px(span.startMs);
      var x1 = paint.px(span.endMs);
      if (x1 - x0 < FC_MIN_PX) return;
      var y = 4 + span.row * FC_SPAN_ROW;
      var fill = span.category === 'task' || span.lane ? tl.laneColour(span.lane)
        : span.category === 'phase' ? '#8b93a1' : '#6b7d8f';
      addItem(paint, { kind: 'span', span: span }, 'rect', {
        class: 'fc-span' + (span.critical ? ' fc-critical' : ''), x: x0.toFixed(2), y: y, width: (x1 - x0).toFixed(2),
        height: FC_SPAN_ROW - 3, rx: 2, fill: fill
      });
      addBoxLabel(paint, x0, x1, y + FC_SPAN_ROW - 7, 'fc-span-label', span.name, FC_CHAR + 0.6);
    });
  }

  // Sample bars, depth by depth so that a capped drawing keeps the outer frames: within a depth
  // bars are disjoint and time-ordered, so a binary search finds the first visible one and the
  // walk stops at the window's end.
  function drawBars(tl, thread, paint) {
    var matches = tl.shared.matches;
    for (var depth = 0; depth < thread.byDepth.length; depth++) {
      var indices = thread.byDepth[depth];
      var y = thread.barsTop + depth * FC_BAR_ROW;
      for (var at = firstVisible(thread, indices, tl.win.t0); at < indices.length; at++) {
        var bar = indices[at];
        if (thread.start[bar] >= tl.win.t1) break;
        // CPU shows where threads ran; Wall clock also shows their waits, in grey.
        var waiting = thread.waiting[bar] !== 0;
        if (waiting && !tl.shared.wall) continue;
        var x0 = paint.px(thread.start[bar]);
        var x1 = paint.px(thread.end[bar]);
        if (x1 - x0 < FC_MIN_PX) continue;
        if (paint.elements >= FC_MAX_ELEMENTS) {
          paint.capped = true;
          return;
        }
        var name = frameName(tl.data.names, thread.name[bar]);
        var matched = matches && matches[thread.name[bar]] === 1;
        addItem(paint, { kind: 'bar', bar: bar, depth: depth }, 'rect', {
          class: 'fc-bar' + (matched ? ' fc-match' : '') + (waiting ? ' fc-waiting' : ''), x: x0.toFixed(2), y: y,
          width: (x1 - x0).toFixed(2), height: FC_BAR_ROW - 1,
          fill: thread.waiting[bar] === 2 ? RUNNABLE_FILL : waiting ? WAITING_FILL : flameColour(name)
        });
        addBoxLabel(paint, x0, x1, y + FC_BAR_ROW - 4, 'fc-label', name, FC_CHAR);
      }
    }
  }

  /** First index in `indices` (one depth, time-ordered, disjoint) whose bar ends after `t0`. */
  function firstVisible(thread, indices, t0) {
    var low = 0;
    var high = indices.length;
    while (low < high) {
      var mid = (low + high) >> 1;
      if (thread.start[indices[mid]] < t0) low = mid + 1;
      else high = mid;
    }
    if (low > 0 && thread.end[indices[low - 1]] > t0) low--;
    return low;
  }

  function frameName(names, index) {
    var name = names[index];
    return name === undefined ? '(unknown frame)' : name;
  }

  /** Tooltip, wheel zoom and drag-to-pan for one chart or the axis. */
  function attachPanZoom(tl, svg, chart) {
    var drag = null;
    svg.addEventListener('wheel', function (event) {
      var box = svg.getBoundingClientRect();
      var unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? box.width : 1;
      var dx = event.deltaX * unit;
      var dy = event.deltaY * unit;
      event.preventDefault();
      if (Math.abs(dx) > Math.abs(dy)) {
        setWindow(tl, tl.win.t0 + (dx / box.width) * (tl.win.t1 - tl.win.t0), tl.win.t1 - tl.win.t0);
      } else {
        zoomAround(tl, clamp((event.clientX - box.left) / box.width, 0, 1), Math.exp(clamp(dy, -300, 300) * 0.002));
      }
    }, { passive: false });
    svg.addEventListener('pointerdown', function (event) {
      if (event.button !== 0) return;
      drag = { x: event.clientX, t0: tl.win.t0, width: svg.getBoundingClientRect().width };
      try {
        svg.setPointerCapture(event.pointerId);
      } catch (error) {
        // The pointer is already gone: the drag ends at the next pointerup.
      }
      svg.classList.add('dragging');
      hideTooltip();
    });
    svg.addEventListener('pointermove', function (event) {
      if (drag) {
        var span = tl.win.t1 - tl.win.t0;
        setWindow(tl, drag.t0 - ((event.clientX - drag.x) / drag.width) * span, span);
        return;
      }
      var index = event.target.getAttribute('data-i');
      var item = index === null ? null : chart.items[+index];
      if (item) showTimelineTooltip(event, item, chart.thread, tl.data.names, tl.data.fullNames, tl.data.locations);
      else hideTooltip();
    });
    function endDrag() {
      drag = null;
      svg.classList.remove('dragging');
    }
    svg.addEventListener('pointerup', endDrag);
    svg.addEventListener('pointercancel', endDrag);
    svg.addEventListener('mouseleave', hideTooltip);
  }

  function showTimelineTooltip(event, item, thread, names, fullNames, locations) {
    if (item.kind === 'bar') {
      var start = thread.start[item.bar];
      showTooltip(event, frameName(names, thread.name[item.bar]), [
        fullNames[thread.name[item.bar]] || null,
        (locations && locations[thread.name[item.bar]]) || null,
        (thread.waiting[item.bar] === 2 ? 'runnable: waiting for a core · '
          : thread.waiting[item.bar] ? 'blocked · ' : '') +
          'start ' + fmtMs(start) + ' · duration ' + fmtMs(thread.end[item.bar] - start),
        'depth ' + item.depth + ' · ' + thread.label
      ]);
    } else if (item.kind === 'span') {
      var span = item.span;
      showTooltip(event, span.name, [
        'start ' + fmtMs(span.startMs) + ' · duration ' + fmtMs(span.endMs - span.startMs),
        [span.category || 'span', span.lane ? 'lane ' + span.lane : ''].filter(Boolean).join(' · '),
        span.critical ? 'On the critical path to the first frame' : null
      ]);
    } else {
      var marker = item.marker;
      showTooltip(event, marker.name, [
        marker.kind + ' at ' + fmtMs(marker.timeMs) +
          (marker.endMs !== null ? ' · lasted ' + fmtMs(marker.endMs - marker.timeMs) : '')
      ]);
    }
  }

  function timelineLegend(data, markers, laneColour) {
    var legend = h('div', { class: 'legend' });
    function entry(swatchClass, colour, label) {
      var swatch = h('span', { class: 'swatch' + (swatchClass ? ' ' + swatchClass : '') });
      if (colour) swatch.style.background = colour;
      legend.appendChild(h('span', { class: 'legend-item', title: label }, [swatch, label]));
    }
    var lanes = [];
    data.tasks.forEach(function (task) { if (task.lane && lanes.indexOf(task.lane) < 0) lanes.push(task.lane); });
    lanes.forEach(function (lane) { entry(null, laneColour(lane), lane); });
    if (data.tasks.some(function (task) { return task.critical; })) entry('critical', null, 'critical path');
    var kinds = [
      ['firstFrame', '#1a7f37', 'first frame'], ['phase', '#8b93a1', 'phase boundary'], ['state', '#2f6fde', 'state change'],
      ['hang', null, 'hang'], ['mark', '#7b53c1', 'mark'], ['termination', '#1c2230', 'termination']
    ];
    kinds.forEach(function (kind) {
      var present = markers.some(function (m) { return m.kind === kind[0]; });
      if (present) entry(kind[0] === 'hang' ? 'hang' : 'line', kind[1], kind[2]);
    });
    return legend;
  }

  // ------------------------------------------------------------------ 4. Task table

  var TASK_COLUMNS = [
    { key: 'name', label: 'Task', type: 'text' },
    { key: 'lane', label: 'Lane', type: 'text' },
    { key: 'thread', label: 'Thread', type: 'text' },
    { key: 'startMs', label: 'Start (ms)', type: 'num' },
    { key: 'durationMs', label: 'Duration', type: 'num' },
    { key: 'waitMs', label: 'Wait', type: 'num' },
    { key: 'cpuMs', label: 'CPU', type: 'num' },
    { key: 'slackMs', label: 'Slack', type: 'num' },
    { key: 'critical', label: 'Critical path', type: 'bool' },
    { key: 'couldDefer', label: 'Could defer', type: 'bool' },
    { key: 'status', label: 'Status', type: 'text' }
  ];
  var TASK_PAGE = 200;
  var STATUSES = ['completed', 'failed', 'timedOut', 'cancelled', 'skipped', 'pending'];

  /** Sort key comparison with missing values last whatever the direction. */
  function compareTasks(a, b, column, direction) {
    var x = a[column.key];
    var y = b[column.key];
    if (column.type === 'num') {
      var xMissing = !isNum(x);
      var yMissing = !isNum(y);
      if (xMissing || yMissing) return xMissing === yMissing ? 0 : xMissing ? 1 : -1;
      return (x - y) * direction;
    }
    if (column.type === 'bool') return ((y ? 1 : 0) - (x ? 1 : 0)) * direction; // "ascending" puts true first
    return str(x).localeCompare(str(y)) * direction;
  }

  // Spans as launch metrics: each with its duration, CPU time and samples, nested under its parent.
  function drawSpanTable(app, data) {
    var view = card('spans', 'Spans',
      'Spans of the program (LaunchRecorder, tracing, services), nested under their parents. ' +
      'Samples are those of the span\'s Swift task (or thread) while it ran, and of every Swift task it started ' +
      '(async let, task groups, Task {}; not Task.detached).');
    app.appendChild(view.section);
    if (!data.spanRows.length) {
      view.section.appendChild(emptyNote('No spans were recorded. Wrap launch steps in recorder.span(…) to measure them.'));
      return;
    }
    // Spans that started Swift tasks: how many, and how long their jobs waited for a thread.
    var tasks = data.spanRows.some(function (row) { return isNum(row.childTasks) || isNum(row.scheduledMs); });
    var columns = [
      { label: 'Span' }, { label: 'Thread' }, { label: 'Start (ms)', num: true }, { label: 'Duration (ms)', num: true },
      { label: 'CPU (ms)', num: true }, { label: 'Running samples', num: true }, { label: 'Waiting samples', num: true }
    ];
    if (tasks) columns.push({ label: 'Tasks started', num: true }, { label: 'Waited to run (ms)', num: true });
    view.section.appendChild(table(
      columns,
      data.spanRows.slice(0, LIST_LIMIT).map(function (row) {
        var depth = clamp(numOr(row.depth, 0), 0, 8);
        var cells = [
          h('td', {
            class: 'span-name', style: 'padding-left: ' + (0.5 + depth * 1.1) + 'em',
            title: typeof row.attributes === 'string' ? oneLine(row.attributes) : null
          }, oneLine(row.name)),
          cell(oneLine(row.thread)), cell(tableMs(row.startMs), true), cell(tableMs(row.durationMs), true),
          cell(tableMs(row.cpuMs), true), cell(isNum(row.samples) ? fmtInt(row.samples) : '', true),
          cell(isNum(row.waitingSamples) ? fmtInt(row.waitingSamples) : '', true)
        ];
        if (tasks) {
          cells.push(cell(isNum(row.childTasks) ? fmtInt(row.childTasks) : '', true), cell(tableMs(row.scheduledMs), true));
        }
        return h('tr', null, cells);
      })
    ));
    if (data.spanRows.length > LIST_LIMIT) {
      view.section.appendChild(h('p', { class: 'muted' }, '… and ' + (data.spanRows.length - LIST_LIMIT) + ' more spans.'));
    }
  }

  function drawTasks(app, data) {
    var view = card('tasks', 'Launch tasks');
    app.appendChild(view.section);
    view.section.appendChild(launchAnswer(data));
    if (!data.tasks.length) {
      view.section.appendChild(emptyNote());
      return;
    }
    var laneColour = makeLaneColours(data.tasks.map(function (task) { return task.lane; }));
    var sort = { column: TASK_COLUMNS[3], direction: 1 };
    var shown = TASK_PAGE;
    var rows = data.tasks.map(function (task, index) { return { task: task, index: index }; });

    var headRow = h('tr');
    var headers = TASK_COLUMNS.map(function (column) {
      var button = h('button', { type: 'button' }, column.label);
      var th = h('th', { scope: 'col', class: column.type === 'num' ? 'num' : null }, button);
      button.addEventListener('click', function () {
        sort.direction = sort.column === column ? -sort.direction : 1;
        sort.column = column;
        renderRows();
      });
      headRow.appendChild(th);
      return th;
    });
    var tbody = h('tbody');
    var more = h('div', { class: 'more-row' });
    var tableNode = h('table', { class: 'task-table' }, [h('thead', null, headRow), tbody]);
    append(view.section, [h('div', { class: 'table-wrap' }, tableNode), more]);

    function renderRows() {
      rows.sort(function (a, b) {
        return compareTasks(a.task, b.task, sort.column, sort.direction) || a.index - b.index;
      });
      headers.forEach(function (th, index) {
        var active = TASK_COLUMNS[index] === sort.column;
        th.setAttribute('aria-sort', active ? (sort.direction > 0 ? 'ascending' : 'descending') : 'none');
      });
      tbody.textContent = '';
      var fragment = document.createDocumentFragment();
      rows.slice(0, shown).forEach(function (row) { fragment.appendChild(taskRow(row.task, laneColour)); });
      tbody.appendChild(fragment);
      more.textContent = '';
      if (rows.length > shown) {
        var next = h('button', { type: 'button' }, 'Show ' + fmtInt(Math.min(TASK_PAGE * 5, rows.length - shown)) + ' more');
        var all = h('button', { type: 'button' }, 'Show all');
        next.addEventListener('click', function () { shown += TASK_PAGE * 5; renderRows(); });
        all.addEventListener('click', function () { shown = rows.length; renderRows(); });
        append(more, ['Showing ' + fmtInt(shown) + ' of ' + fmtInt(rows.length) + ' tasks.', next, all]);
      }
    }
    renderRows();
  }

  function taskRow(task, laneColour) {
    var chip = h('span', { class: 'lane-chip' });
    chip.style.background = laneColour(task.lane);
    var status = STATUSES.indexOf(task.status) >= 0 ? task.status : 'other';
    return h('tr', { class: task.critical ? 'is-critical' : null }, [
      cell([
        h('span', { class: 'task-name' }, task.name),
        task.dependencies.length ? h('span', { class: 'task-deps' }, 'after ' + task.dependencies.join(', ')) : null
      ]),
      h('td', { class: 'clip', title: task.lane }, [chip, task.lane || '—']),
      h('td', { class: 'clip', title: task.thread + (task.queue ? '\nqueue: ' + oneLine(task.queue) : '') },
        task.thread || '—'),
      cell(tableMs(task.startMs), true),
      cell(tableMs(task.durationMs), true),
      cell(tableMs(task.waitMs), true),
      cell(tableMs(task.cpuMs), true),
      cell(tableMs(task.slackMs), true),
      cell(task.critical ? h('span', { class: 'badge badge-critical' }, 'critical') : null),
      cell(task.couldDefer ? h('span', { class: 'badge badge-defer' }, 'could defer') : null),
      cell([
        h('span', { class: 'badge badge-status ' + status }, task.status || '—'),
        task.error ? h('span', { class: 'task-error' }, oneLine(task.error)) : null
      ])
    ]);
  }

  /** The newcomer's first question: what ran on the main thread before the first frame, and what could move. */
  function launchAnswer(data) {
    var onMain = makeMainTaskTest(data);
    var ttff = data.ttffMs;
    var ran = data.tasks.filter(function (task) {
      return onMain(task) && isNum(task.startMs) && (ttff === null || task.startMs < ttff);
    }).sort(function (a, b) { return a.startMs - b.startMs; });
    var answer = h('p', { class: 'answer' });
    function names(tasks, limit) {
      var parts = [];
      tasks.slice(0, limit).forEach(function (task, index) {
        if (index) parts.push(', ');
        parts.push(h('strong', null, task.name));
        if (isNum(task.durationMs)) parts.push(' (' + fmtMs(task.durationMs) + ')');
      });
      if (tasks.length > limit) parts.push(' and ' + fmtInt(tasks.length - limit) + ' more');
      return parts;
    }
    var when = ttff === null
      ? 'No first frame was committed. During the launch'
      : 'Before the first frame at ' + fmtMs(ttff);
    if (!ran.length) {
      return append(answer, when + ', no launch tasks ran on the main thread.');
    }
    var busy = ran.reduce(function (sum, task) { return sum + numOr(task.durationMs, 0); }, 0);
    append(answer, [when + ', the main thread ran ' + plural(ran.length, 'task') + ' (' + fmtMs(busy) + '): ']);
    append(answer, names(ran, 8));
    append(answer, '. ');
    var movable = ran.filter(function (task) { return task.couldDefer; });
    if (!movable.length) return append(answer, 'None of them could be deferred.');
    var saved = movable.reduce(function (sum, task) { return sum + numOr(task.durationMs, 0); }, 0);
    var could = movable.length === 1 ? 'One of them could move' : fmtInt(movable.length) + ' of them could move';
    append(answer, could + ' off the launch path: ');
    append(answer, names(movable, 8));
    return append(answer, ' — about ' + fmtMs(saved) + ' of main-thread time.');
  }

  // ------------------------------------------------------------------ 5. Violations, hangs, budgets, counts

  var LIST_LIMIT = 500;

  function drawIssues(app, data) {
    var view = card('issues', 'Violations and hangs');
    app.appendChild(view.section);

    view.section.appendChild(h('h3', null, 'Thread-rule violations'));
    if (!data.violations.length) view.section.appendChild(emptyNote());
    data.violations.slice(0, LIST_LIMIT).forEach(function (violation) {
      var count = numOr(violation.count, 1);
      var stack = list(violation.stack);
      view.section.appendChild(h('details', { class: 'violation' }, [
        h('summary', null, [
          h('span', { class: 'rule' }, oneLine(violation.rule) || 'violation'),
          h('span', { class: 'message' }, oneLine(violation.message)),
          h('span', { class: 'where' }, [
            oneLine(violation.thread) || 'unknown thread', ' · ', fmtMs(violation.timeMs),
            count > 1 ? ' · ×' + fmtInt(count) : ''
          ])
        ]),
        stack.length ? h('div', { class: 'stack-caption' }, 'Stack, innermost frame first') : null,
        stackList(stack)
      ]));
    });
    if (data.violations.length > LIST_LIMIT) {
      view.section.appendChild(h('p', { class: 'hint' },
        'Showing the first ' + fmtInt(LIST_LIMIT) + ' of ' + fmtInt(data.violations.length) + ' violations.'));
    }

    view.section.appendChild(h('h3', null, 'Hangs'));
    if (!data.hangs.length) {
      view.section.appendChild(emptyNote());
      return;
    }
    view.section.appendChild(table(
      [
        { label: 'Start (ms)', num: true }, { label: 'Duration (ms)', num: true }, { label: 'Running' },
        { label: 'Stacks', num: true }, { label: 'Top frames' }
      ],
      data.hangs.slice(0, LIST_LIMIT).map(function (hang) {
        var top = list(hang.topFrames);
        return h('tr', null, [
          cell(tableMs(hang.startMs), true),
          cell(tableMs(hang.durationMs), true),
          cell(oneLine(hang.running) || '—'),
          cell(fmtInt(hang.stacks), true),
          cell(top.length ? h('ol', { class: 'top-frames' }, top.map(function (frame) {
            var place = frame && typeof frame.location === 'string' ? ' (' + oneLine(frame.location) + ')' : '';
            return h('li', null, oneLine(frame && frame.name) + place + ' ×' + fmtInt(frame && frame.count));
          })) : '—')
        ]);
      })
    ));
  }

  function drawBudgets(app, data) {
    var budgets = data.budgets;
    var view = card('budgets', 'Budgets');
    app.appendChild(view.section);
    var frames = budgets.frames;
    var left = h('div', null, [
      h('h3', null, 'Frames'),
      h('div', { class: 'stats' }, [
        stat('Frames', fmtInt(frames.count)),
        stat('Slow', fmtInt(frames.slow), frames.slow ? 'warn' : null),
        stat('Frozen', fmtInt(frames.frozen), frames.frozen ? 'bad' : null)
      ]),
      h('h3', null, 'App state changes'),
      budgets.states.length ? h('ul', { class: 'state-list' }, budgets.states.map(function (change) {
        return h('li', null, [
          h('span', { class: 'num' }, fmtMs(change.timeMs)), oneLine(change.from) + ' → ' + oneLine(change.to)
        ]);
      })) : emptyNote()
    ]);
    var right = h('div', null, [h('h3', null, 'Background work')]);
    if (!budgets.background.length) right.appendChild(emptyNote());
    else {
      right.appendChild(table(
        [
          { label: 'Task' }, { label: 'Start (ms)', num: true }, { label: 'End (ms)', num: true },
          { label: 'Duration (ms)', num: true }, { label: 'CPU (ms)', num: true }
        ],
        budgets.background.slice(0, LIST_LIMIT).map(function (work) {
          return h('tr', null, [
            cell(oneLine(work.name)), cell(tableMs(work.startMs), true), cell(tableMs(work.endMs), true),
            cell(tableMs(work.durationMs), true), cell(tableMs(work.cpuMs), true)
          ]);
        })
      ));
    }
    right.appendChild(h('h3', null, 'Termination'));
    var termination = budgets.termination;
    right.appendChild(termination ? h('div', { class: 'termination' }, [
      h('div', { class: 'reason' }, oneLine(termination.reason) || 'terminated'),
      h('div', { class: 'muted' },
        'during ' + (oneLine(termination.phase) || 'an unknown phase') + ' at ' + fmtMs(termination.timeMs)),
      stackList(list(termination.stack))
    ]) : emptyNote('The process was not terminated during the profile.'));
    view.section.appendChild(h('div', { class: 'grid-2' }, [left, right]));
  }

  function drawCounts(app, data) {
    var counts = data.counts;
    var view = card('sampling', 'Sampling',
      'Every thread is sampled. A thread that ran since its last sample is signalled and its stack captured; ' +
      'one that did not, since a sample found it blocked, is recorded as still blocked there, without a signal. ' +
      'A signal that reaches a thread late found it runnable: preempted, waiting for a core.');
    app.appendChild(view.section);
    function count(key) {
      return numOr(counts[key], 0);
    }
    view.section.appendChild(h('div', { class: 'stats' }, [
      stat('Threads', fmtInt(count('threadsSeen'))),
      stat('Signals sent', fmtInt(count('signalsSent'))),
      stat('Captured', fmtInt(count('captured'))),
      stat('Waiting (no signal)', fmtInt(count('waiting'))),
      stat('Dropped', fmtInt(count('dropped')), count('dropped') ? 'warn' : null),
      stat('Failed', fmtInt(count('failed')), count('failed') ? 'bad' : null),
      stat('Skipped', fmtInt(count('skipped')), count('skipped') ? 'warn' : null),
      stat('Truncated', fmtInt(count('truncated')), count('truncated') ? 'warn' : null)
    ]));
  }

  // ------------------------------------------------------------------ Main

  /** State shared between views: the flame-graph search also highlights timeline bars, and the
   * CPU / wall-clock switch applies to both. */
  function makeShared() {
    var listeners = [];
    var wallListeners = [];
    var shared = {
      matches: null,
      wall: false,
      setMatches: function (matches) {
        shared.matches = matches;
        listeners.forEach(function (listener) { listener(); });
      },
      onMatches: function (listener) { listeners.push(listener); },
      // CPU (running samples) or wall clock (every sample), for the flame graph and the charts.
      setWall: function (wall) {
        if (shared.wall === wall) return;
        shared.wall = wall;
        wallListeners.forEach(function (listener) { listener(); });
        listeners.forEach(function (listener) { listener(); });
      },
      onWall: function (listener) { wallListeners.push(listener); }
    };
    return shared;
  }

  function main() {
    var started = performance.now();
    var app = document.getElementById('app');
    var source = document.getElementById('liftoff-data');
    if (!app || !source) throw new Error('the page has no #app or #liftoff-data element');
    var data = normalise(JSON.parse(source.textContent));
    app.textContent = '';
    var shared = makeShared();
    // `#wall` in the address opens the page on wall-clock samples.
    shared.wall = window.location.hash === '#wall';
    drawHeader(app, data);
    var flame = drawFlameGraph(app, data, shared);
    var timeline = drawTimeline(app, data, shared);
    drawSpanTable(app, data);
    drawTasks(app, data);
    drawIssues(app, data);
    drawBudgets(app, data);
    drawCounts(app, data);
    app.appendChild(h('footer', { class: 'footer' }, 'Generated by Liftoff. Times are milliseconds from process start.'));

    var resizeTimer = 0;
    var lastWidth = app.clientWidth;
    window.addEventListener('resize', function () {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(function () {
        if (app.clientWidth === lastWidth) return;
        lastWidth = app.clientWidth;
        flame.render();
        timeline.render();
      }, 150);
    });
    // Timings for the headless test: drawing alone, and from navigation start to drawn.
    document.body.dataset.drawMs = String(Math.round(performance.now() - started));
    document.body.dataset.readyAtMs = String(Math.round(performance.now()));
    if (document.body.dataset.ready !== 'error') document.body.dataset.ready = 'true';
  }

  try {
    main();
  } catch (error) {
    reportFailure(error && error.stack ? error.stack : String(error));
  }
})();
