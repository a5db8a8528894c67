// The automations of `automations:` in config.yaml, as read and checked by
// read-config.ts: one trigger, optional conditions, one or more actions.
// Inputs and outputs are named as in interlocks and covers: `type/circuit`
// or an alias, resolved against the devices when the engine binds them.

export type Edge = 'rising' | 'falling' | 'any';
export type Press = 'short' | 'long' | 'double';
/** What a quality trigger waits for; `bad` is any quality but good. */
export type QualityWanted = 'good' | 'stale' | 'offline' | 'bad';

export type Trigger =
  /** A change of a binary value; `level` is a follow rule's trigger (no edge named). */
  | { kind: 'edge'; input: string; field: string; edge: Edge | 'level' }
  | { kind: 'press'; input: string; press: Press; longS: number; doubleS: number }
  | { kind: 'threshold'; input: string; field: string; above?: number; below?: number; hysteresis: number; forS: number }
  | { kind: 'counter'; input: string; field: string; risesBy: number; withinS: number }
  | { kind: 'time'; at: TimeOfDay | 'sunrise' | 'sunset'; offsetMin: number; weekdays: readonly number[] }
  | { kind: 'quality'; input: string; quality: QualityWanted };

/** Local wall-clock time in the controller's zone. */
export interface TimeOfDay {
  hour: number;
  minute: number;
}

export type Condition =
  | { kind: 'state'; input: string; field: string; is?: number; above?: number; below?: number }
  | { kind: 'quality'; input: string; quality: QualityWanted }
  | { kind: 'time'; after: TimeOfDay; before: TimeOfDay; weekdays: readonly number[] };

export type Action =
  /** `value` 1 is on, 0 off, any other number an analogue value; several outputs make a scene. */
  | { kind: 'set'; outputs: readonly string[]; value: number }
  | { kind: 'toggle'; outputs: readonly string[] }
  | { kind: 'pulse'; outputs: readonly string[]; ms: number }
  /** On for `seconds`; a new trigger restarts the time (a pulse on the one write path). */
  | { kind: 'staircase'; outputs: readonly string[]; seconds: number }
  | { kind: 'follow'; outputs: readonly string[]; inverted: boolean }
  | { kind: 'cover'; cover: string; command?: 'open' | 'close' | 'stop'; position?: number }
  | { kind: 'delay'; seconds: number }
  | { kind: 'enable'; automation: string; enabled: boolean };

export interface AutomationConfig {
  id: string;
  trigger: Trigger;
  conditions: readonly Condition[];
  actions: readonly Action[];
  /** As configured; POST enabled=0|1 and other automations change it until a restart or a reload of this one. */
  enabled: boolean;
  /** `offload: firmware`: the board's DirectSwitch does it, when the firmware can. */
  offload: 'firmware' | undefined;
  /** Where it was written, `file:line`, for messages. */
  where: string;
}

/** `location:`: where the controller is (sunrise, sunset) and its time zone. */
export interface LocationConfig {
  latitude: number | undefined;
  longitude: number | undefined;
  /** IANA zone (Europe/Prague); undefined = the system's zone. */
  timeZone: string | undefined;
}
