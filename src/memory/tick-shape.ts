import { createHook } from 'node:async_hooks';

// Keeps one of Node's process.nextTick queue entries alive for the life of the
// process, so that V8 never forgets their shape.
//
// nextTick builds each entry as an object literal whose first two keys are
// computed (two symbols). V8 records, for such a key, the object's map (its
// hidden class) before the key is added, and holds that map weakly. When a
// full collection runs while no entry is alive (a quiet moment: after a burst
// of requests, or an idle daemon whose memory reducer or quiet collections
// run), the intermediate map dies and V8's record no longer matches. V8 then
// marks the site "megamorphic" for good (runtime
// DefineKeyedOwnPropertyInLiteral: a monomorphic record that differs from
// the map seen becomes megamorphic; a cleared one differs), and from then on
// every nextTick adds those two keys through the runtime. Measured: ~70 ns a
// nextTick before, ~300 ns after, for the rest of the process; in the daemon
// nextTick's own time went from 0.1 to 2.0 s over 15 s of GET load, about
// 4 µs of a request's 25 (docs/performance.md, "GET hot path"). It struck
// any daemon that had been idle a few seconds before its first clients, with
// or without node options. A live entry keeps the map chain alive, and the
// record with it.

let kept: object | undefined;

/** Keeps one nextTick entry for the life of the process. Returns it, or undefined if this Node makes its entries otherwise. */
export function keepTickObjectShape(): object | undefined {
  kept ??= catchTickObject();
  return kept;
}

/** The entry of one nextTick call, caught by an async hook that is on for that synchronous call only. */
export function catchTickObject(): object | undefined {
  let caught: object | undefined;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject' && caught === undefined) caught = resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(() => {});
  } finally {
    hook.disable();
  }
  return caught;
}
