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
    // A server or a tool without launch tasks has nothing to show here.
    if (!data.tasks.length && !data.lifeCycle) return;
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
      ? 'No ' + data.readyName + (data.lifeCycle ? ' was committed' : ' was reached') + '. During the launch'
      : 'Before the ' + data.readyName + ' at ' + fmtMs(ttff);
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
    // Frames and app states belong to an app's life cycle: a program without one shows the card
    // only for background work or a termination.
    if (!data.lifeCycle && !budgets.background.length && !budgets.termination) return;
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
      'A signal that reaches a thread late found it runnable: preempted, waiting for a core; or, when the ' +
      'sampler saw it in state D meanwhile, waiting for the disk (a page fault that reads). ' +
      'An unanswered signal got no answer within 100 ms: the thread blocked the profiling signal, or was not scheduled.');
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
      stat('Truncated', fmtInt(count('truncated')), count('truncated') ? 'warn' : null),
      stat('Unanswered', fmtInt(count('unanswered')), count('unanswered') ? 'warn' : null)
    ]));
  }

