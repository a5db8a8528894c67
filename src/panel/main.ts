import { NeedsToken, listAll, listInterlocks, listType, saveAliases, setToken, token, write, type Device } from './api.js';
import { DeviceView, slaveState, type Actions } from './device-view.js';
import { formatNumber, h, setAttr, setText } from './dom.js';
import { ONE_WIRE_BOARD, boardOf, typeName } from './labels.js';
import { startLiveFeed, type LinkState } from './live.js';
import { drawChart, extent, loadTrends, svgElement } from './trends.js';
import { startSparkplugStatus } from './sparkplug-status.js';
import { logIn, logOut, sessionInfo, type SessionInfo } from './session.js';
import { refreshAudit } from './audit-view.js';

// The control panel: every device of every board, grouped by board and type,
// kept live over /ws. The list is built once; pushes are collected per device
// and applied once per frame, so a burst of changes costs one DOM patch per
// changed card and nothing for the others.

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const boardsEl = $<HTMLElement>('boards');
const conn = $<HTMLElement>('conn');
const notice = $<HTMLElement>('notice');
const search = $<HTMLInputElement>('search');
const boardFilter = $<HTMLSelectElement>('board-filter');
const typeFilter = $<HTMLSelectElement>('type-filter');
const count = $<HTMLElement>('count');
const tokenDialog = $<HTMLDialogElement>('token-dialog');
const tokenInput = $<HTMLInputElement>('token-input');
const tokenError = $<HTMLElement>('token-error');
const tokenButton = $<HTMLButtonElement>('token-button');
const loginDialog = $<HTMLDialogElement>('login-dialog');
const loginUser = $<HTMLInputElement>('login-user');
const loginPassword = $<HTMLInputElement>('login-password');
const loginError = $<HTMLElement>('login-error');
const who = $<HTMLElement>('who');
const logoutButton = $<HTMLButtonElement>('logout-button');
const auditButton = $<HTMLButtonElement>('audit-button');
const auditSection = $<HTMLElement>('audit');
const trendDialog = $<HTMLDialogElement>('trend-dialog');
const trendTitle = $<HTMLElement>('trend-title');
const trendRange = $<HTMLElement>('trend-range');
const trendChart = svgElement('svg', { viewBox: '0 0 640 260', class: 'chart', role: 'img' });
$<HTMLElement>('trend-chart').append(trendChart);

/**
 * Types that are registers or the boards' inner workings: per board, behind a
 * "registers (N)" disclosure that starts closed, so the I/O comes first.
 */
const INTERNAL = new Set(['register', 'modbus_slave', 'device_info', 'owpower', 'nv_save', 'owbus', 'run']);

interface TypeGroup {
  root: HTMLElement;
  grid: HTMLElement;
  views: DeviceView[];
}

interface Board {
  id: string;
  root: HTMLElement;
  title: HTMLElement;
  state: HTMLElement;
  stats: HTMLElement;
  groups: Map<string, TypeGroup>;
  /** The disclosure holding the internal groups, made with the first of them. */
  internal?: { root: HTMLDetailsElement; summary: HTMLElement; userOpen: boolean };
}

const views = new Map<string, DeviceView>();
const boards = new Map<string, Board>();
const queued = new Map<string, Device>();
let frameRequested = false;
let live: { restart(): void } | undefined;
let firstOpen = true;
/** The WebSocket feed is up: every change reaches the cards through it. */
let linkLive = false;

const actions: Actions = {
  async write(view, fields) {
    try {
      const confirmed = await write(view.device.dev, String(view.device.circuit), fields);
      // With the live feed up, the write's own change comes over the WebSocket, in order with
      // every change after it. The reply comes over another connection and can arrive after a
      // later change's push (the next scan's reading), so showing it would put an older state
      // back; the card keeps what the feed says. Settings (alias, debounce, a watchdog's
      // timeout) are not pushed, as in EVOK, so those fields come from the reply.
      return linkLive && confirmed ? withSettings(view.device, confirmed, fields) : confirmed;
    } catch (error) {
      if (error instanceof NeedsToken) askToken(error.message);
      throw error;
    }
  },
  openTrend(key, title, unit) {
    openTrend = { key, unit };
    setText(trendTitle, title);
    trendChart.setAttribute('aria-label', `${title}, last hour`);
    drawOpenTrend();
    if (!trendDialog.open) trendDialog.showModal();
  },
};

/** The trend in the big chart while its dialog is open, redrawn with every reading. */
let openTrend: { key: string; unit: string } | undefined;

function drawOpenTrend(): void {
  if (!openTrend) return;
  drawChart(trendChart, openTrend.key, { width: 640, height: 260, left: 56, bottom: 22 }, true);
  const range = extent(openTrend.key);
  const unit = openTrend.unit ? ` ${openTrend.unit}` : '';
  setText(trendRange, range ? `Last hour: ${formatNumber(range[0])} to ${formatNumber(range[1])}${unit}` : 'No readings in the last hour yet');
}

trendDialog.addEventListener('close', () => (openTrend = undefined));

/**
 * The card's state with the written fields other than `value` taken from a write's reply;
 * undefined when there are none. A value comes over the feed, in order with later readings.
 */
function withSettings(current: Device, confirmed: Device, written: Record<string, unknown>): Device | undefined {
  const settings = Object.keys(written).filter((field) => field !== 'value' && field in confirmed);
  if (settings.length === 0 && !('alias' in written)) return undefined;
  const merged: Device = { ...current };
  for (const field of settings) merged[field] = confirmed[field];
  // An alias removed is a field gone from the reply.
  if ('alias' in written && !('alias' in confirmed)) delete merged['alias'];
  return merged;
}

function boardFor(id: string): Board {
  let board = boards.get(id);
  if (board) return board;
  const title = h('span', { text: boardTitle(id) });
  const state = h('span', { class: 'state', hidden: true });
  const stats = h('span', { class: 'stats' });
  const heading = h('h2', {}, title, state, stats);
  const root = h('section', { class: 'board', 'data-board': id, 'aria-label': boardTitle(id) }, heading);
  board = { id, root, title, state, stats, groups: new Map() };
  boards.set(id, board);
  // Boards in numeric order, "other" last.
  const after = [...boards.values()]
    .filter((other) => other !== board && compareBoards(other.id, id) > 0)
    .sort((a, b) => compareBoards(a.id, b.id))[0];
  boardsEl.insertBefore(root, after?.root ?? null);
  boardFilter.append(h('option', { value: boardOption(id), text: id === '' ? 'Other' : boardTitle(id) }));
  return board;
}

/** The filter's value for a board: "" is "All boards", so the devices of no board have one of their own. */
const OTHER_BOARDS = 'other';
function boardOption(id: string): string {
  return id === '' ? OTHER_BOARDS : id;
}

/** Until its modbus_slave is known: "Board 1", "1-Wire", "Other devices". */
function boardTitle(id: string, slave?: Device): string {
  if (id === '') return 'Other devices';
  if (id === ONE_WIRE_BOARD) return '1-Wire';
  if (!slave) return `Board ${id}`;
  // "M503 · board 00 · slave 1"; an extension module is named by its model: "xS11 · slave 2".
  const parts: string[] = [];
  const product = typeof slave.product === 'string' ? slave.product : '';
  const model = typeof slave.model === 'string' ? slave.model : '';
  if (product) parts.push(product);
  if (/^[0-9a-f]{2}$/i.test(model)) parts.push(`board ${model}`);
  else if (model && model !== product) parts.push(model);
  parts.push(`slave ${formatNumber(slave.slave_id)}`);
  const text = parts.join(' · ');
  return text.startsWith('board') ? `B${text.slice(1)}` : text;
}

/** Boards in numeric order, then 1-Wire, then "other". */
function compareBoards(a: string, b: string): number {
  const rank = (id: string) => (id === '' ? 2 : id === ONE_WIRE_BOARD ? 1 : 0);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  return Number(a) - Number(b) || a.localeCompare(b);
}

function groupFor(board: Board, dev: string): TypeGroup {
  let group = board.groups.get(dev);
  if (group) return group;
  const grid = h('div', { class: 'grid' });
  const root = h('div', { class: 'group', 'data-type': dev }, h('h3', { text: typeName(dev) }), grid);
  group = { root, grid, views: [] };
  board.groups.set(dev, group);
  if (INTERNAL.has(dev)) internalOf(board).root.append(root);
  else board.root.insertBefore(root, board.internal?.root ?? null);
  if (![...typeFilter.options].some((option) => option.value === dev)) typeFilter.append(h('option', { value: dev, text: typeName(dev) }));
  return group;
}

function internalOf(board: Board): NonNullable<Board['internal']> {
  if (board.internal) return board.internal;
  const summary = h('summary', { text: 'registers' });
  const root = h('details', { class: 'internal' }, summary);
  const internal = { root, summary, userOpen: false };
  // What the user opened or closed is kept; a search only opens it while it matches inside.
  root.addEventListener('toggle', () => {
    if (!filtering()) internal.userOpen = root.open;
    // Registers are not pushed: fetched when opened and then every 5 s, never while closed.
    if (root.open) void refreshRegisters();
  });
  board.internal = internal;
  board.root.append(root);
  return internal;
}

function filtering(): boolean {
  return search.value.trim() !== '' || typeFilter.value !== '';
}

/** A card for a device not seen before (a board that joined, a new 1-Wire sensor). */
function addView(device: Device, into?: DocumentFragment): DeviceView {
  const board = boardFor(boardOf(device));
  const group = groupFor(board, device.dev);
  const view = new DeviceView(device, actions, typeName(device.dev));
  views.set(view.key, view);
  group.views.push(view);
  if (board.root.getAttribute('data-state') === 'offline') view.setCardState('offline');
  if (INTERNAL.has(device.dev)) countInternal(board);
  (into ?? group.grid).append(view.root);
  if (device.dev === 'modbus_slave' || device.dev === 'device_info') renderBoardHead(board);
  return view;
}

function renderBoardHead(board: Board): void {
  const slave = views.get(`modbus_slave/${board.id}`)?.device;
  const title = boardTitle(board.id, slave);
  setText(board.title, title);
  setAttr(board.root, 'aria-label', title);
  const option = [...boardFilter.options].find((one) => one.value === board.id);
  if (option && board.id !== '') setText(option, title);
  if (!slave) return;
  const state = slaveState(slave);
  board.state.hidden = false;
  setText(board.state, state);
  if (board.root.getAttribute('data-state') !== state) {
    setAttr(board.root, 'data-state', state);
    for (const group of board.groups.values()) for (const view of group.views) view.setCardState(state === 'offline' ? 'offline' : 'live');
  }
  const parts: string[] = [];
  const stat = (name: string, value: unknown) => {
    if (typeof value !== 'number' && typeof value !== 'string') return;
    // Success ratios (0..1) read better as percentages.
    const shown = typeof value === 'number' && name.includes('ratio') ? `${formatNumber(Math.round(value * 1000) / 10)} %` : formatNumber(value);
    parts.push(`${name.replaceAll('_', ' ')} ${shown}`);
  };
  for (const [name, value] of Object.entries(slave)) if (name.includes('ratio')) stat(name, value);
  const stats = slave.stats;
  if (stats && typeof stats === 'object') {
    for (const [name, value] of Object.entries(stats as Record<string, unknown>)) stat(name, value);
  }
  setText(board.stats, parts.join(' · '));
}

/** Counts each board's internal cards on its disclosure. */
function countInternal(board: Board): void {
  if (!board.internal) return;
  let total = 0;
  for (const [dev, group] of board.groups) if (INTERNAL.has(dev)) total += group.views.length;
  setText(board.internal.summary, `registers (${total})`);
}

/** Builds every card in one go, off-document, then inserts each board's grids once. */
function renderAll(devices: Device[]): void {
  // The first time, the whole list is built detached and goes in with one insertion.
  const first = views.size === 0;
  const parent = boardsEl.parentNode!;
  const next = boardsEl.nextSibling;
  if (first) boardsEl.remove();
  try {
    buildCards(devices);
  } finally {
    if (first) parent.insertBefore(boardsEl, next);
  }
  if (boardsEl.hasAttribute('aria-busy')) {
    boardsEl.removeAttribute('aria-busy');
    // For measurements (bench/panel.mjs): when the first full list was in the document.
    performance.mark('iogate-rendered');
  }
}

function buildCards(devices: Device[]): void {
  const fragments = new Map<TypeGroup, DocumentFragment>();
  for (const device of devices) {
    const known = views.get(`${device.dev}/${device.circuit}`);
    if (known) {
      known.update(device);
      continue;
    }
    const board = boardFor(boardOf(device));
    const group = groupFor(board, device.dev);
    let fragment = fragments.get(group);
    if (!fragment) fragments.set(group, (fragment = document.createDocumentFragment()));
    addView(device, fragment);
  }
  for (const [group, fragment] of fragments) group.grid.append(fragment);
  for (const board of boards.values()) renderBoardHead(board);
  applyFilter();
}

function enqueue(devices: Device[]): void {
  for (const device of devices) queued.set(`${device.dev}/${device.circuit}`, device);
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(flush);
  }
}

function flush(): void {
  frameRequested = false;
  let added = false;
  const heads = new Set<Board>();
  for (const [key, device] of queued) {
    const view = views.get(key);
    if (view) view.update(device);
    else {
      addView(device);
      added = true;
    }
    if (device.dev === 'modbus_slave' || device.dev === 'device_info') heads.add(boardFor(boardOf(device)));
  }
  if (openTrend && queued.has(openTrend.key.slice(0, openTrend.key.lastIndexOf('/')))) drawOpenTrend();
  queued.clear();
  for (const board of heads) renderBoardHead(board);
  if (added) applyFilter();
}

function applyFilter(): void {
  const query = search.value.trim().toLowerCase();
  const words = query === '' ? [] : query.split(/\s+/);
  const board = boardFilter.value;
  const type = typeFilter.value;
  let shown = 0;
  for (const entry of boards.values()) {
    let boardShown = 0;
    const boardMatches = board === '' || boardOption(entry.id) === board;
    for (const [dev, group] of entry.groups) {
      let groupShown = 0;
      const typeMatches = boardMatches && (type === '' || dev === type);
      for (const view of group.views) {
        const visible = typeMatches && words.every((word) => view.haystack.includes(word));
        if (view.root.hidden === visible) view.root.hidden = !visible;
        if (visible) groupShown++;
      }
      group.root.hidden = groupShown === 0;
      boardShown += groupShown;
    }
    entry.root.hidden = boardShown === 0;
    shown += boardShown;
    if (entry.internal) {
      let inside = 0;
      for (const [dev, group] of entry.groups) if (INTERNAL.has(dev) && !group.root.hidden) inside++;
      entry.internal.root.hidden = inside === 0;
      const open = filtering() ? inside > 0 : entry.internal.userOpen;
      if (entry.internal.root.open !== open) entry.internal.root.open = open;
    }
  }
  setText(count, shown === views.size ? `${views.size} devices` : `${shown} of ${views.size} devices`);
}

let pollTimer: number | undefined;

function showLink(state: LinkState): void {
  linkLive = state.kind === 'live';
  if (state.kind === 'live') {
    window.clearInterval(pollTimer);
    pollTimer = undefined;
    setAttr(conn, 'data-state', 'live');
    setText(conn, 'Live');
  } else if (state.kind === 'down') {
    // The WebSocket may be switched off (apis.websocket) while HTTP works: then poll.
    if (pollTimer === undefined) pollTimer = window.setInterval(() => void poll(), POLL_MS);
    void poll();
  } else if (pollTimer === undefined) {
    setAttr(conn, 'data-state', 'connecting');
    setText(conn, 'Connecting…');
  }
}

const POLL_MS = 1000;

async function poll(): Promise<void> {
  try {
    enqueue(await listAll());
    setAttr(conn, 'data-state', 'polling');
    setText(conn, 'Polling (no WebSocket)');
  } catch (error) {
    if (error instanceof NeedsToken) askToken(error.message);
    setAttr(conn, 'data-state', 'down');
    setText(conn, 'Disconnected');
  }
}

function showNotice(message: string): void {
  setText(notice, message);
  notice.hidden = message === '';
}

/** Whether the controller has panel users: then a refusal asks for a login rather than a token. */
let usersConfigured = false;

function applySession(info: SessionInfo): void {
  usersConfigured = info.users;
  who.hidden = info.user === null;
  setText(who, info.user === null ? '' : `${info.user} (${info.scope ?? ''})`);
  logoutButton.hidden = info.user === null;
  auditButton.hidden = info.scope !== 'admin' || !info.users;
  if (auditButton.hidden) showAudit(false);
}

function showAudit(open: boolean): void {
  auditSection.hidden = !open;
  auditButton.setAttribute('aria-expanded', String(open));
  if (open) void refreshAudit($<HTMLElement>('audit-rows'), $<HTMLElement>('audit-status'));
}

function askLogin(message: string): void {
  setText(loginError, message);
  if (!loginDialog.open) loginDialog.showModal();
  loginUser.focus();
}

function askToken(message: string): void {
  // A person logs in; the token prompt stays for controllers with tokens only.
  if (usersConfigured && !token()) return askLogin(loginDialog.open ? message : '');
  setText(tokenError, token() ? message : '');
  // Stays in the header, so a dismissed prompt can be opened again.
  tokenButton.hidden = false;
  if (!tokenDialog.open) tokenDialog.showModal();
  tokenInput.focus();
}

/** Loads (or reloads) every device; asks for a token when the API wants one. */
async function load(): Promise<boolean> {
  try {
    renderAll(await listAll());
    showNotice('');
    return true;
  } catch (error) {
    if (error instanceof NeedsToken) askToken(error.message);
    else showNotice(`Cannot load the devices: ${(error as Error).message}`);
    return false;
  }
}

/** The live feed starts once the devices are listed (with a token, when one is needed). */
function goLive(): void {
  if (live) {
    live.restart();
    return;
  }
  live = startLiveFeed({
    onDevices: enqueue,
    onState: showLink,
    // After a reconnect, what changed while the link was down is fetched again.
    onOpen: () => {
      if (!firstOpen) void load();
      firstOpen = false;
    },
  });
}

/**
 * Slave statistics and raw registers are not pushed (registers on purpose, as
 * in EVOK); refresh them now and then while the page is visible.
 */
async function refreshUnpushed(): Promise<void> {
  if (document.hidden || views.size === 0) return;
  try {
    enqueue(await listType('modbus_slave'));
  } catch {
    // The live feed shows connection problems; a missed refresh changes nothing.
  }
  await refreshRegisters();
}

/**
 * Registers, only while a board shows them: a closed disclosure costs no download (all of them
 * every 5 s came to about 14 MB an hour, on a phone too).
 */
async function refreshRegisters(): Promise<void> {
  if (document.hidden || ![...boards.values()].some((board) => board.internal?.root.open && board.groups.has('register'))) return;
  try {
    enqueue(await listType('register'));
  } catch {
    // As above.
  }
}

/**
 * Each output's part in a cover or an interlock group, from the `cover` devices' `up`/`down` and
 * iogate's `/rest/interlock` groups (EVOK's output objects stay as they are).
 */
async function showRoles(): Promise<void> {
  const roles = new Map<string, { text: string[]; switchable: boolean }>();
  const note = (key: string, text: string, switchable: boolean) => {
    const role = roles.get(key) ?? { text: [], switchable: true };
    role.text.push(text);
    role.switchable &&= switchable;
    roles.set(key, role);
  };
  for (const view of views.values()) {
    const cover = view.device;
    if (cover.dev !== 'cover') continue;
    for (const end of ['up', 'down'] as const) {
      if (typeof cover[end] === 'string') note(cover[end], `Cover ${typeof cover.alias === 'string' && cover.alias !== '' ? cover.alias : cover.circuit} · ${end} (use the cover's buttons)`, false);
    }
  }
  let groups: Device[] = [];
  try {
    groups = await listInterlocks();
  } catch (error) {
    if (error instanceof NeedsToken) askToken(error.message);
  }
  for (const group of groups) {
    const members = Array.isArray(group.outputs) ? group.outputs.map(String) : [];
    for (const member of members) {
      const others = members.filter((other) => other !== member).map((other) => views.get(other.replace(' ', '/'))?.device).map((other, i) => (other ? deviceName(other) : members.filter((m) => m !== member)[i]!));
      note(member.replace(' ', '/'), `Interlocked with ${others.join(', ')}: one on at a time`, true);
    }
  }
  for (const view of views.values()) {
    const role = roles.get(view.key);
    view.setRole(role ? role.text.join(' · ') : '', role?.switchable ?? true);
  }
}

/** "Pump" for an aliased device, else "ro 2_05". */
function deviceName(device: Device): string {
  return typeof device.alias === 'string' && device.alias !== '' ? device.alias : `${device.dev} ${device.circuit}`;
}

tokenDialog.addEventListener('close', () => {
  const value = tokenInput.value.trim();
  if (value === '') {
    if (views.size === 0) showNotice('This controller needs an access token: use the Token button.');
    return;
  }
  setToken(value);
  tokenInput.value = '';
  void load().then(start);
});

tokenButton.addEventListener('click', () => askToken(''));

$<HTMLFormElement>('login-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void logIn(loginUser.value.trim(), loginPassword.value).then(async (refused) => {
    loginPassword.value = '';
    if (refused !== undefined) return askLogin(refused);
    loginDialog.close();
    applySession(await sessionInfo());
    start(await load());
  });
});
// Without a login there is nothing to show; Escape leaves the page empty with a hint.
loginDialog.addEventListener('cancel', () => showNotice('This controller needs a login: reload the page to log in.'));
logoutButton.addEventListener('click', () => void logOut().then(() => location.reload()));
auditButton.addEventListener('click', () => showAudit(auditSection.hidden));
$<HTMLButtonElement>('audit-refresh').addEventListener('click', () => showAudit(true));
// Escape means "not now": whatever was typed is not used.
tokenDialog.addEventListener('cancel', () => (tokenInput.value = ''));

for (const control of [search, boardFilter, typeFilter]) control.addEventListener('input', applyFilter);
$<HTMLFormElement>('tools').addEventListener('submit', (event) => event.preventDefault());

$<HTMLButtonElement>('save-aliases').addEventListener('click', () => {
  saveAliases()
    .then(() => showNotice(''))
    .then(() => setText(count, 'Aliases saved'))
    .catch((error: unknown) => {
      if (error instanceof NeedsToken) askToken(error.message);
      showNotice(`Saving aliases failed: ${(error as Error).message}`);
    });
});

/** Once the devices are listed: the live feed, and the last hour for the charts. */
function start(loaded: boolean): void {
  if (!loaded) return;
  goLive();
  void fetchTrends();
  void showRoles();
}

/** The last hour from the daemon, so the charts are full on open. */
async function fetchTrends(): Promise<void> {
  try {
    await loadTrends((key) => views.get(key.slice(0, key.lastIndexOf('/')))?.redrawTrend(key));
  } catch {
    // Charts then start with what the page sees itself.
  }
}

void sessionInfo().then(async (info) => {
  applySession(info);
  // Nothing may be read yet: ask for the login first rather than be refused (and audited) once more.
  if (info.users && info.scope === null && !token()) return askLogin('');
  start(await load());
});
startSparkplugStatus($<HTMLElement>('sparkplug'));
setInterval(() => void refreshUnpushed(), 5000);
