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
      pathRank: isNum(thread.pathRank) ? thread.pathRank : Infinity, path: preparePath(thread.path),
      byDepth: [], name: new Int32Array(n), start: new Float64Array(n), end: new Float64Array(n),
      waiting: new Uint8Array(n)
    };
    var counts = [];
    var i;
    for (i = 0; i < n; i++) {
      prepared.name[i] = nameCol[i] | 0;
      prepared.start[i] = +startCol[i] || 0;
      prepared.end[i] = Math.max(prepared.start[i], +endCol[i] || 0);
      prepared.waiting[i] = waitingCol[i] === 3 ? 3 : waitingCol[i] === 2 ? 2 : waitingCol[i] ? 1 : 0;
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

  /** The thread's stretches on the path to ready, as [start, end] pairs in ms, in time order. */
  function preparePath(raw) {
    var flat = list(raw);
    var stretches = [];
    for (var i = 0; i + 1 < flat.length; i += 2) {
      if (isNum(flat[i]) && isNum(flat[i + 1]) && flat[i + 1] > flat[i]) stretches.push([flat[i], flat[i + 1]]);
    }
    stretches.sort(function (a, b) { return a[0] - b[0]; });
    stretches.total = stretches.reduce(function (sum, s) { return sum + (s[1] - s[0]); }, 0);
    return stretches;
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
    if (data.ttffMs !== null && !has('firstFrame')) add('firstFrame', data.readyName, data.ttffMs);
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
    // Threads of several processes stay grouped by process, in the order the processes started;
    // within a process the threads on the path to ready come first, the longest on it first.
    var processOrder = [];
    threads.forEach(function (thread) { if (processOrder.indexOf(thread.process) < 0) processOrder.push(thread.process); });
    threads.sort(function (a, b) {
      var byProcess = processOrder.indexOf(a.process) - processOrder.indexOf(b.process);
      var byPath = a.pathRank === b.pathRank ? 0 : a.pathRank < b.pathRank ? -1 : 1;
      return byProcess || byPath || (b.isMain ? 1 : 0) - (a.isMain ? 1 : 0);
    });
    if (!threads.length) {
      view.section.appendChild(emptyNote('No threads were sampled.'));
      return { render: function () {}, show: function () {} };
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
    return {
      render: function () { renderTimeline(tl); },
      // Shows FROM–TO (ms) with a margin on each side, and scrolls the timeline into view.
      show: function (from, to) {
        var margin = Math.max((to - from) * 0.15, tl.minSpan);
        setWindow(tl, from - margin, to - from + 2 * margin);
        view.section.scrollIntoView({ block: 'start' });
      }
    };
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
      thread.path.length ? h('span', {
        class: 'badge badge-path', title: 'Its stretches on the path to ' + tl.data.readyName + ' are underlined in the chart.'
      }, 'on the path to ' + tl.data.readyName + ' · ' + fmtMs(thread.path.total)) : null,
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
        var text = (marker.kind === 'firstFrame' ? tl.data.readyName + ' ' : 'terminated ') + fmtMs(marker.timeMs);
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
    drawPath(tl, thread, paint);
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

  /** The thread's stretches on the path to ready: a band along the chart's foot. */
  function drawPath(tl, thread, paint) {
    thread.path.forEach(function (stretch) {
      if (stretch[1] <= tl.win.t0 || stretch[0] >= tl.win.t1) return;
      var x0 = paint.px(stretch[0]);
      var x1 = paint.px(stretch[1]);
      if (x1 - x0 < FC_MIN_PX) return;
      var box = { class: 'fc-path', x: x0, y: thread.height - 4, width: x1 - x0, height: 4 };
      addItem(paint, { kind: 'path', startMs: stretch[0], endMs: stretch[1], ready: tl.data.readyName }, 'rect', box);
    });
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
          fill: thread.waiting[bar] === 3 ? DISK_FILL : thread.waiting[bar] === 2 ? RUNNABLE_FILL : waiting ? WAITING_FILL : flameColour(name)
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
        (thread.waiting[item.bar] === 3 ? 'waiting for the disk (a page fault that reads) · '
          : thread.waiting[item.bar] === 2 ? 'runnable: waiting for a core · '
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
    } else if (item.kind === 'path') {
      showTooltip(event, 'On the path to ' + item.ready, [
        'start ' + fmtMs(item.startMs) + ' · duration ' + fmtMs(item.endMs - item.startMs),
        'The launch waited for this thread here: what it ran is what held the launch.'
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
    if (data.threads.some(function (thread) { return list(thread.path).length; })) entry('path', null, 'path to ' + data.readyName);
    var kinds = [
      ['firstFrame', '#1a7f37', data.readyName], ['phase', '#8b93a1', 'phase boundary'], ['state', '#2f6fde', 'state change'],
      ['hang', null, 'hang'], ['mark', '#7b53c1', 'mark'], ['termination', '#1c2230', 'termination']
    ];
    kinds.forEach(function (kind) {
      var present = markers.some(function (m) { return m.kind === kind[0]; });
      if (present) entry(kind[0] === 'hang' ? 'hang' : 'line', kind[1], kind[2]);
    });
    return legend;
  }

