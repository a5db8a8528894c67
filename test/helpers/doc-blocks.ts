import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The shell code blocks of README.md and docs/*.md, for the tests that run
// them against a daemon so the documentation cannot rot. A block that cannot
// run in a test says why in an HTML comment on the line before its fence:
//
//   <!-- not runnable: deploys to a controller over ssh -->
//
// Every other block must consist of curl commands against the documented
// address (127.0.0.1:8080 or localhost:8080), which the tests point at their
// daemon. `# …` lines right after a command show its answer; the keys named
// there must be in the real answer.

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface DocBlock {
  file: string;
  line: number;
  text: string;
  /** Why it is not run, when its marker says so. */
  notRunnable?: string;
}

export interface DocCommand {
  argv: string[];
  /** The `# …` answer shown after it, joined, or ''. */
  shown: string;
}

const SHELL = /^```(sh|bash|shell)\s*$/;

export function docBlocks(root = ROOT): DocBlock[] {
  const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
  const blocks: DocBlock[] = [];
  for (const file of files) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!SHELL.test(lines[i]!)) continue;
      const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
      if (end < 0) throw new Error(`${file}:${i + 1}: code block never closed`);
      let before = i - 1;
      while (before >= 0 && lines[before]!.trim() === '') before--;
      const marker = before >= 0 ? /^<!--\s*not runnable:\s*(.*?)\s*-->$/.exec(lines[before]!.trim()) : null;
      blocks.push({ file, line: i + 1, text: lines.slice(i + 1, end).join('\n'), ...(marker ? { notRunnable: marker[1]! } : {}) });
      i = end;
    }
  }
  return blocks;
}

/**
 * The commands of a block, split as sh would split words: quotes, backslash
 * line continuations, comments; `&&`, `||`, `;`, `|` and `&` end a command.
 */
export function blockCommands(text: string): DocCommand[] {
  const commands: DocCommand[] = [];
  let words: string[] = [];
  let word: string | undefined;
  let lastComment: DocCommand | undefined;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) commands.push((lastComment = { argv: words, shown: '' }));
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unclosed ' in: ${text}`);
      word = (word ?? '') + text.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let value = '';
      for (i++; i < text.length && text[i] !== '"'; i++) value += text[i] === '\\' && '"\\$`'.includes(text[i + 1]!) ? text[++i] : text[i];
      word = (word ?? '') + value;
    } else if (c === '\\' && text[i + 1] === '\n') {
      i++;
    } else if (c === '\\') {
      word = (word ?? '') + text[++i];
    } else if (c === '#' && word === undefined) {
      const eol = text.indexOf('\n', i);
      const comment = text.slice(i + 1, eol < 0 ? text.length : eol).trim();
      // A comment on lines of its own, after a command, shows that command's answer.
      if (words.length === 0 && lastComment) lastComment.shown += comment;
      i = (eol < 0 ? text.length : eol) - 1;
    } else if (c === '\n' || c === ';' || c === '&' || c === '|') {
      endCommand();
      if (c === '\n' && text[i + 1] === '\n') lastComment = undefined;
      if ((c === '&' || c === '|') && text[i + 1] === c) i++;
    } else if (c === ' ' || c === '\t') {
      endWord();
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand();
  return commands;
}

export interface CurlRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** The documented address, as the docs write it. */
const DOCUMENTED = /^(https?:\/\/)?(127\.0\.0\.1|localhost):8080/;

/** What a documented curl command asks, pointed at `baseUrl`. Throws on options this reader does not know. */
export function curlRequest(argv: readonly string[], baseUrl: string): CurlRequest {
  if (argv[0] !== 'curl') throw new Error(`not a curl command: ${argv.join(' ')}`);
  let method: string | undefined;
  let url: string | undefined;
  const headers: Record<string, string> = {};
  const data: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    switch (arg) {
      case '-s':
      case '-S':
      case '-sS':
        break;
      case '-X':
        method = argv[++i];
        break;
      case '-d':
      case '--data':
        data.push(argv[++i]!);
        break;
      case '-H': {
        const header = argv[++i]!;
        const colon = header.indexOf(':');
        headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
        break;
      }
      default:
        if (arg.startsWith('-')) throw new Error(`curl option ${arg} is not known to the doc runner (test/helpers/doc-blocks.ts): ${argv.join(' ')}`);
        if (!DOCUMENTED.test(arg)) throw new Error(`curl to ${arg}: documented commands use 127.0.0.1:8080 or localhost:8080`);
        url = arg.replace(DOCUMENTED, baseUrl);
    }
  }
  if (!url) throw new Error(`curl without a URL: ${argv.join(' ')}`);
  const body = data.length > 0 ? data.join('&') : undefined;
  // curl's own defaults: -d makes a POST with a form content type.
  if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/x-www-form-urlencoded';
  return { method: method ?? (body === undefined ? 'GET' : 'POST'), url, headers, ...(body === undefined ? {} : { body }) };
}

/** The JSON keys an answer shown in the docs names (`"dev":` …). */
export function shownKeys(shown: string): string[] {
  return [...new Set([...shown.matchAll(/"([^"]+)":/g)].map((match) => match[1]!))];
}

/** The block's text with the documented address replaced by `baseUrl` (its host:port). */
export function pointedAt(text: string, baseUrl: string): string {
  const hostPort = new URL(baseUrl).host;
  return text.replace(/(127\.0\.0\.1|localhost):8080/g, hostPort);
}
