// The inspector's page: reads the run embedded in the element #inspector-data and shows it.
//
// The data's layout is described in PageData.swift. Everything from the data goes into the page
// as text (textContent, createTextNode), never as markup; the page requests nothing.
'use strict';

(function () {
  const data = JSON.parse(document.getElementById('inspector-data').textContent);
  const rows = data.rows;
  const stores = data.stores;
  const MODES = ['async', 'sync', 'serial', 'mainThread'];
  const STATUS = ['succeeded', 'cancelled', 'failed'];
  const ROW_HEIGHT = 24;
  const SHOWN_MEMBERS = 300;

  // MARK: Small helpers

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function append(parent, ...children) {
    for (const child of children) {
      if (child === null || child === undefined) continue;
      parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return parent;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function plural(count, word) {
    return count.toLocaleString('en-US') + ' ' + word + (count === 1 ? '' : 's');
  }

  function formatBytes(bytes) {
    if (bytes < 1024) return bytes + ' bytes';
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + ' KB';
    return (bytes / 1024 / 1024).toFixed(1) + ' MB';
  }

  function pad(number, width) {
    return String(number).padStart(width, '0');
  }

  function formatTime(milliseconds) {
    const date = new Date(data.start + milliseconds);
    return pad(date.getUTCHours(), 2) + ':' + pad(date.getUTCMinutes(), 2) + ':' + pad(date.getUTCSeconds(), 2) +
      '.' + pad(date.getUTCMilliseconds(), 3);
  }

  function formatDuration(microseconds) {
    if (microseconds < 0) return '';
    if (microseconds < 1000) return microseconds + ' µs';
    if (microseconds < 1000000) return (microseconds / 1000).toFixed(microseconds < 10000 ? 2 : 1) + ' ms';
    return (microseconds / 1000000).toFixed(2) + ' s';
  }

  function shortType(name) {
    const generic = name.indexOf('<');
    const head = generic < 0 ? name : name.slice(0, generic);
    const dot = head.lastIndexOf('.');
    return dot < 0 ? name : name.slice(dot + 1);
  }

  // MARK: Trees
  //
  // A tree in the data is a scalar or a tagged array (see PageData.swift). For rebuilding states it
  // becomes a mutable node: {t: 'o' | 'd' | 's' | 'a' | 'x' | 'n', k: keys, v: values}.

  function node(raw) {
    if (!Array.isArray(raw)) return raw;
    const tag = raw[0];
    if (tag === 'a') return { t: 'a', k: null, v: raw.slice(1).map(node), index: null };
    if (tag === 't') return { t: 'x', s: raw[1] };
    if (tag === 'n') return { t: 'n', s: raw[1] };
    if (tag === 'S') return { t: 's', k: raw.slice(1), v: raw.slice(1), index: null };
    const keys = [];
    const values = [];
    for (let i = 1; i < raw.length; i += 2) {
      keys.push(tag === 'o' ? data.keys[raw[i]] : raw[i]);
      values.push(node(raw[i + 1]));
    }
    return { t: tag, k: keys, v: values, index: null };
  }

  function isContainer(value) {
    return value !== null && typeof value === 'object' && value.v !== undefined;
  }

  function position(container, key) {
    if (container.index === null) {
      container.index = new Map();
      container.k.forEach((name, i) => container.index.set(name, i));
    }
    const found = container.index.get(key);
    return found === undefined ? -1 : found;
  }

  function member(container, key) {
    if (!isContainer(container)) return undefined;
    if (container.t === 'a') return typeof key === 'number' ? container.v[key] : undefined;
    const at = position(container, key);
    return at < 0 ? undefined : container.v[at];
  }

  function resolve(root, path) {
    let current = root;
    for (const segment of path) {
      current = member(current, segment);
      if (current === undefined) throw new Error('no member ' + JSON.stringify(segment));
    }
    return current;
  }

  // Applies one change in place; returns [path text, old value, new value] for the diff.
  function applyChange(holder, change) {
    if (change[0] === 3) {
      const old = holder.tree;
      holder.tree = node(change[1]);
      return [[], old, holder.tree, 'replaced'];
    }
    const path = data.paths[change[1]];
    const container = resolve(holder.tree, path);
    if (change[0] === 2) {
      const removed = container.v.splice(change[2], change[3], ...change[4].map(node));
      return [path.concat([change[2]]), removed, container.v.slice(change[2], change[2] + change[4].length), 'spliced'];
    }
    // A struct's field comes as -1 - its index in the key table.
    const key = typeof change[2] === 'number' && change[2] < 0 ? data.keys[-1 - change[2]] : change[2];
    if (container.t === 'a') {
      const old = container.v[key];
      if (change[0] === 0) {
        container.v[key] = node(change[3]);
      } else {
        container.v.splice(key, 1);
      }
      const now = change[0] === 0 ? container.v[key] : undefined;
      return [path.concat([key]), old, now, change[0] === 0 ? 'set' : 'removed'];
    }
    const at = position(container, key);
    const old = at < 0 ? undefined : container.v[at];
    if (change[0] === 0) {
      const value = node(change[3]);
      if (at < 0) {
        container.index.set(key, container.k.length);
        container.k.push(key);
        container.v.push(value);
      } else {
        container.v[at] = value;
      }
      return [path.concat([key]), old, value, at < 0 ? 'added' : 'set'];
    }
    if (at >= 0) {
      container.k.splice(at, 1);
      container.v.splice(at, 1);
      container.index = null;
    }
    return [path.concat([key]), old, undefined, 'removed'];
  }

  function copy(value) {
    if (!isContainer(value)) return value;
    return { t: value.t, k: value.k ? value.k.slice() : null, v: value.v.map(copy), index: null };
  }

  // MARK: States
  //
  // For each store: its frames (full states), the rows that change it, and one cached state that
  // moves to whichever row is asked for.

  const storeRows = stores.map(() => []);
  const storeFrames = stores.map(() => []);
  for (const frame of data.frames) {
    storeFrames[frame[0]].push({ position: frame[1], tree: frame[2], hidden: frame[3] || [] });
  }
  const changesOf = rows.map(row => row[0] === 0 ? row[8] : row[0] === 2 ? row[7] : row[0] === 3 ? row[3] : []);
  changesOf.forEach((list, index) => {
    for (let i = 0; i < list.length; i += 2) storeRows[list[i]].push(index);
  });
  const caches = stores.map(() => null);

  function rowChanges(rowIndex, store) {
    const list = changesOf[rowIndex];
    for (let i = 0; i < list.length; i += 2) if (list[i] === store) return list[i + 1];
    return null;
  }

  function firstRowAfter(list, value) {
    let low = 0;
    let high = list.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (list[middle] <= value) low = middle + 1; else high = middle;
    }
    return low;
  }

  // The store's state after row `rowIndex` (-1: before the first row), as the cached holder.
  function stateAfter(store, rowIndex) {
    const frames = storeFrames[store];
    if (frames.length === 0) return null;
    let frame = frames[0];
    for (const candidate of frames) if (candidate.position <= rowIndex + 1) frame = candidate;
    let cache = caches[store];
    if (!cache || cache.row > rowIndex || cache.row < frame.position - 1) {
      cache = { row: frame.position - 1, tree: node(frame.tree) };
      for (const hidden of frame.hidden) for (const change of hidden) applyChange(cache, change);
    }
    const list = storeRows[store];
    for (let i = firstRowAfter(list, cache.row); i < list.length && list[i] <= rowIndex; i++) {
      for (const change of rowChanges(list[i], store)) applyChange(cache, change);
    }
    cache.row = rowIndex;
    caches[store] = cache;
    return cache;
  }

  // The changes of row `rowIndex` to `store`, each with its old and new value.
  function diffOf(store, rowIndex) {
    const changes = rowChanges(rowIndex, store);
    if (!changes) return [];
    const holder = stateAfter(store, rowIndex - 1);
    const result = changes.map(change => applyChange(holder, change));
    holder.row = rowIndex;
    return result;
  }

  // MARK: Text of values

  function scalarText(value) {
    if (value === null) return 'null';
    if (typeof value === 'string') return JSON.stringify(value);
    if (typeof value === 'object' && value.t === 'x') return value.s;
    if (typeof value === 'object' && value.t === 'n') return value.s;
    return String(value);
  }

  function sortedIndices(container) {
    const indices = container.v.map((_, i) => i);
    if (container.t === 'd' || container.t === 's') {
      indices.sort((a, b) => container.k[a] < container.k[b] ? -1 : container.k[a] > container.k[b] ? 1 : 0);
    }
    return indices;
  }

  // A one-line text of a value, cut at `limit` characters. For an action (`asAction`), an object
  // of one member is its enum case: `name(value)`.
  function inlineText(value, limit, asAction) {
    let text = '';
    function add(piece) {
      text += piece;
      return text.length < limit;
    }
    function walk(current) {
      if (!isContainer(current)) return add(scalarText(current));
      if (current.t === 'a' || current.t === 's') {
        if (!add(current.t === 'a' ? '[' : '{')) return false;
        for (let i = 0; i < current.v.length; i++) {
          if (i > 0 && !add(', ')) return false;
          if (!walk(current.v[i])) return false;
        }
        return add(current.t === 'a' ? ']' : '}');
      }
      const only = current.t === 'o' && current.k.length === 1 ? current.v[0] : undefined;
      if (only !== undefined && !isContainer(only) && asAction && current === value) {
        return add(current.k[0] + '(' + scalarText(only) + ')');
      }
      const single = only !== undefined && isContainer(only) && only.t === 'o';
      if (single) {
        if (!add(current.k[0] + '(')) return false;
        current = only;
      } else if (!add(current.t === 'd' ? '[' : '(')) {
        return false;
      }
      for (let i = 0; i < current.v.length; i++) {
        if (i > 0 && !add(', ')) return false;
        const label = current.t === 'd' ? JSON.stringify(current.k[i]) + ': ' :
          /^_[0-9]+$/.test(current.k[i]) ? '' : current.k[i] + ': ';
        if (!add(label)) return false;
        if (!walk(current.v[i])) return false;
      }
      return add(single || current.t !== 'd' ? ')' : ']');
    }
    walk(value);
    return text.length > limit ? text.slice(0, limit - 1) + '…' : text;
  }

  function pathText(path) {
    let text = '';
    for (const segment of path) {
      if (typeof segment === 'number') text += '[' + segment + ']';
      else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(segment)) text += (text ? '.' : '') + segment;
      else text += '[' + JSON.stringify(segment) + ']';
    }
    return text || '(the whole state)';
  }

  // The canonical JSON of a value, members of dictionaries and sets sorted: what the tests compare.
  function canonical(value) {
    if (!isContainer(value)) {
      if (value !== null && typeof value === 'object') return JSON.stringify(value.t === 'x' ? { $t: value.s } :
        { $n: value.s });
      return JSON.stringify(value);
    }
    const indices = sortedIndices(value);
    if (value.t === 'a') return '[' + value.v.map(canonical).join(',') + ']';
    if (value.t === 's') return '{"$set":[' + indices.map(i => JSON.stringify(value.k[i])).join(',') + ']}';
    return '{' + indices.map(i => JSON.stringify(value.k[i]) + ':' + canonical(value.v[i])).join(',') + '}';
  }

  // MARK: Rendering trees

  function renderValue(value, key, openDepth, asAction) {
    if (!isContainer(value)) {
      const leaf = element('div', 'leaf');
      if (key !== undefined) append(leaf, element('span', 'key', key + ': '));
      let kind = 't-' + (value === null ? 'null' : typeof value);
      if (value !== null && typeof value === 'object') kind = value.t === 'x' ? 't-text' : 't-number';
      if (kind === 't-boolean') kind = 't-bool';
      append(leaf, element('span', kind, scalarText(value)));
      return leaf;
    }
    const details = element('details');
    const summary = element('summary');
    if (key !== undefined) append(summary, element('span', 'key', key + ': '));
    const names = { o: '', d: 'dictionary', a: 'array', s: 'set' };
    const label = names[value.t] ? names[value.t] + ' (' + value.v.length + ')' : '';
    append(summary, element('span', 'kind', label || inlineText(value, 80, asAction)));
    details.appendChild(summary);
    const depth = openDepth || 0;
    let filled = false;
    details.addEventListener('toggle', () => {
      if (!details.open || filled) return;
      filled = true;
      fillMembers(details, value, 0, depth - 1);
    });
    if (depth > 0) details.open = true;
    return details;
  }

  function fillMembers(parent, value, start, openDepth) {
    const indices = sortedIndices(value);
    const end = Math.min(indices.length, start + SHOWN_MEMBERS);
    for (let j = start; j < end; j++) {
      const i = indices[j];
      const key = value.t === 'a' ? String(i) : value.t === 's' ? undefined : value.k[i];
      parent.appendChild(renderValue(value.v[i], value.t === 'd' ? JSON.stringify(key) : key, openDepth));
    }
    if (end < indices.length) {
      const more = element('button', 'more link', 'show ' + Math.min(SHOWN_MEMBERS, indices.length - end) +
        ' more of ' + (indices.length - end));
      more.addEventListener('click', () => {
        parent.removeChild(more);
        fillMembers(parent, value, end, openDepth);
      });
      parent.appendChild(more);
    }
  }

  // A tree whose first `openDepth` levels are open; an action's root is named by its case.
  function renderTree(value, openDepth, asAction) {
    return append(element('div', 'tree'), renderValue(value, undefined, openDepth, asAction));
  }

  // MARK: Rows

  const recorder = data.recorder;
  const historyIds = recorder ? new Set(recorder.entries.map(entry => entry[0])) : null;

  function rowKind(row) {
    return ['transaction', 'problem', 'marker', 'restore'][row[0]];
  }

  function rowTime(row) {
    return row[row[0] === 0 ? 2 : 1];
  }

  // Each transaction row's extra facts; 1 stands for the line after the previous row's, same file.
  const extras = (() => {
    let line;
    let file;
    return rows.map(row => {
      if (row[0] !== 0) return {};
      let facts = row[9];
      if (facts === 1) facts = { line: line + 1, file: file };
      else if (!facts) facts = {};
      if (facts.line !== undefined) {
        line = facts.line;
        file = facts.file;
      }
      return facts;
    });
  })();

  // What became of the transaction's history entry by the end: undone (after the recorder's
  // position), undone and then discarded by a later action, or neither.
  function historyState(index) {
    const entry = extras[index].entry;
    if (!recorder || entry === undefined) return null;
    if (historyIds.has(entry)) return entry > recorder.current ? 'undone' : 'kept';
    const oldest = recorder.entries.length ? recorder.entries[0][0] : 0;
    return entry < oldest ? 'aged out' : 'discarded';
  }

  function outcomeText(index) {
    const row = rows[index];
    if (row[0] !== 0) return '';
    const steps = row[7];
    if (steps.length === 0) return extras[index].error ? 'unhandled' : '';
    let failed = 0;
    let cancelled = 0;
    for (let i = 2; i < steps.length; i += 3) {
      if (steps[i] === 2) failed++;
      if (steps[i] === 1) cancelled++;
    }
    if (failed) return failed + ' failed';
    if (cancelled) return cancelled + ' cancelled';
    return extras[index].error ? 'error' : 'ok';
  }

  const payloadTexts = new Array(rows.length);
  const summaries = new Array(rows.length);
  const storeLists = rows.map(row => {
    const result = [];
    if (row[0] === 0) for (let i = 0; i < row[7].length; i += 3) result.push(row[7][i]);
    return result;
  });
  changesOf.forEach((list, index) => {
    for (let i = 0; i < list.length; i += 2) if (!storeLists[index].includes(list[i])) storeLists[index].push(list[i]);
  });

  function summaryOf(index) {
    if (summaries[index] === undefined) {
      const row = rows[index];
      if (row[0] === 0) summaries[index] = inlineText(node(row[6]), 160, true);
      else if (row[0] === 3) summaries[index] = row[2];
      else summaries[index] = row[3];
    }
    return summaries[index];
  }

  // The action's name in its row: an enum case (`order`) with its arguments, or the type's name.
  function actionLabel(index) {
    const row = rows[index];
    const summary = summaryOf(index);
    const raw = row[6];
    const single = Array.isArray(raw) && raw[0] === 'o' && raw.length === 3;
    if (single) {
      const name = data.keys[raw[1]];
      if (summary.startsWith(name + '(')) return [name, summary.slice(name.length)];
      return [name, summary.startsWith(name + ': ') ? summary.slice(name.length + 2) : summary];
    }
    if (typeof raw === 'string') return [raw, ''];
    return [shortType(data.types[row[5]]), summary];
  }

  function searchText(index) {
    if (payloadTexts[index] === undefined) {
      const row = rows[index];
      let text = rowKind(row) + ' ' + summaryOf(index) + ' ' + storeLists[index].map(s => stores[s].id).join(' ');
      if (row[0] === 0) text += ' ' + data.types[row[5]] + ' #' + row[1] + ' ' + JSON.stringify(row[6]);
      if (row[0] === 1 || row[0] === 2) text += ' ' + row[2];
      payloadTexts[index] = text.toLowerCase();
    }
    return payloadTexts[index];
  }

  const rowOfTransaction = new Map();
  rows.forEach((row, index) => {
    if (row[0] === 0 && !rowOfTransaction.has(row[1])) rowOfTransaction.set(row[1], index);
  });

  // MARK: Header

  function renderHeader() {
    const source = data.source;
    document.title = data.title + ' — DispatchStore inspector';
    document.getElementById('title').textContent = data.title;
    let origin = 'recorded live';
    if (source.kind === 'log') origin = 'action log ' + source.path;
    if (source.kind === 'journal') origin = 'journal ' + source.path;
    const pieces = [origin];
    if (source.bytes !== null) pieces.push(formatBytes(source.bytes));
    if (source.lines !== null) pieces.push(plural(source.lines, 'line') + ' read');
    pieces.push('page written ' + data.generated.replace('T', ' ').replace('Z', ' UTC'));
    document.getElementById('source').textContent = pieces.join(' · ');

    const facts = document.getElementById('facts');
    const transactions = rows.filter(row => row[0] === 0).length;
    const span = rows.length ? rowTime(rows[rows.length - 1]) - rowTime(rows[0]) : 0;
    const fact = (label, value) => append(facts, append(element('span'), element('b', null, value), ' ' + label));
    fact(transactions === 1 ? 'transaction' : 'transactions', transactions.toLocaleString('en-US'));
    fact(stores.length === 1 ? 'store' : 'stores', String(stores.length));
    if (rows.length) {
      append(facts, element('span', null, 'from ' + formatTime(rowTime(rows[0])) + ' to ' +
        formatTime(rowTime(rows[rows.length - 1])) + ' UTC (' + (span / 1000).toFixed(3) + ' s)'));
    }
    const notices = document.getElementById('notices');
    if (source.detail) append(notices, element('p', 'muted', source.detail));
    if (data.dropped > 0) {
      append(notices, element('p', 'warn', plural(data.dropped, 'older transaction') + ' dropped: the inspector ' +
        'keeps the newest ' + data.limit.toLocaleString('en-US') + '.'));
    }
    for (const store of stores) {
      if (store.reflected) {
        append(notices, element('p', 'muted', 'Store ' + store.id + ': ' + shortType(store.type) + ' is shown ' +
          'through reflection (Mirror)' + (store.failure ? ', since encoding it failed: ' + store.failure : ', ' +
          'since it is not Encodable') + '.'));
      }
    }
    if (recorder) {
      const undone = rows.filter((_, index) => historyState(index) === 'undone').length;
      const discarded = rows.filter((_, index) => historyState(index) === 'discarded').length;
      const first = recorder.entries.length ? recorder.entries[0][0] : 0;
      const last = recorder.entries.length ? recorder.entries[recorder.entries.length - 1][0] : 0;
      let text = 'Recorder: the stores are at history entry ' + recorder.current + ' (entries ' + first + ' to ' +
        last + '); ' + plural(undone, 'transaction') + ' undone at the end';
      if (discarded) text += ', ' + plural(discarded, 'more') + ' undone and then replaced by later actions';
      const groups = recorder.entries.filter(entry => entry[1] > 1).length;
      if (groups) text += '; ' + plural(groups, 'entry') + ' grouping several transactions';
      append(notices, element('p', null, text + '.'));
    }
    if (data.problemCount > 0) {
      const problems = document.getElementById('problems');
      problems.hidden = false;
      document.getElementById('problems-summary').textContent = plural(data.problemCount, 'problem') +
        (data.problemCount > data.problems.length ? ' (the first ' + data.problems.length + ' listed)' : '');
      const list = document.getElementById('problem-list');
      for (const problem of data.problems) {
        const item = element('li', null, problem.text);
        if (problem.row !== null) {
          const link = element('a', null, 'show');
          link.addEventListener('click', () => select(problem.row, true));
          append(item, ' ', link);
        }
        list.appendChild(item);
      }
    }
  }

  // MARK: Timeline
  //
  // Only the rows in view (and a few around them) are in the document; the space below them has the
  // height of every row that matches the filter.

  const timeline = document.getElementById('timeline');
  const space = document.getElementById('timeline-space');
  let visible = rows.map((_, index) => index);
  let selected = -1;
  let query = '';
  let storeFilter = -1;
  const shown = new Map();

  function applyFilter() {
    const terms = query.toLowerCase().split(/\s+/).filter(term => term.length > 0);
    visible = [];
    for (let index = 0; index < rows.length; index++) {
      if (storeFilter >= 0 && !storeLists[index].includes(storeFilter)) continue;
      if (terms.length) {
        const text = searchText(index);
        if (!terms.every(term => text.includes(term))) continue;
      }
      visible.push(index);
    }
    space.style.height = (visible.length * ROW_HEIGHT) + 'px';
    const count = document.getElementById('match-count');
    count.textContent = terms.length || storeFilter >= 0 ? plural(visible.length, 'row') + ' of ' +
      rows.length.toLocaleString('en-US') : '';
    for (const line of shown.values()) line.remove();
    shown.clear();
    renderRows();
  }

  function fillRow(line, index) {
    const row = rows[index];
    clear(line);
    line.className = 'row ' + rowKind(row) + (index === selected ? ' selected' : '');
    line.dataset.row = String(index);
    line.setAttribute('role', 'option');
    if (row[0] === 0) {
      const history = historyState(index);
      if (history === 'undone' || history === 'discarded') line.classList.add('undone');
      const action = element('span', 'c-action');
      const [label, rest] = actionLabel(index);
      append(action, element('span', 'type', label), element('span', 'summary', rest));
      action.title = data.types[row[5]] + ' ' + summaryOf(index);
      const names = storeLists[index].map(s => stores[s].id).join(', ');
      const outcome = outcomeText(index);
      append(line, element('span', 'c-id', '#' + row[1]), element('span', 'c-time', formatTime(row[2])),
        element('span', 'c-mode', MODES[row[4]]), action, element('span', 'c-stores', names),
        element('span', 'c-outcome ' + (outcome === 'ok' ? 'good' : 'bad'), outcome),
        element('span', 'c-duration', formatDuration(row[3])));
      return;
    }
    const checks = row[0] === 2 ? row[6] : [];
    if (checks.some(check => check[2] === 0)) line.classList.add('differs');
    const icon = { problem: '⚠ ', marker: '◆ ', restore: '↶ ' }[rowKind(row)];
    const where = row[0] === 1 || row[0] === 2 ? (row[5] !== null ? 'line ' + row[5] : '') : '';
    append(line, element('span', 'c-id', where), element('span', 'c-time', formatTime(row[1])),
      element('span', 'c-action wide', icon + summaryOf(index) + checkSummary(checks)));
  }

  function checkSummary(checks) {
    if (!checks.length) return '';
    const differ = checks.filter(check => check[2] === 0).length;
    const matched = checks.filter(check => check[2] === 1).length;
    if (differ) return ' — differs: ' + stores[checks.find(check => check[2] === 0)[0]].id;
    if (matched === checks.length) return ' — matches';
    return ' — ' + matched + ' of ' + checks.length + ' compared, all match';
  }

  function renderRows() {
    const top = timeline.scrollTop;
    const height = timeline.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - 10);
    const last = Math.min(visible.length, Math.ceil((top + height) / ROW_HEIGHT) + 10);
    const wanted = new Set();
    for (let position = first; position < last; position++) wanted.add(visible[position]);
    for (const [index, line] of shown) {
      if (!wanted.has(index)) {
        line.remove();
        shown.delete(index);
      }
    }
    for (let position = first; position < last; position++) {
      const index = visible[position];
      let line = shown.get(index);
      if (!line) {
        line = element('div');
        fillRow(line, index);
        shown.set(index, line);
        space.appendChild(line);
      }
      line.style.transform = 'translateY(' + (position * ROW_HEIGHT) + 'px)';
    }
  }

  timeline.addEventListener('scroll', () => renderRows(), { passive: true });
  window.addEventListener('resize', () => renderRows());
  timeline.addEventListener('click', event => {
    const line = event.target.closest('.row');
    if (line) select(Number(line.dataset.row), false);
  });

  function scrollIntoView(index) {
    const position = visible.indexOf(index);
    if (position < 0) return;
    const top = position * ROW_HEIGHT;
    if (top < timeline.scrollTop) timeline.scrollTop = top;
    else if (top + ROW_HEIGHT > timeline.scrollTop + timeline.clientHeight) {
      timeline.scrollTop = top + ROW_HEIGHT - timeline.clientHeight;
    }
    renderRows();
  }

  // MARK: Selection

  function select(index, scroll) {
    if (index < 0 || index >= rows.length) return;
    const previous = shown.get(selected);
    if (previous) previous.classList.remove('selected');
    selected = index;
    const line = shown.get(index);
    if (line) line.classList.add('selected');
    if (scroll) scrollIntoView(index);
    const row = rows[index];
    const fragment = row[0] === 0 ? '#tx=' + row[1] : '#row=' + index;
    if (location.hash !== fragment) history.replaceState(null, '', fragment);
    renderDetail(index);
    document.body.dataset.selected = fragment.slice(1);
  }

  function move(step) {
    if (!visible.length) return;
    let position = visible.indexOf(selected);
    if (position < 0) position = step > 0 ? -1 : visible.length;
    position = Math.max(0, Math.min(visible.length - 1, position + step));
    select(visible[position], true);
  }

  function followFragment() {
    const match = /^#(tx|row)=(\d+)$/.exec(location.hash);
    if (!match) return;
    const number = Number(match[2]);
    const index = match[1] === 'tx' ? rowOfTransaction.get(number) : number;
    if (index === undefined || index >= rows.length) {
      renderMissing(match[1] === 'tx' ? 'No transaction #' + number + ' in this page.' : 'No row ' + number + '.');
      return;
    }
    if (!visible.includes(index)) {
      query = '';
      storeFilter = -1;
      document.getElementById('search').value = '';
      updateStoreChip();
      applyFilter();
    }
    select(index, true);
  }

  window.addEventListener('hashchange', followFragment);

  document.addEventListener('keydown', event => {
    if (event.target instanceof HTMLInputElement || event.altKey || event.ctrlKey || event.metaKey) {
      if (event.key === 'Escape' && event.target.id === 'search') {
        event.target.value = '';
        query = '';
        applyFilter();
        timeline.focus();
      }
      return;
    }
    if (event.key === 'j' || event.key === 'ArrowDown') {
      move(1);
      event.preventDefault();
    } else if (event.key === 'k' || event.key === 'ArrowUp') {
      move(-1);
      event.preventDefault();
    } else if (event.key === '/') {
      document.getElementById('search').focus();
      event.preventDefault();
    }
  });

  let filterTimer = 0;
  document.getElementById('search').addEventListener('input', event => {
    clearTimeout(filterTimer);
    const value = event.target.value;
    filterTimer = setTimeout(() => {
      query = value;
      applyFilter();
      document.body.dataset.filtered = query;
    }, 60);
  });

  function filterStore(store) {
    storeFilter = store;
    updateStoreChip();
    applyFilter();
    if (selected >= 0) scrollIntoView(selected);
  }

  function updateStoreChip() {
    const chip = document.getElementById('store-filter');
    clear(chip);
    chip.hidden = storeFilter < 0;
    if (storeFilter < 0) return;
    const remove = element('button', null, '×');
    remove.setAttribute('aria-label', 'Show every store');
    remove.addEventListener('click', () => filterStore(-1));
    append(chip, 'store: ' + stores[storeFilter].id, remove);
  }

  function storeName(store) {
    const name = element('span', 'store-name', stores[store].id);
    name.title = 'Show only the rows of ' + stores[store].id;
    name.addEventListener('click', () => filterStore(store));
    return name;
  }

  // MARK: The selected row

  const pinned = new Set();
  const detail = document.getElementById('detail');

  function renderMissing(text) {
    clear(detail);
    append(detail, element('p', 'bad', text));
  }

  function renderDetail(index) {
    const row = rows[index];
    clear(detail);
    if (row[0] === 0) renderTransaction(index, row);
    else if (row[0] === 1) renderProblem(row);
    else if (row[0] === 2) renderMarker(index, row);
    else append(detail, element('h3', null, 'States restored'), element('p', null, row[2]));
    if (row[0] !== 1) {
      renderChanges(index);
      renderStates(index);
    }
  }

  function fileText(fileIndex, line) {
    const parts = [];
    if (line !== null && line !== undefined) parts.push('line ' + line);
    if (fileIndex !== null && fileIndex !== undefined) parts.push('of ' + data.files[fileIndex]);
    return parts.join(' ');
  }

  function renderTransaction(index, row) {
    const info = extras[index];
    append(detail, element('h3', null, actionLabel(index)[0] + ' #' + row[1]));
    const meta = element('div', 'meta');
    append(meta, element('span', null, formatTime(row[2]) + ' UTC'), element('span', null, MODES[row[4]]));
    if (row[3] >= 0) append(meta, element('span', null, formatDuration(row[3])));
    if (info.line !== undefined) append(meta, element('span', null, fileText(info.file, info.line)));
    if (info.target !== undefined) append(meta, element('span', null, 'to ' + info.target));
    if (info.parts) append(meta, element('span', null, 'replayed in ' + info.parts + ' dispatches'));
    const history = historyState(index);
    if (history) {
      const labels = { kept: '', undone: ', undone at the end', discarded: ', undone, then replaced',
        'aged out': ', no longer in the history' };
      append(meta, element('span', history === 'kept' ? null : 'warn', 'history entry ' + info.entry +
        labels[history]));
    }
    detail.appendChild(meta);
    if (info.error) append(detail, element('p', 'note', info.error));
    for (const store in info.notes || {}) {
      append(detail, element('p', 'note', stores[store].id + ': ' + info.notes[store]));
    }

    append(detail, element('h2', null, 'Action'));
    append(detail, element('div', 'mono', data.types[row[5]]));
    detail.appendChild(renderTree(node(row[6]), 4, true));

    append(detail, element('h2', null, 'Stores, in the order they applied it'));
    const steps = row[7];
    if (steps.length === 0) {
      append(detail, element('p', 'muted', 'No store handled it.'));
    } else {
      const table = element('table', 'steps');
      const head = element('tr');
      for (const title of ['store', 'sequence number', 'waited for', 'outcome']) {
        append(head, element('th', null, title));
      }
      table.appendChild(head);
      const reached = [];
      for (let i = 0; i < steps.length; i += 3) reached.push(steps[i]);
      for (let i = 0; i < steps.length; i += 3) {
        const store = steps[i];
        const line = element('tr');
        const waited = stores[store].waitsFor.filter(id => reached.some(s => stores[s].id === id));
        let outcome = STATUS[steps[i + 2]];
        if (steps[i + 2] === 2 && info.failures) outcome += ': ' + info.failures[store];
        append(line, append(element('td'), storeName(store)),
          element('td', 'mono', steps[i + 1] >= 0 ? '#' + steps[i + 1] : '—'),
          element('td', null, waited.length ? waited.join(', ') : '—'),
          element('td', steps[i + 2] === 0 ? 'good' : 'bad', outcome));
        table.appendChild(line);
      }
      detail.appendChild(table);
    }
    if (info.checks) renderChecks(info.checks);
  }

  function renderProblem(row) {
    append(detail, element('h3', 'bad', { torn: 'A torn line', unknownType: 'An unknown action type',
      unreadable: 'A line that could not be read' }[row[2]] || 'A problem'));
    const where = fileText(row[4], row[5]);
    if (where) append(detail, element('div', 'meta', where));
    append(detail, element('p', null, row[3]));
    append(detail, element('p', 'muted', 'The replay skipped it; the states after it do not include it.'));
  }

  function renderMarker(index, row) {
    append(detail, element('h3', null, row[2] === 'snapshot' ? 'Snapshot' : 'Checkpoint'));
    const where = fileText(row[4], row[5]);
    if (where) append(detail, element('div', 'meta', where));
    append(detail, element('p', null, row[3]));
    renderChecks(row[6]);
  }

  function renderChecks(checks) {
    if (!checks.length) return;
    append(detail, element('h2', null, 'Digests compared with the replayed states'));
    const table = element('table', 'steps');
    for (const check of checks) {
      const result = check[2] === 1 ? 'matches' : check[2] === 0 ? 'differs' : 'not compared (the store never ' +
        'reached this number)';
      const line = element('tr');
      append(line, append(element('td'), storeName(check[0])), element('td', 'mono', '#' + check[1]),
        element('td', check[2] === 1 ? 'good' : 'bad', result));
      table.appendChild(line);
    }
    detail.appendChild(table);
  }

  function renderChanges(index) {
    append(detail, element('h2', null, 'Changes'));
    const changed = [];
    const list = changesOf[index];
    for (let i = 0; i < list.length; i += 2) changed.push(list[i]);
    if (!changed.length) {
      append(detail, element('p', 'muted', 'No store changed.'));
    }
    for (const store of changed) {
      const box = element('div', 'changes');
      append(box, storeName(store));
      for (const [path, old, now, kind] of diffOf(store, index)) {
        const line = element('div', 'change');
        append(line, element('span', 'path', pathText(path)), ': ');
        if (kind === 'added') {
          append(line, element('span', 'muted', 'added '), element('span', 'new', inlineText(now, 400)));
        } else if (kind === 'removed') {
          append(line, element('span', 'muted', 'removed '), element('span', 'old', inlineText(old, 400)));
        } else if (kind === 'spliced') {
          append(line, element('span', 'old', inlineText({ t: 'a', v: old }, 300)), element('span', 'arrow', '→'),
            element('span', 'new', inlineText({ t: 'a', v: now }, 300)));
        } else {
          append(line, element('span', 'old', old === undefined ? '(none)' : inlineText(old, 300)),
            element('span', 'arrow', '→'), element('span', 'new', inlineText(now, 300)));
        }
        box.appendChild(line);
      }
      detail.appendChild(box);
    }
    const unchanged = stores.map((_, i) => i).filter(i => !changed.includes(i));
    if (changed.length && unchanged.length) {
      append(detail, element('p', 'muted', 'Unchanged: ' + unchanged.map(i => stores[i].id).join(', ')));
    }
  }

  function renderStates(index) {
    append(detail, element('h2', null, 'States after it'));
    const order = stores.map((_, i) => i).sort((a, b) => (pinned.has(b) ? 1 : 0) - (pinned.has(a) ? 1 : 0));
    for (const store of order) {
      const holder = stateAfter(store, index);
      const box = element('div', 'state' + (pinned.has(store) ? ' pinned' : ''));
      const head = element('div', 'state-head');
      const pin = element('button', 'pin', pinned.has(store) ? '★' : '☆');
      pin.setAttribute('aria-pressed', pinned.has(store) ? 'true' : 'false');
      pin.title = pinned.has(store) ? 'Unpin' : 'Pin: keep this store first and open';
      pin.addEventListener('click', () => {
        if (pinned.has(store)) pinned.delete(store); else pinned.add(store);
        renderDetail(selected);
      });
      append(head, pin, storeName(store), element('span', 'muted', shortType(stores[store].type) +
        (stores[store].reflected ? ' (reflection)' : '')));
      box.appendChild(head);
      const body = element('div', 'state-body');
      if (holder) {
        const changed = rowChanges(index, store) !== null;
        body.appendChild(renderTree(copy(holder.tree), pinned.has(store) ? 3 : changed ? 1 : 0));
      } else {
        append(body, element('p', 'muted', 'No state recorded.'));
      }
      box.appendChild(body);
      detail.appendChild(box);
    }
  }

  // MARK: Plots

  function svgChild(svg, name, attributes, text) {
    const child = document.createElementNS(svg.namespaceURI, name);
    for (const key in attributes) child.setAttribute(key, String(attributes[key]));
    if (text !== undefined) child.textContent = text;
    svg.appendChild(child);
    return child;
  }

  function drawBars(svg, counts, labels, axisLabels) {
    const width = svg.clientWidth || 400;
    const height = svg.clientHeight || 90;
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    const maximum = Math.max(1, ...counts);
    const left = 34;
    const bottom = height - 14;
    const barWidth = (width - left) / Math.max(1, counts.length);
    svgChild(svg, 'line', { class: 'axis', x1: left, y1: bottom, x2: width, y2: bottom });
    svgChild(svg, 'text', { x: 2, y: 10 }, maximum.toLocaleString('en-US'));
    svgChild(svg, 'text', { x: 2, y: bottom }, '0');
    counts.forEach((count, i) => {
      const barHeight = (bottom - 4) * count / maximum;
      const bar = svgChild(svg, 'rect', { class: 'bar', x: left + i * barWidth + 0.5, y: bottom - barHeight,
        width: Math.max(1, barWidth - 1), height: barHeight });
      svgChild(bar, 'title', {}, labels[i] + ': ' + count.toLocaleString('en-US'));
    });
    const step = Math.max(1, Math.ceil(counts.length / 6));
    for (let i = 0; i < counts.length; i += step) {
      svgChild(svg, 'text', { x: left + i * barWidth, y: height - 2 }, axisLabels[i]);
    }
  }

  function drawPlots() {
    const transactions = rows.filter(row => row[0] === 0);
    const rate = document.getElementById('rate-plot');
    const histogram = document.getElementById('duration-plot');
    if (!transactions.length) {
      document.getElementById('plots').hidden = true;
      return;
    }
    const first = transactions[0][2];
    const last = transactions[transactions.length - 1][2];
    const seconds = Math.max(1, Math.ceil((last - first + 1) / 1000));
    const bucketSeconds = Math.max(1, Math.ceil(seconds / 120));
    const buckets = new Array(Math.ceil(seconds / bucketSeconds)).fill(0);
    for (const row of transactions) {
      const bucket = Math.min(buckets.length - 1, Math.max(0, Math.floor((row[2] - first) / 1000 / bucketSeconds)));
      buckets[bucket]++;
    }
    const times = buckets.map((_, i) => formatTime(first + i * bucketSeconds * 1000));
    drawBars(rate, buckets.map(count => Math.round(count / bucketSeconds)), times,
      times.map(time => time.slice(0, 8)));
    const peak = Math.max(...buckets) / bucketSeconds;
    document.getElementById('rate-caption').textContent = 'Transactions per second, ' +
      (bucketSeconds === 1 ? 'each second' : 'over ' + bucketSeconds + ' s each') + '; at most ' +
      Math.round(peak).toLocaleString('en-US') + '/s';

    const durations = transactions.map(row => row[3]).filter(value => value >= 0);
    if (!durations.length) {
      histogram.parentElement.hidden = true;
      return;
    }
    const counts = [];
    const uppers = [];
    let bound = 1;
    const largest = Math.max(...durations);
    while (bound <= Math.max(largest, 1)) bound *= 2;
    for (let upper = 1; upper <= bound; upper *= 2) {
      counts.push(0);
      uppers.push(formatDuration(upper));
    }
    for (const value of durations) {
      let bucket = 0;
      while ((1 << bucket) <= value && bucket < counts.length - 1) bucket++;
      counts[bucket]++;
    }
    const start = counts.findIndex(count => count > 0);
    drawBars(histogram, counts.slice(start), uppers.slice(start).map(upper => 'under ' + upper),
      uppers.slice(start).map(upper => '<' + upper));
    const sorted = durations.slice().sort((a, b) => a - b);
    const replayed = data.source.kind === 'live' ? '' : ', measured as the program replayed them';
    document.getElementById('duration-caption').textContent = 'Durations' + replayed + ': median ' +
      formatDuration(sorted[Math.floor(sorted.length / 2)]) + ', slowest ' + formatDuration(largest);
  }

  // MARK: Start

  // For tests and tools: the state of a store after a transaction, as canonical JSON.
  window.inspector = Object.freeze({
    rowCount: rows.length,
    stateText(storeId, rowIndex) {
      const store = stores.findIndex(candidate => candidate.id === storeId);
      const holder = store < 0 ? null : stateAfter(store, rowIndex);
      return holder ? canonical(holder.tree) : null;
    },
    rowOfTransaction(id) {
      const index = rowOfTransaction.get(id);
      return index === undefined ? -1 : index;
    },
  });

  renderHeader();
  applyFilter();
  performance.mark('inspector-rows');
  document.body.dataset.ready = 'rows';
  if (location.hash) followFragment();
  else if (rows.length) select(0, false);
  setTimeout(() => {
    drawPlots();
    document.body.dataset.plots = 'drawn';
  }, 0);
})();
