// How a cover moves with its motor's run time. Position and tilt are 0..100
// (100 = open). Running up, the slats turn open first (over tilt_s), then the
// cover rises (over travel_up_s for the whole way); running down, the slats
// close first, then it falls. Both stop at their ends.

export type Direction = 'up' | 'down';

export interface Travel {
  travelUpS: number;
  travelDownS: number;
  /** undefined: no slats to tilt. */
  tiltS?: number;
}

export interface Pose {
  position: number;
  /** 0 when the cover has no tilt. */
  tilt: number;
}

export function moved(travel: Travel, from: Pose, direction: Direction, seconds: number): Pose {
  let left = Math.max(0, seconds);
  let { position, tilt } = from;
  const sign = direction === 'up' ? 1 : -1;
  if (travel.tiltS !== undefined) {
    const tiltRoom = direction === 'up' ? 100 - tilt : tilt;
    const turning = Math.min(left, (tiltRoom / 100) * travel.tiltS);
    tilt = clamp(tilt + (sign * turning * 100) / travel.tiltS);
    left -= turning;
  }
  const fullRun = direction === 'up' ? travel.travelUpS : travel.travelDownS;
  position = clamp(position + (sign * left * 100) / fullRun);
  return { position, tilt };
}

/** Seconds of running to reach `position` (the slats turn first); 0 when already there or running the other way would be needed. */
export function secondsToPosition(travel: Travel, from: Pose, direction: Direction, position: number): number {
  const distance = direction === 'up' ? position - from.position : from.position - position;
  if (distance <= 0) return 0;
  const fullRun = direction === 'up' ? travel.travelUpS : travel.travelDownS;
  return secondsToTurn(travel, from, direction) + (distance / 100) * fullRun;
}

/** Seconds until the slats are fully turned in `direction`. */
export function secondsToTurn(travel: Travel, from: Pose, direction: Direction): number {
  if (travel.tiltS === undefined) return 0;
  return ((direction === 'up' ? 100 - from.tilt : from.tilt) / 100) * travel.tiltS;
}

/** Seconds to the end of travel in `direction`; from an unknown pose, the whole way. */
export function secondsToEnd(travel: Travel, from: Pose | undefined, direction: Direction): number {
  const start = from ?? (direction === 'up' ? { position: 0, tilt: 0 } : { position: 100, tilt: 100 });
  const distance = direction === 'up' ? 100 - start.position : start.position;
  const fullRun = direction === 'up' ? travel.travelUpS : travel.travelDownS;
  return secondsToTurn(travel, start, direction) + (distance / 100) * fullRun;
}

function clamp(value: number): number {
  return Math.min(100, Math.max(0, value));
}
