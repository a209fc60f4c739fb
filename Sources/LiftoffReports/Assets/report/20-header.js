  // ------------------------------------------------------------------ 1. Header

  function drawHeader(app, data) {
    var header = h('header', { class: 'report-header' }, [
      h('h1', null, oneLine(data.title)),
      data.subtitle ? h('p', { class: 'subtitle' }, oneLine(data.subtitle)) : null,
      h('nav', { class: 'nav', 'aria-label': 'Sections' }, [
        ['#insights', 'Insights'], ['#flame', 'Flame graph'], ['#timeline', 'Timeline'], ['#spans', 'Spans'], ['#tasks', 'Launch tasks'],
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
    var ready = data.readyName;
    if (data.ttffMs === null) {
      return h('div', { class: 'ttff none' }, [
        h('span', { class: 'label' }, 'Time to ' + ready),
        h('span', { class: 'value' }, 'No ' + ready),
        h('span', { class: 'verdict' }, data.lifeCycle
          ? 'No first frame was committed' + (target !== null ? ' (target ' + fmtMs(target) + ').' : '.')
          : 'It never became ready.')
      ]);
    }
    if (target === null) {
      // A server or a tool: no target unless one was set.
      return h('div', { class: 'ttff' }, [
        h('span', { class: 'label' }, 'Time to ' + ready),
        h('span', { class: 'value' }, fmtMs(data.ttffMs))
      ]);
    }
    var within = data.ttffMs <= target;
    var verdict = within
      ? 'Within the ' + fmtMs(target) + ' target (' + fmtMs(target - data.ttffMs) + ' to spare)'
      : fmtMs(data.ttffMs - target) + ' over the ' + fmtMs(target) + ' target';
    return h('div', { class: 'ttff ' + (within ? 'good' : 'bad') }, [
      h('span', { class: 'label' }, 'Time to ' + ready),
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
    var preMainSegment = null;
    data.phases.forEach(function (phase, index) {
      var length = Math.max(0, phase.endMs - phase.startMs);
      var segment = h('div', { class: 'phase phase-' + (index % 4), title: oneLine(phase.name) + ': ' + fmtMs(length) }, [
        oneLine(phase.name), h('span', { class: 'ms' }, fmtMs(length))
      ]);
      segment.style.flex = '0 0 ' + ((length / total) * 100).toFixed(3) + '%';
      if (phase.name === 'pre-main') preMainSegment = segment;
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
      // Near the bar's end the label would sit on the scale's own end label: the line's title says it.
      if (total - timeMs < total * 0.08) return;
      var text = h('span', null, label);
      text.style.left = line.style.left;
      scale.appendChild(text);
    }
    if (data.ttffMs !== null) tick(data.ttffMs, 'first-frame', data.readyName + ' ' + fmtMs(data.ttffMs));
    if (data.targetMs !== null && (data.ttffMs === null || Math.abs(data.targetMs - data.ttffMs) > total * 0.08)) {
      tick(data.targetMs, 'target', 'target ' + fmtMs(data.targetMs));
    }
    var parts = [bar, scale];
    // What the loader's time before sampling went to, by the kernel's counts: it has no samples.
    if (data.preMain) {
      if (preMainSegment) preMainSegment.title += ' \u2014 ' + data.preMain;
      parts.push(h('p', { class: 'phase-note' }, data.preMain));
    }
    if (data.loader) parts.push(h('p', { class: 'phase-note' }, data.loader));
    return append(wrap, parts);
  }

