import { setV8FlagsLate } from './copy-and-run.js';

// Imported first by main.ts, so that it runs before any other module of the
// bundle and before the start-up's allocations, which are what grow V8's young
// generation when node was started without the unit's options
// (src/memory/copy-and-run.ts). A module of its own because only the
// daemon's entry may set V8 flags: the tests import copy-and-run.ts.
setV8FlagsLate();
