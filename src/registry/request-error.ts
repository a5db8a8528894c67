// An error a client caused or must be told about, carried up to whichever API
// answers it. `kind` is the key of EVOK's error envelope
// (`{"success": false, "errors": {kind: message}}`); EVOK's own kinds
// (KeyError, Exception, ValidationError …) are kept where clients may test them.

export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}
