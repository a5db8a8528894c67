// Reads `interlocks:` and `covers:`: the control layer on the write path
// (src/control/). Outputs are named as `type/circuit` or by alias; they are
// resolved against the devices at start-up, when the aliases are known.
import type { ConfigSection } from './section.js';
import type { CoverConfig, InterlockConfig } from './types.js';

/** Longest dwell a group may ask for: a write waits it out, so it must stay short. */
export const MAX_DWELL_MS = 60_000;
/** Longest travel time of a cover (a slow gate). */
const MAX_TRAVEL_S = 600;
/** Dwell between stopping a cover and reversing it, unless configured. */
const DEFAULT_COVER_DWELL_MS = 500;

export function readInterlocks(root: ConfigSection): InterlockConfig[] {
  return root.sectionList('interlocks').map((group) => {
    const outputs = group.stringList('outputs', []);
    if (outputs.length < 2) group.error(group.at, 'outputs', 'an interlock needs at least two outputs');
    const config: InterlockConfig = {
      outputs,
      dwellMs: group.integer('dwell_ms', 0, 0, MAX_DWELL_MS),
      switchOver: group.boolean('switch_over', false),
      where: group.path,
    };
    group.warnUnknownKeys();
    return config;
  });
}

export function readCovers(root: ConfigSection): CoverConfig[] {
  const covers: CoverConfig[] = [];
  for (const { name, section } of root.section('covers').children()) {
    const up = section.requiredString('up', 'the output that moves the cover up, e.g. ro/1_01');
    const down = section.requiredString('down', 'the output that moves the cover down, e.g. ro/1_02');
    if (up !== '' && up === down) section.error(section.at, 'down', 'must be another output than up');
    const travelUpS = travel(section, 'travel_up_s');
    const travelDownS = travel(section, 'travel_down_s');
    const tilt = section.has('tilt_s') ? section.number('tilt_s', 1, 0.1) : undefined;
    const cover: CoverConfig = {
      name,
      up,
      down,
      travelUpS,
      travelDownS,
      // A tenth of the longer travel: enough to reach the end stop from a drifted estimate.
      overrunS: section.number('overrun_s', Math.max(travelUpS, travelDownS) / 10, 0),
      dwellMs: section.integer('dwell_ms', DEFAULT_COVER_DWELL_MS, 0, MAX_DWELL_MS),
      ...(tilt === undefined ? {} : { tiltS: tilt }),
    };
    if (!/^[A-Za-z0-9_-]+$/.test(name)) section.error(section.at, undefined, 'a cover name may hold only letters, digits, _ and -');
    section.warnUnknownKeys();
    covers.push(cover);
  }
  return covers;
}

function travel(section: ConfigSection, key: string): number {
  if (!section.has(key)) {
    section.markKnown(key);
    section.missing(key, 'seconds for a full run');
    return 1;
  }
  const seconds = section.number(key, 1, 0.1);
  if (seconds > MAX_TRAVEL_S) section.error(section.at, key, `at most ${MAX_TRAVEL_S} s`);
  return seconds;
}
