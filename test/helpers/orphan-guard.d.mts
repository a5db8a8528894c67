import type { ChildProcess } from 'node:child_process';

/** Ties `child` to this process: it is killed when this process ends, however it ends. Returns `child`. */
export function endWithThisProcess<T extends ChildProcess>(child: T): T;
