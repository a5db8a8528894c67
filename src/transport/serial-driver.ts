import type { SerialPort as SerialPortClass } from 'serialport';
import { LinkUnavailable } from './link.js';

// Loads the serialport package, whose native part is a prebuilt addon that
// the bundle finds in prebuilds/<platform>-<arch>/ beside iogate.js. Copying
// iogate.js alone leaves that folder behind; then every RTU bus must stay
// down with one line that says what to copy where, not retry for ever with
// the loader's raw error. A failed load cannot succeed later in the same
// process, so the outcome is kept.

let loading: Promise<typeof SerialPortClass> | undefined;

export function loadSerialDriver(): Promise<typeof SerialPortClass> {
  loading ??= import('serialport').then(
    (module) => module.SerialPort,
    (error: unknown) => {
      throw new LinkUnavailable(serialDriverProblem(error));
    },
  );
  return loading;
}

/** The one line shown when the addon cannot be loaded. */
export function serialDriverProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const platform = `${process.platform}-${process.arch}`;
  // node-gyp-build: "No native build was found for platform=linux arch=arm64 ...\n    loaded from: /opt/x\n"
  const missing = /No native build was found/.exec(message);
  if (missing) {
    const from = /loaded from: (.+)/.exec(message)?.[1]?.trim();
    const target = from ? `${from}/prebuilds/${platform}/` : `prebuilds/${platform}/ beside iogate.js`;
    return `serial driver missing: copy prebuilds/${platform}/ from the build's dist/ to ${target} (RTU buses stay down until iogate is restarted)`;
  }
  const firstLine = message.split('\n')[0];
  return `serial driver for ${platform} cannot be loaded: ${firstLine} (RTU buses stay down until iogate is restarted)`;
}
