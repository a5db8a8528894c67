import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { blockCommands, curlRequest, docBlocks, shownKeys } from '../../helpers/doc-blocks.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// Every shell block of README.md and docs/*.md runs here against the built
// daemon (its built-in simulated controller, as the quick start has it), or
// says why it cannot. curl may be missing on a machine with Node alone, so
// here each curl command is read and sent with Node's HTTP client; the
// clients suite runs the same blocks verbatim with the real curl.

const blocks = docBlocks();
let daemon: SpawnedDaemon;

before(async () => {
  daemon = await spawnDaemon([]);
});
after(() => daemon.stop());

test('the docs have shell blocks, and each one runs here or says why not', () => {
  assert.ok(blocks.length >= 10, `${blocks.length} blocks`);
  for (const block of blocks) {
    if (block.notRunnable !== undefined) {
      assert.ok(block.notRunnable.length >= 10, `${block.file}:${block.line}: a reason, not just a marker`);
      continue;
    }
    const commands = blockCommands(block.text);
    assert.ok(commands.length > 0, `${block.file}:${block.line}: an empty block`);
    for (const command of commands) {
      assert.equal(command.argv[0], 'curl', `${block.file}:${block.line}: '${command.argv.join(' ')}' cannot run in a test: make it a curl command or mark the block <!-- not runnable: why -->`);
    }
  }
});

for (const block of blocks.filter((one) => one.notRunnable === undefined)) {
  test(`${block.file}:${block.line} answers as shown`, async () => {
    for (const command of blockCommands(block.text)) {
      const request = curlRequest(command.argv, daemon.baseUrl);
      const reply = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body });
      const text = await reply.text();
      const what = `${block.file}:${block.line}: ${command.argv.join(' ')}`;
      assert.ok(reply.status < 400, `${what} → ${reply.status} ${text}`);
      // The answer the docs show: its keys are in the real one, and a success shown is one.
      for (const key of shownKeys(command.shown)) assert.ok(text.includes(`"${key}":`), `${what}: the answer has no "${key}" (${text.slice(0, 300)})`);
      if (command.shown.includes('"success":true')) assert.ok(text.includes('"success":true'), `${what}: ${text.slice(0, 300)}`);
    }
  });
}
