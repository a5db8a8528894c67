import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectFailureReason } from '../../../src/api/mqtt/connect-failure.js';

// The causes a broker connection fails for, as the labels of
// iogate_mqtt_connect_failures_total and iogate_sparkplug_connect_failures_total.

const failure = (code: unknown, message = 'x'): Error & { code?: unknown } => Object.assign(new Error(message), { code });

test('our side of TLS: an untrusted, expired or misnamed broker certificate', () => {
  assert.equal(connectFailureReason(failure('SELF_SIGNED_CERT_IN_CHAIN')), 'server_untrusted');
  assert.equal(connectFailureReason(failure('UNABLE_TO_VERIFY_LEAF_SIGNATURE')), 'server_untrusted');
  assert.equal(connectFailureReason(failure('CERT_HAS_EXPIRED')), 'server_expired');
  assert.equal(connectFailureReason(failure('ERR_TLS_CERT_ALTNAME_INVALID')), 'hostname_mismatch');
});

test("the broker's side: TLS alerts about our client certificate", () => {
  assert.equal(connectFailureReason(failure('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA')), 'client_cert_unknown_ca');
  assert.equal(connectFailureReason(failure('ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED')), 'client_cert_expired');
  assert.equal(connectFailureReason(failure('ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED')), 'client_cert_revoked');
  assert.equal(connectFailureReason(failure('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED')), 'client_cert_rejected');
  assert.equal(connectFailureReason(failure('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE')), 'client_cert_rejected');
});

test('CONNACK refusals and the network', () => {
  assert.equal(connectFailureReason(failure(5)), 'not_authorized');
  assert.equal(connectFailureReason(failure(135)), 'not_authorized');
  assert.equal(connectFailureReason(failure(3)), 'refused');
  assert.equal(connectFailureReason(failure('ECONNREFUSED')), 'unreachable');
  assert.equal(connectFailureReason(failure('EWHATEVER')), 'other');
  assert.equal(connectFailureReason(failure(undefined)), 'other');
});
