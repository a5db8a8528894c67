import type { Duplex } from 'node:stream';
import { MESSAGE, MessageReader, encodeReply } from './protocol.js';

// The server side of the owserver protocol, for simulated 1-Wire buses: it
// answers READ, DIR and DIRALL from a tree of devices and closes the
// connection after the reply, as owserver does for a client that did not ask
// for persistence. Anything else gets an error reply.

export interface OwTree {
  /** Full paths of the entries of a directory (`/28.95DCD5090000.35`), or undefined when there is no such directory. */
  list(path: string): string[] | undefined;
  /** A property's text, or undefined when there is no such property. */
  read(path: string): string | undefined;
}

/** owserver's return value for a path that does not exist. */
const NO_SUCH_PATH = -1;
const NOT_SUPPORTED = -22;

export function serveOwConnection(stream: Duplex, tree: OwTree): void {
  const reader = new MessageReader();
  stream.on('error', () => {
    // The client went away; nothing to clean up.
  });
  // A client that stops sending before a whole request gets the connection closed.
  stream.on('end', () => stream.end());
  let answered = false;
  stream.on('data', (chunk: Buffer) => {
    if (answered) return;
    let messages;
    try {
      messages = reader.push(chunk);
    } catch {
      stream.destroy();
      return;
    }
    const request = messages[0];
    if (!request) return;
    answered = true;
    const path = request.payload.toString('utf8').replace(/\0.*$/s, '') || '/';
    stream.end(answer(request.typeOrRet, path, tree));
  });
}

function answer(type: number, path: string, tree: OwTree): Buffer {
  switch (type) {
    case MESSAGE.READ: {
      const text = tree.read(path);
      if (text === undefined) return encodeReply(NO_SUCH_PATH, Buffer.alloc(0));
      const data = Buffer.from(text, 'utf8');
      return encodeReply(data.length, data);
    }
    case MESSAGE.DIRALL: {
      const entries = tree.list(path);
      if (entries === undefined) return encodeReply(NO_SUCH_PATH, Buffer.alloc(0));
      return encodeReply(0, Buffer.from(`${entries.join(',')}\0`, 'utf8'));
    }
    case MESSAGE.DIR: {
      const entries = tree.list(path);
      if (entries === undefined) return encodeReply(NO_SUCH_PATH, Buffer.alloc(0));
      return Buffer.concat([...entries.map((entry) => encodeReply(0, Buffer.from(`${entry}\0`, 'utf8'))), encodeReply(0, Buffer.alloc(0))]);
    }
    default:
      return encodeReply(NOT_SUPPORTED, Buffer.alloc(0));
  }
}
