import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { createAuthorizer } from '../../../src/api/access/auth.js';
import type { AuthConfig } from '../../../src/config/types.js';

// A token sent in plain HTTP from another machine is refused (403, saying
// why) unless the connection is TLS, the client is on this machine, or
// allow_insecure_tokens accepts the risk. The daemon-level view over a real
// socket is in https.test.ts's neighbours; this pins the rule itself.

const TOKEN = 'a-long-enough-secret-token-value';

function authorizer(allowInsecureTokens: boolean) {
  const config: AuthConfig = { tokens: [{ name: 'scada', token: TOKEN, scope: 'write' }], allowAnonymous: false, loopbackAnonymous: true, allowInsecureTokens, corsOrigins: [], users: [], sessionIdleMs: 1_800_000, sessionMaxMs: 43_200_000 };
  return createAuthorizer(config, () => false);
}

function request(remoteAddress: string, encrypted: boolean): IncomingMessage {
  return { url: '/rest/do/1_01', headers: { authorization: `Bearer ${TOKEN}` }, socket: { remoteAddress, ...(encrypted ? { encrypted: true } : {}) } } as unknown as IncomingMessage;
}

describe('tokens in the clear', () => {
  test('from another machine over plain HTTP: refused with 403 and a clear reason', () => {
    const error = authorizer(false).authorize(request('192.168.1.20', false), 'write');
    assert.equal(error?.status, 403);
    assert.match(error?.message ?? '', /plain HTTP from another machine.*use HTTPS \(apis\.tls\).*allow_insecure_tokens/);
  });

  test('over TLS, from loopback (a local proxy), or with allow_insecure_tokens: accepted', () => {
    assert.equal(authorizer(false).authorize(request('192.168.1.20', true), 'write'), undefined);
    assert.equal(authorizer(false).authorize(request('127.0.0.1', false), 'write'), undefined);
    assert.equal(authorizer(false).authorize(request('::ffff:127.0.0.1', false), 'write'), undefined);
    assert.equal(authorizer(true).authorize(request('192.168.1.20', false), 'write'), undefined);
  });
});
