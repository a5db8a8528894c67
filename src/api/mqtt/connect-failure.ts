// Why a broker connection failed, as a short fixed label for the metrics and
// a phrase for the log. Shared by the MQTT mirror and the Sparkplug edge node.
//
// A TLS failure is either ours (we do not trust the broker's certificate, or
// it names another host) or the broker's (it refused our client certificate
// and said why in a TLS alert). The labels keep the two apart, because the fix
// is on a different machine. The set is fixed, so the metric's label values
// stay bounded whatever a broker sends.

export type ConnectFailureReason =
  | 'server_untrusted'
  | 'server_expired'
  | 'hostname_mismatch'
  | 'client_cert_unknown_ca'
  | 'client_cert_expired'
  | 'client_cert_revoked'
  | 'client_cert_rejected'
  | 'not_authorized'
  | 'subscribe_denied'
  | 'publish_denied'
  | 'dropped_after_birth'
  | 'refused'
  | 'unreachable'
  | 'other';

/** Counts per reason, for /metrics. */
export type ConnectFailureCounts = Partial<Record<ConnectFailureReason, number>>;

const PHRASES: Record<ConnectFailureReason, string> = {
  server_untrusted: "the broker's certificate is not signed by a trusted CA (check tls.ca)",
  server_expired: "the broker's certificate has expired or is not valid yet",
  hostname_mismatch: "the broker's certificate is for another name than the address configured",
  client_cert_unknown_ca: 'the broker does not know the CA of our client certificate (unknown CA)',
  client_cert_expired: 'the broker refused our client certificate: expired',
  client_cert_revoked: 'the broker refused our client certificate: revoked',
  client_cert_rejected: 'the broker refused our client certificate (or needs one)',
  not_authorized: 'the broker refused the login: not authorized',
  subscribe_denied: 'the broker denied the subscription: not authorized (ACL)',
  publish_denied: 'the broker refused a publish: not authorized (ACL)',
  dropped_after_birth: 'the broker closed the session right after the birth (an ACL that denies our topics, on a broker that disconnects for it?)',
  refused: 'the broker refused the connection',
  unreachable: 'the broker cannot be reached',
  other: 'the connection failed',
};

const SERVER_UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
]);
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EPIPE']);

/** The reason of a failed connection, from the error mqtt.js reported. */
export function connectFailureReason(error: Error & { code?: unknown }): ConnectFailureReason {
  const { code } = error;
  if (typeof code === 'number') {
    // CONNACK return codes: 3.1.1's 4/5 and MQTT 5's 134/135 are a refused login.
    if (code === 4 || code === 5 || code === 134 || code === 135) return 'not_authorized';
    return 'refused';
  }
  if (typeof code !== 'string') return /not authorized/i.test(error.message) ? 'not_authorized' : 'other';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'hostname_mismatch';
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return 'server_expired';
  if (SERVER_UNTRUSTED.has(code)) return 'server_untrusted';
  // TLS alerts the broker sent about our certificate (OpenSSL's names for alerts 48, 45, 44, 42, 46, 116).
  if (code.endsWith('ALERT_UNKNOWN_CA')) return 'client_cert_unknown_ca';
  if (code.endsWith('ALERT_CERTIFICATE_EXPIRED')) return 'client_cert_expired';
  if (code.endsWith('ALERT_CERTIFICATE_REVOKED')) return 'client_cert_revoked';
  if (code.startsWith('ERR_SSL_') && /ALERT_(BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|UNSUPPORTED_CERTIFICATE)$/.test(code)) return 'client_cert_rejected';
  if (UNREACHABLE.has(code)) return 'unreachable';
  return 'other';
}

/** The log phrase for a reason, followed by the error's own text. */
export function describeConnectFailure(reason: ConnectFailureReason, error: Error): string {
  // OpenSSL's messages end in a newline: one log line each.
  return `${PHRASES[reason]} [${reason}]: ${error.message.replace(/\s+/g, ' ').trim()}`;
}

export function countFailure(counts: ConnectFailureCounts, reason: ConnectFailureReason): void {
  counts[reason] = (counts[reason] ?? 0) + 1;
}

/**
 * Whether a failed subscription is the broker's refusal in its SUBACK (0x80,
 * 0x87 …): mqtt.js reports it as "Subscribe error: …", with the code not
 * always attached. Anything else (the connection closed meanwhile) is not.
 */
export function isSubscribeRefusal(error: Error & { code?: unknown }): boolean {
  return typeof error.code === 'number' || error.message.startsWith('Subscribe error');
}
