import { round } from './bits.js';
import { ValidationError } from '../fields.js';

// PWM timer arithmetic of Unipi boards. Brain boards run a hardware timer off
// 48 MHz (cycle and prescaler registers hold value − 1); extension modules have
// a software PWM with two presets and a custom prescaler.

const CLOCK_HZ = 48_000_000;
const PREFERRED_CYCLES = [50_000, 10_000, 5_000, 1_000];

export function hardwareFrequency(cycleReg: number, prescaleReg: number): number {
  return CLOCK_HZ / ((cycleReg + 1) * (prescaleReg + 1));
}

/** Timer settings for `hz`, preferring a long cycle for fine duty steps. */
export function hardwareTimer(hz: number): { cycle: number; prescale: number } {
  const divider = CLOCK_HZ / hz;
  for (const cycle of PREFERRED_CYCLES) {
    if (Math.trunc(divider) % cycle === 0 && divider / cycle < 65535) {
      return checked(cycle, Math.round(divider / cycle), hz);
    }
  }
  const side = Math.round(Math.sqrt(divider));
  return checked(side, side, hz);
}

function checked(cycle: number, prescale: number, hz: number): { cycle: number; prescale: number } {
  if (cycle < 1 || cycle > 65536 || prescale < 1 || prescale > 65536) {
    throw new ValidationError(`pwm_freq: ${hz} Hz cannot be produced by the PWM timer`);
  }
  return { cycle, prescale };
}

export function hardwareDuty(dutyReg: number, cycle: number): number {
  return round((dutyReg / cycle) * 100, 1);
}

const SOFT_PRESETS: Record<number, number> = { 0: 1000, 1: 100 };

export function softwareFrequency(preset: number, prescaler: number): number {
  return SOFT_PRESETS[preset] ?? round(1000 / (1 + prescaler), 1);
}

/** Preset register value, and the custom prescaler when preset 2 is needed. */
export function softwareTimer(hz: number): { preset: number; prescaler?: number } {
  if (hz === 1000) return { preset: 0 };
  if (hz === 100) return { preset: 1 };
  const prescaler = Math.round(1000 / hz - 1);
  if (prescaler < 0 || prescaler > 65535) throw new ValidationError(`pwm_freq: ${hz} Hz is out of range (0.016..2000)`);
  return { preset: 2, prescaler };
}
