import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import { MAX_WAITING_REQUESTS, REQUESTS_PER_TURN } from '../../../src/api/http/pipelining.js';
import { startGate } from '../../helpers/in-process.js';

// One connection pipelining requests gets a few routed per event-loop turn;
// another client's request is answered in between, not after the whole batch.

const PIPELINED = 4000;

function countReplies(text: string): number {
  let count = 0;
  for (let at = text.indexOf('HTTP/1.1 '); at !== -1; at = text.indexOf('HTTP/1.1 ', at + 1)) count++;
  return count;
}

test(`a connection pipelining ${PIPELINED} requests does not hold up another client; its own answers all come, in order`, async () => {
  assert.ok(PIPELINED > REQUESTS_PER_TURN * 100 && PIPELINED < MAX_WAITING_REQUESTS);
  const gate = await startGate();
  const port = Number(new URL(gate.baseUrl).port);
  const flood = connect({ port, host: '127.0.0.1' });
  flood.on('error', () => undefined);
  try {
    await once(flood, 'connect');
    let received = '';
    /** Replies counted so far, and where the next count starts: counting all of `received` per chunk is quadratic. */
    let replies = 0;
    let counted = 0;
    flood.setEncoding('latin1');
    // Paths 0 … PIPELINED-1, each answered with a 404 naming the path, so the order can be checked.
    const allAnswered = new Promise<void>((resolve) => {
      flood.on('data', (chunk: string) => {
        received += chunk;
        // A status line split between two chunks is counted with the second: start a line's length back.
        const from = Math.max(0, counted - 'HTTP/1.1 '.length + 1);
        replies += countReplies(received.slice(from));
        counted = received.length;
        if (replies >= PIPELINED && received.endsWith('}')) resolve();
      });
    });
    let batch = '';
    for (let i = 0; i < PIPELINED; i++) batch += `GET /rest/do/p${i} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    flood.write(batch);
    // Sent once the daemon has begun on the batch.
    await new Promise<void>((resolve) => flood.once('data', () => resolve()));
    const answer = await fetch(`${gate.baseUrl}/rest/di/1_01`);
    assert.equal(answer.status, 200);
    await answer.json();
    const before = countReplies(received);
    assert.ok(before < PIPELINED, `the other client was answered after ${before} of ${PIPELINED} pipelined requests, not after all`);
    await allAnswered;
    assert.equal(countReplies(received), PIPELINED);
    const order = [...received.matchAll(/'p(\d+)'/g)].map((match) => Number(match[1]));
    assert.deepEqual(order, Array.from({ length: PIPELINED }, (_, i) => i), 'answered in the order asked');
  } finally {
    flood.destroy();
    await gate.close();
  }
});
