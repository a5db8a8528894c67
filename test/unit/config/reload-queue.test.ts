import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReloadQueue } from '../../../src/runtime/reload-queue.js';

// src/runtime/reload-queue.ts: reloads never overlap, one asked for during a
// reload runs again after it (the file may have changed), and the requests
// made while one waits share it.

/** A reload that runs until `finish()` is called, counting how many ran and whether two overlapped. */
function gatedReloads() {
  const state = { started: 0, running: 0, overlapped: false, finish: [] as Array<(value: number) => void> };
  const queue = new ReloadQueue(
    () =>
      new Promise<number>((resolve) => {
        state.started++;
        state.running++;
        if (state.running > 1) state.overlapped = true;
        state.finish.push((value) => {
          state.running--;
          resolve(value);
        });
      }),
  );
  return { queue, state };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('a reload asked for during one waits for it, then runs again; those asked meanwhile share it', async () => {
  const { queue, state } = gatedReloads();
  const first = queue.request();
  await tick();
  assert.equal(state.started, 1);
  const second = queue.request();
  const third = queue.request();
  assert.equal(second, third, 'the requests made while one waits share it');
  await tick();
  assert.equal(state.started, 1, 'the second waits for the first');
  state.finish[0]!(1);
  assert.equal(await first, 1);
  await tick();
  assert.equal(state.started, 2);
  // Asked once the second began to read the file: it needs a reload of its own.
  const fourth = queue.request();
  assert.notEqual(fourth, second);
  state.finish[1]!(2);
  assert.equal(await second, 2);
  await tick();
  state.finish[2]!(3);
  assert.equal(await fourth, 3);
  assert.equal(state.started, 3);
  assert.equal(state.overlapped, false);
});

test('a reload that failed does not hold up the next', async () => {
  let calls = 0;
  const queue = new ReloadQueue(async () => {
    calls++;
    if (calls === 1) throw new Error('invalid file');
    return calls;
  });
  await assert.rejects(queue.request(), /invalid file/);
  assert.equal(await queue.request(), 2);
});

test('a reload asked for during start-up waits for it, whether start-up succeeds or fails', async () => {
  for (const outcome of ['resolve', 'reject'] as const) {
    const { queue, state } = gatedReloads();
    let end!: () => void;
    const startUp = new Promise<void>((resolve, reject) => (end = outcome === 'resolve' ? resolve : () => reject(new Error('start-up failed'))));
    startUp.catch(() => undefined);
    queue.waitFor(startUp);
    const reload = queue.request();
    await tick();
    assert.equal(state.started, 0, `waits for start-up (${outcome})`);
    end();
    await tick();
    await tick();
    assert.equal(state.started, 1);
    state.finish[0]!(1);
    assert.equal(await reload, 1);
  }
});
