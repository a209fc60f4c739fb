  // ------------------------------------------------------------------ 2. Flame graph

  var FG_ROW = 18;
  var FG_MIN_PX = 0.5;
  var FG_MAX_ELEMENTS = 10000; // rects and labels together
  var WAITING_FILL = '#c4c9d4'; // frames where threads waited, in every view
  var RUNNABLE_FILL = '#e3c9a8'; // frames where threads waited only for a core (runnable)
  var DISK_FILL = '#a9c1e0'; // stretches where a thread waited for the disk (a page fault that reads)
  var FG_CHAR = 6.8; // px per character of the 11px monospace label font

  /**
   * Icicle layout: the root is the top row and callees hang below their callers. Clicking a
   * frame zooms into it (it fills the width; its ancestors stay, full width, above it).
   */
  function drawFlameGraph(app, data, shared) {
    var view = card('flame', 'Flame graph',
      'Icicle layout: callers on top, callees below; width is the share of samples. ' +
      'CPU counts the samples of running threads; Wall clock adds the samples of waiting threads: blocked in ' +
      'grey, runnable (waiting for a core) in tan, waiting for the disk in blue. Click a frame to zoom into it, click an ancestor or Reset to zoom out.');
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
      // The four trees of the data: CPU or wall clock, merged or per thread.
      var key = shared.wall ? { merged: 'mergedWall', perThread: 'perThreadWall' }[mode] : mode;
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
          ' waiting') + waitKinds(tree.waiting[node], tree.runnable[node], tree.disk[node]) : null,
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
        fill: waiting ? (tree.runnable[node] >= tree.waiting[node] ? RUNNABLE_FILL
          : tree.disk[node] >= tree.waiting[node] ? DISK_FILL : WAITING_FILL) : flameColour(name),
        'data-i': node
      }));
      var label = fitLabel(name, frame.w, FG_CHAR);
      if (label) fragment.appendChild(svgText((frame.x + 3).toFixed(2), y + FG_ROW - 5, 'fg-label', label));
    });
    return fragment;
  }

