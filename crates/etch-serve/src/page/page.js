// etch serve's page: the sessions, one session's conversation streamed
// live, a prompt box with steer and abort. Everything the model, a tool
// or a log says is shown as text (textContent, never HTML), after the
// chat's own sanitizing: escape sequences removed whole, other control
// characters and direction overrides dropped from prose, and shown as
// escapes in a tool call's arguments, so what is shown is what runs.
'use strict';

const $ = (id) => document.getElementById(id);

const view = {
  id: null,         // the open session
  source: null,     // its EventSource
  seen: new Set(),  // log entry ids drawn (a replay never draws one twice)
  repeated: 0,      // entries the server sent again (a resume should send none)
  tools: new Map(), // tool call id -> its element
  asks: new Map(),  // tool call id -> its approval box, while it waits
  streaming: null,  // the assistant text streaming now
  running: false,
};

// --- sanitizing (the rules of crates/etch-sanitize) ---

const isBidi = (c) => (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
const isControl = (c) => c < 0x20 || (c >= 0x7f && c <= 0x9f);

// Prose: escape sequences removed whole, other controls dropped but
// newlines and tabs, direction overrides dropped.
function sanitize(text) {
  const s = String(text);
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x0a || c === 0x09) { out += s[i]; continue; }
    if (c === 0x1b) { i = skipEscape(s, i + 1); continue; }
    if (c === 0x9b) { i = skipCsi(s, i + 1); continue; }
    if (c === 0x90 || c === 0x9d || c === 0x98 || c === 0x9e || c === 0x9f) { i = skipString(s, i + 1); continue; }
    if (isControl(c) || isBidi(c)) continue;
    out += s[i];
  }
  return out;
}

// Each skip returns the index of the last character it consumed.
function skipEscape(s, i) {
  const c = s[i];
  if (c === '[') return skipCsi(s, i + 1);
  if (c === ']' || c === 'P' || c === 'X' || c === '^' || c === '_') return skipString(s, i + 1);
  if (c !== undefined && c >= ' ' && c <= '/') return i + 1;
  return c === undefined ? i - 1 : i;
}

function skipCsi(s, i) {
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x40 && c <= 0x7e) return i;
  }
  return s.length;
}

function skipString(s, i) {
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x07 || c === 0x9c) return i;
    if (c === 0x1b) return s[i + 1] === '\\' ? i + 1 : i;
  }
  return s.length;
}

// What must be read exactly: every control and override as an escape.
function visible(text) {
  let out = '';
  for (const ch of String(text)) {
    const c = ch.codePointAt(0);
    if (ch === '\t') out += '\\t';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (c === 0x1b) out += '\\e';
    else if (isControl(c) || isBidi(c)) out += `\\u{${c.toString(16)}}`;
    else out += ch;
  }
  return out;
}

// --- the API ---

async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    throw new Error(data && data.error ? data.error.message : `${method} ${path}: ${response.status}`);
  }
  return data;
}

function status(text) {
  $('status').textContent = text;
}

function fail(error) {
  note(String(error.message || error), 'error');
}

// --- the sessions list ---

async function loadSessions() {
  let list;
  try {
    list = await api('GET', '/v1/sessions');
  } catch (error) {
    status(String(error.message || error));
    return;
  }
  const ul = $('sessions');
  ul.replaceChildren();
  for (const row of list.sessions) {
    const li = document.createElement('li');
    li.dataset.id = row.id;
    li.textContent = sanitize(row.title || row.id);
    const state = document.createElement('span');
    state.className = 'state';
    state.textContent = row.state === 'running' ? 'running' : '';
    li.append(state);
    li.title = `${row.id}\n${sanitize(row.cwd)}`;
    if (row.id === view.id) li.classList.add('open');
    li.addEventListener('click', () => open(row.id));
    ul.append(li);
  }
}

let reload = null;
function loadSoon() {
  clearTimeout(reload);
  reload = setTimeout(loadSessions, 200);
}

function watchSessions() {
  const all = new EventSource('/v1/events');
  all.addEventListener('session', loadSoon);
  all.addEventListener('open', loadSoon);
}

// --- one session ---

function open(id) {
  if (view.source) view.source.close();
  Object.assign(view, { id, seen: new Set(), repeated: 0, tools: new Map(), asks: new Map(), streaming: null, running: false });
  $('log').replaceChildren();
  $('title').textContent = id;
  history.replaceState(null, '', `/#${id}`);
  for (const li of $('sessions').children) li.classList.toggle('open', li.dataset.id === id);
  // The whole log first; on a reconnect the browser sends the last
  // entry id it got (Last-Event-ID), and the server resumes after it.
  const source = new EventSource(`/v1/sessions/${encodeURIComponent(id)}/events?after=0`);
  view.source = source;
  source.addEventListener('entry', (e) => {
    if (view.source !== source) return;
    if (view.seen.has(e.lastEventId)) { view.repeated += 1; return; }
    view.seen.add(e.lastEventId);
    entry(JSON.parse(e.data));
  });
  source.addEventListener('live', (e) => {
    if (view.source === source) live(JSON.parse(e.data));
  });
  source.addEventListener('open', () => {
    status('connected');
    buttons();
    // Calls that asked before this page connected.
    api('POST', `/v1/sessions/${encodeURIComponent(id)}/commands`, { type: 'get_state' })
      .then((state) => {
        if (view.source !== source) return;
        for (const ask of (state.data && state.data.approvals) || []) approval(ask);
      })
      .catch(() => {});
  });
  source.addEventListener('error', () => {
    status(source.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting…');
    buttons();
  });
  buttons();
}

function add(className, text) {
  const div = document.createElement('div');
  div.className = `entry ${className}`;
  if (text !== undefined) div.textContent = text;
  $('log').append(div);
  div.scrollIntoView({ block: 'end' });
  return div;
}

function note(text, className = 'note') {
  return add(className, text);
}

function texts(content) {
  return (content || []).filter((p) => p.type === 'text').map((p) => p.text).join('\n');
}

// A durable log entry.
function entry(e) {
  const data = e.data || {};
  switch (e.type) {
    case 'session.started':
      note(`session ${data.sessionId || ''} · ${sanitize(data.provider || '')} ${sanitize(data.model || '')}`);
      break;
    case 'message.user':
      add('user', sanitize(texts(data.content)));
      break;
    case 'message.assistant': {
      if (view.streaming) { view.streaming.remove(); view.streaming = null; }
      const text = texts(data.content);
      if (text) add('assistant', sanitize(text));
      for (const part of data.content || []) {
        if (part.type !== 'tool_call') continue;
        const box = add('tool');
        const call = document.createElement('div');
        call.className = 'call';
        call.textContent = `${visible(part.name)} ${visible(JSON.stringify(part.arguments))}`;
        const result = document.createElement('div');
        result.className = 'result';
        box.append(call, result);
        view.tools.set(part.id, box);
      }
      if (data.errorMessage) note(sanitize(data.errorMessage), 'error');
      break;
    }
    case 'message.tool': {
      settle(data.toolCallId);
      let box = view.tools.get(data.toolCallId);
      if (!box) {
        box = add('tool');
        box.append(Object.assign(document.createElement('div'), { className: 'call', textContent: visible(data.toolName) }));
        box.append(Object.assign(document.createElement('div'), { className: 'result' }));
      }
      box.classList.remove('running');
      box.classList.toggle('error', Boolean(data.isError));
      box.querySelector('.result').textContent = sanitize(texts(data.content));
      break;
    }
    case 'loop.guard':
    case 'loop.grounding':
      note(sanitize(data.note || data.message || e.type));
      break;
    case 'session.navigate':
      note('(moved to another point of the conversation)');
      break;
    case 'approval.decision': {
      const why = data.reason ? `: ${data.reason}` : '';
      note(sanitize(`approval: ${data.toolName} ${data.decision.replace(/_/g, ' ')} by ${data.by}${why}`));
      break;
    }
    default:
      break;
  }
}

// A call waiting for the user: what it would run, why it asks, and the
// answers. The box goes once answered or once the call ends.
function approval(ev) {
  if (view.asks.has(ev.toolCallId)) return;
  const box = add('approval');
  box.append(Object.assign(document.createElement('div'), {
    className: 'why',
    textContent: `${visible(ev.toolName)} asks for approval: ${sanitize(ev.reason)}`,
  }));
  box.append(Object.assign(document.createElement('div'), {
    className: 'call',
    textContent: visible(ev.toolName === 'bash' && ev.args ? ev.args.command : JSON.stringify(ev.args)),
  }));
  const reason = Object.assign(document.createElement('input'), { className: 'reason', placeholder: 'reason (with Deny)' });
  const answer = (decision) => {
    const command = { type: 'approve', toolCallId: ev.toolCallId, decision };
    if (decision === 'deny' && reason.value.trim()) command.reason = reason.value.trim();
    api('POST', `/v1/sessions/${encodeURIComponent(view.id)}/commands`, command)
      .then((r) => { if (r && r.success === false) note(sanitize(r.error), 'error'); })
      .catch(fail);
    settle(ev.toolCallId);
  };
  const row = Object.assign(document.createElement('div'), { className: 'buttons' });
  for (const [decision, label] of [['allow', 'Allow'], ['allow_for_session', 'Allow for this session'], ['deny', 'Deny']]) {
    const button = Object.assign(document.createElement('button'), { type: 'button', textContent: label });
    button.dataset.decision = decision;
    button.addEventListener('click', () => answer(decision));
    row.append(button);
  }
  row.append(reason);
  box.append(row);
  view.asks.set(ev.toolCallId, box);
}

// The call stopped waiting: its box goes.
function settle(id) {
  const box = view.asks.get(id);
  if (box) { box.remove(); view.asks.delete(id); }
}

// A live protocol event (never replayed).
function live(ev) {
  switch (ev.type) {
    case 'agent_start':
      view.running = true;
      buttons();
      break;
    case 'agent_end':
      for (const id of [...view.asks.keys()]) settle(id);
      view.running = false;
      if (view.streaming) { view.streaming.remove(); view.streaming = null; }
      if (ev.error) note(sanitize(ev.error), 'error');
      buttons();
      break;
    case 'message_update':
      if (ev.delta && ev.delta.type === 'text_delta') {
        if (!view.streaming) view.streaming = add('assistant streaming', '');
        view.streaming.textContent += sanitize(ev.delta.delta);
        view.streaming.scrollIntoView({ block: 'end' });
      }
      break;
    case 'tool_execution_start': {
      const box = view.tools.get(ev.toolCallId);
      if (box) box.classList.add('running');
      break;
    }
    case 'approval_request':
      approval(ev);
      break;
    case 'tool_execution_update': {
      const box = view.tools.get(ev.toolCallId);
      if (box) box.querySelector('.result').textContent = sanitize(ev.partialResult);
      break;
    }
    case 'queue_update': {
      const waiting = (ev.steering || []).length + (ev.followUp || []).length;
      status(waiting ? `${waiting} queued` : 'connected');
      break;
    }
    case 'response':
      if (ev.success === false) note(sanitize(ev.error || 'refused'), 'error');
      break;
    case 'broken':
      note(sanitize(ev.message), 'error');
      break;
    default:
      break;
  }
}

function buttons() {
  const open = Boolean(view.id);
  $('message').disabled = !open;
  $('send').disabled = !open;
  $('send').textContent = view.running ? 'Queue' : 'Send';
  $('steer').disabled = !open || !view.running;
  $('abort').disabled = !open || !view.running;
}

async function prompt(behavior) {
  const box = $('message');
  const message = box.value.trim();
  if (!message || !view.id) return;
  const body = { message };
  if (behavior) body.streamingBehavior = behavior;
  try {
    await api('POST', `/v1/sessions/${encodeURIComponent(view.id)}/prompt`, body);
    box.value = '';
  } catch (error) {
    fail(error);
  }
}

function start() {
  $('ask').addEventListener('submit', (e) => {
    e.preventDefault();
    prompt(view.running ? 'followUp' : undefined);
  });
  $('message').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      prompt(view.running ? 'followUp' : undefined);
    }
  });
  $('steer').addEventListener('click', () => prompt('steer'));
  $('abort').addEventListener('click', () => {
    if (view.id) api('POST', `/v1/sessions/${encodeURIComponent(view.id)}/commands`, { type: 'abort' }).catch(fail);
  });
  $('new').addEventListener('click', async () => {
    try {
      const created = await api('POST', '/v1/sessions', {});
      await loadSessions();
      open(created.id);
    } catch (error) {
      fail(error);
    }
  });
  loadSessions().then(() => {
    // A session id is letters and digits; anything else is not one.
    const wanted = location.hash.slice(1);
    if (/^[0-9A-Za-z]+$/.test(wanted)) open(wanted);
  });
  watchSessions();
}

start();
