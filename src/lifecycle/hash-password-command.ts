import { hashPassword } from '../api/access/password-hash.js';

// `iogate --hash-password`: reads one password on standard input and prints
// the hash to paste into apis.auth.users. On a terminal the typing is not
// echoed; piped input (`echo secret | iogate --hash-password`) works too.

const MAX_PASSWORD_BYTES = 1024;

/** Resolves with the exit status. */
export async function hashPasswordCommand(stdin: NodeJS.ReadStream = process.stdin, out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const password = stdin.isTTY ? await readHidden(stdin, err) : await readPiped(stdin);
  if (password === undefined || password === '') {
    err.write('iogate --hash-password: no password given on standard input\n');
    return 2;
  }
  if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) {
    err.write(`iogate --hash-password: the password is longer than ${MAX_PASSWORD_BYTES} bytes\n`);
    return 2;
  }
  out.write(`${hashPassword(password)}\n`);
  return 0;
}

/** The first line of piped input, without its line end. */
function readPiped(stdin: NodeJS.ReadStream): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let text = '';
    stdin.setEncoding('utf8');
    stdin.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > MAX_PASSWORD_BYTES * 4) stdin.destroy();
    });
    stdin.on('end', () => resolvePromise(text.split(/\r?\n/)[0]!));
    stdin.on('close', () => resolvePromise(text.split(/\r?\n/)[0]!));
    stdin.on('error', reject);
  });
}

/** Raw mode: each key arrives as typed and nothing is echoed; Enter ends, Ctrl-C or Ctrl-D gives up. */
function readHidden(stdin: NodeJS.ReadStream, err: NodeJS.WritableStream): Promise<string | undefined> {
  err.write('Password (not shown): ');
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolvePromise) => {
    let text = '';
    const done = (value: string | undefined): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.removeListener('data', onData);
      err.write('\n');
      resolvePromise(value);
    };
    const onData = (chunk: string): void => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') return done(text);
        if (char === '\u0003' || char === '\u0004') return done(undefined);
        if (char === '\u007f' || char === '\b') text = text.slice(0, -1);
        else text += char;
      }
    };
    stdin.on('data', onData);
  });
}
