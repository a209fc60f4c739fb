  // ------------------------------------------------------------------ Insights

  /**
   * Why the launch was slow, the costliest reason first: each insight's finding, its cost, the
   * code to look at, its stacks and notes, and a link that shows its moment on the timeline
   * (`#t=FROM-TO`, also for sharing).
   */
  function drawInsights(app, data) {
    var view = card('insights', 'Insights',
      'Reasons the launch was slow, each with what it cost, the threshold it crossed and the code to look at. ' +
      'liftoff explain prints the same; liftoff check --insight ID=THRESHOLD gates on one.');
    app.appendChild(view.section);
    // How much of the launch the insights account for, and what is left.
    var coverage = data.coverage.length
      ? h('p', { class: 'hint insight-coverage' }, data.coverage.map(oneLine).join(' '))
      : null;
    if (!data.insights.length) {
      view.section.appendChild(emptyNote(
        'No insight fired: no wait, load, runtime or scheduling cost of the launch reached its threshold.'));
      if (coverage) view.section.appendChild(coverage);
      return;
    }
    var items = data.insights.map(function (insight) {
      var cost = insight.costMs > 0
        ? fmtMs(insight.costMs) + ' · ' + fmtPct(insight.share, 1) + ' of the launch'
        : 'any occurrence';
      var threshold = insight.thresholdMs > 0 ? 'threshold ' + fmtMs(insight.thresholdMs) : null;
      var code = null;
      insight.stacks.forEach(function (stack) { if (!code && stack.programFrame) code = stack.programFrame; });
      var link = h('a', {
        class: 'insight-link', href: '#t=' + insight.startMs.toFixed(3) + '-' + insight.endMs.toFixed(3)
      }, 'Show on the timeline (' + fmtMs(insight.startMs) + '–' + fmtMs(insight.endMs) +
        (insight.thread ? ', ' + oneLine(insight.thread) : '') + ')');
      var details = h('details', { class: 'insight-details' }, [
        h('summary', null, 'Evidence'),
        insight.stacks.length ? h('div', null, insight.stacks.map(function (stack) {
          return h('div', { class: 'insight-stack' }, [
            h('span', { class: 'hint' }, stack.ms > 0 ? fmtMs(stack.ms) : ''),
            stackList(stack.frames)
          ]);
        })) : null,
        insight.notes.length ? h('ul', { class: 'insight-notes' }, insight.notes.map(function (note) {
          return h('li', null, oneLine(note));
        })) : null,
        h('p', { class: 'hint' }, oneLine(insight.why))
      ]);
      return h('li', { class: 'insight', 'data-id': insight.id }, [
        h('div', { class: 'insight-head' }, [
          h('strong', null, oneLine(insight.title)),
          h('code', { class: 'insight-id' }, insight.id),
          h('span', { class: 'insight-cost' }, cost),
          threshold ? h('span', { class: 'hint' }, threshold) : null
        ]),
        h('p', { class: 'insight-finding' }, oneLine(insight.finding)),
        code ? h('p', { class: 'insight-code' }, ['Look at ', h('code', null, oneLine(code))]) : null,
        link,
        details
      ]);
    });
    view.section.appendChild(h('ol', { class: 'insights' }, items));
    if (coverage) view.section.appendChild(coverage);
  }

  /** `#t=FROM-TO` in the address: the window of the timeline to show, in milliseconds. */
  function timeFromHash(hash) {
    var match = /^#t=([0-9.]+)-([0-9.]+)$/.exec(hash || '');
    if (!match) return null;
    var from = parseFloat(match[1]);
    var to = parseFloat(match[2]);
    return isNum(from) && isNum(to) && to >= from ? { from: from, to: to } : null;
  }
