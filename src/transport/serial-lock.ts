import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';

// serialport reports a line another program holds as "Error Resource
// temporarily unavailable Cannot lock port". Said plainly, with the program
// that holds it when /proc shows it (EVOK, a second iogate, a terminal
// program), else the command that finds it.

export function lockedPortError(path: string, error: Error): Error {
  if (!/Cannot lock port/i.test(error.message)) return error;
  const holders = holdersOf(path);
  const who = holders.length > 0 ? `, held by ${holders.join(', ')}` : ` (find the program with: fuser -v ${path})`;
  return new Error(`serial port ${path} is in use by another program${who}; two masters on one line corrupt each other's frames, so it is left alone until that program lets go`);
}

/** "evok (pid 812)" for each process with the device open that this user may see. */
export function holdersOf(path: string, proc = '/proc'): string[] {
  let device: string;
  try {
    device = realpathSync(path);
  } catch {
    return [];
  }
  const holders: string[] = [];
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid);
  } catch {
    return [];
  }
  for (const pid of pids) {
    try {
      const fds = readdirSync(`${proc}/${pid}/fd`);
      if (!fds.some((fd) => safeReadlink(`${proc}/${pid}/fd/${fd}`) === device)) continue;
      const name = readFileSync(`${proc}/${pid}/comm`, 'utf8').trim();
      holders.push(`${name} (pid ${pid})`);
    } catch {
      // Another user's process, or gone meanwhile.
    }
  }
  return holders;
}

function safeReadlink(link: string): string | undefined {
  try {
    return readlinkSync(link);
  } catch {
    return undefined;
  }
}
