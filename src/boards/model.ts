// A board model is the register map of one Modbus slave, held as plain data.
// The same object drives the daemon (what to poll, how to decode) and the
// simulator (what registers exist, what a coil write changes), so the two can
// never disagree. Feature keys keep EVOK's hw-definition spelling so that user
// YAML files map onto these types one to one.

export type RegisterSpace = 'holding' | 'input';

export interface RegisterBlock {
  start_reg: number;
  count: number;
  /** Read on every N-th scan of the slave (1 = every scan). */
  frequency: number;
  type: RegisterSpace;
}

/** One analog mode as EVOK's v3 files describe it (`modes: {Name: {...}}`). */
export interface AnalogMode {
  /** Value of the mode register that selects this mode; absent = not selectable. */
  value?: number;
  unit?: string;
  range?: [number, number];
  transformation?: {
    datatype?: 'float32' | 'int32' | 'uint32';
    byteorder?: 'big' | 'little';
    wordorder?: 'big' | 'little';
    decimals?: number;
    ratio?: number;
  };
}

export interface DiFeature {
  type: 'DI';
  count: number;
  val_reg: number;
  counter_reg: number;
  deboun_reg: number;
  modes: string[];
  start_index?: number;
  ds_modes?: string[];
  direct_reg?: number;
  polar_reg?: number;
  toggle_reg?: number;
}

export interface RoFeature {
  type: 'RO';
  count: number;
  val_reg: number;
  val_coil: number;
  /** Offset added to the circuit number; EVOK ignores it for RO (EVOK#195), we do not. */
  start_index?: number;
}

export interface DoFeature {
  type: 'DO';
  count: number;
  val_reg: number;
  val_coil: number;
  pwm_reg: number;
  modes: string[];
  /** Hardware PWM timer (Brain board). */
  pwm_ps_reg?: number;
  pwm_c_reg?: number;
  /** Software PWM timer (extensions). */
  pwm_preset_reg?: number;
  pwm_cpres_reg?: number;
  start_index?: number;
}

export interface LedFeature {
  type: 'LED';
  count: number;
  val_reg: number;
  val_coil: number;
  start_index?: number;
}

export interface WdFeature {
  type: 'WD';
  count: number;
  val_reg: number;
  timeout_reg: number;
  nv_sav_coil: number;
  reset_coil: number;
  start_index?: number;
}

export interface AoFeature {
  type: 'AO';
  count: number;
  val_reg: number;
  modes: Record<string, AnalogMode>;
  mode_reg?: number;
  start_index?: number;
}

/** Brain-board analog output: float32 value, float32 resistance, one mode register. */
export interface BaoFeature {
  type: 'BAO';
  count: number;
  val_reg: number;
  res_val_reg: number;
  mode_reg?: number;
  start_index?: number;
}

export interface AiFeature {
  type: 'AI';
  count: number;
  val_reg: number;
  modes: Record<string, AnalogMode>;
  mode_reg?: number;
  start_index?: number;
}

export interface RegisterFeature {
  type: 'REGISTER';
  count: number;
  start_reg: number;
  reg_type?: RegisterSpace;
}

export interface DataPointFeature {
  type: 'DATA_POINT';
  count: number;
  value_reg: number;
  name?: string;
  unit?: string;
  datatype?: 'signed16' | 'unsigned16' | 'float32';
  factor?: number;
  offset?: number;
  valid_mask_reg?: number;
  reg_type?: RegisterSpace;
}

export interface CoilActionFeature {
  type: 'OWPOWER' | 'NV_SAVE';
  val_coil: number;
}

export type Feature =
  | DiFeature
  | RoFeature
  | DoFeature
  | LedFeature
  | WdFeature
  | AoFeature
  | BaoFeature
  | AiFeature
  | RegisterFeature
  | DataPointFeature
  | CoilActionFeature;

export type FeatureType = Feature['type'];

export interface BoardModel {
  /** The name `model:` in config.yaml refers to, e.g. `00`, `xS11`. */
  name: string;
  /** Human description (product names), shown in the start-up summary. */
  description?: string;
  blocks: RegisterBlock[];
  features: Feature[];
}
