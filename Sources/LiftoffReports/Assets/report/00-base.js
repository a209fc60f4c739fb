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

