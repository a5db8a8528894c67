// The yardstick: the plainest node:http server that answers a GET with fixed
// bytes. It serves, per path, exactly the status line, headers and body iogate
// answered with (captured by run.mjs), so the two differ only in the work done
// between parsing a request and writing the reply.
//
// Usage: node bench/bare-server.mjs <port> <replies.json>
// replies.json: { "<path>": { "headers": { name: value }, "body": "<base64>" } }
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';

const [port, repliesFile] = process.argv.slice(2);
const replies = new Map(
  Object.entries(JSON.parse(readFileSync(repliesFile, 'utf8'))).map(([path, reply]) => [
    path,
    { headers: reply.headers, body: Buffer.from(reply.body, 'base64') },
  ]),
);

const server = createServer((req, res) => {
  const reply = replies.get(req.url);
  if (!reply) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, reply.headers);
  res.end(reply.body);
});
server.listen(Number(port), '127.0.0.1', () => process.stdout.write(`listening on ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
