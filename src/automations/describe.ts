import type { Action, AutomationConfig, Condition, TimeOfDay, Trigger } from './types.js';

// Each automation as one plain sentence (`--check-config`, the device's
// `description`, the panel), so a reader can check what a rule does without
// reading YAML: `stair_light: when di/1_01 rises, do/1_01 on for 180 s (a new rise restarts it)`.

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

export function describeAutomation(automation: AutomationConfig): string {
  const { id, trigger, conditions, actions, enabled, offload } = automation;
  const when = describeTrigger(trigger);
  const only = conditions.length > 0 ? ` if ${conditions.map(describeCondition).join(' and ')},` : '';
  const steps = actions.map((action) => describeAction(action, trigger)).join(', then ');
  const notes = [offload === 'firmware' ? 'offload: firmware' : '', enabled ? '' : 'disabled at start'].filter(Boolean);
  return `${id}: when ${when},${only} ${steps}${notes.length > 0 ? ` [${notes.join('; ')}]` : ''}`;
}

function time({ hour, minute }: TimeOfDay): string {
  return `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
}

function days(weekdays: readonly number[]): string {
  if (weekdays.length === 7) return '';
  if (weekdays.join() === '1,2,3,4,5') return ' on weekdays';
  if (weekdays.join() === '0,6') return ' at weekends';
  return ` on ${weekdays.map((day) => DAYS[day]).join(', ')}`;
}

function field(name: string): string {
  return name === 'value' ? '' : `'s ${name}`;
}

export function describeTrigger(trigger: Trigger): string {
  switch (trigger.kind) {
    case 'edge':
      if (trigger.edge === 'level') return `${trigger.input}${field(trigger.field)} changes (and at its first good reading)`;
      return `${trigger.input}${field(trigger.field)} ${trigger.edge === 'rising' ? 'rises' : trigger.edge === 'falling' ? 'falls' : 'changes'}`;
    case 'press':
      return trigger.press === 'long' ? `${trigger.input} is held for ${trigger.longS} s` : trigger.press === 'double' ? `${trigger.input} is pressed twice within ${trigger.doubleS} s` : `${trigger.input} is pressed briefly (under ${trigger.longS} s)`;
    case 'threshold': {
      const limit = trigger.above !== undefined ? `rises above ${trigger.above}` : `falls below ${trigger.below}`;
      const again = trigger.hysteresis > 0 ? `, again only after passing back by ${trigger.hysteresis}` : '';
      return `${trigger.input}${field(trigger.field)} ${limit}${trigger.forS > 0 ? ` for ${trigger.forS} s` : ''}${again}`;
    }
    case 'counter':
      return `${trigger.input}${field(trigger.field)} rises by ${trigger.risesBy} within ${trigger.withinS} s`;
    case 'time': {
      const at = typeof trigger.at === 'string'
        ? `${trigger.offsetMin === 0 ? '' : `${Math.abs(trigger.offsetMin)} min ${trigger.offsetMin < 0 ? 'before' : 'after'} `}${trigger.at}`
        : time(trigger.at);
      return `it is ${at}${days(trigger.weekdays)}`;
    }
    case 'quality':
      return trigger.quality === 'bad' ? `${trigger.input} stops reading good` : `${trigger.input} becomes ${trigger.quality}`;
  }
}

function describeCondition(condition: Condition): string {
  switch (condition.kind) {
    case 'time':
      return condition.after.hour === condition.before.hour && condition.after.minute === condition.before.minute
        ? `it is${days(condition.weekdays) || ' any day'}`
        : `the time is ${time(condition.after)}–${time(condition.before)}${days(condition.weekdays)}`;
    case 'quality':
      return `${condition.input} reads ${condition.quality}`;
    case 'state': {
      const parts: string[] = [];
      if (condition.is !== undefined) parts.push(`is ${condition.is === 1 ? 'on' : condition.is === 0 ? 'off' : condition.is}`);
      if (condition.above !== undefined) parts.push(`is above ${condition.above}`);
      if (condition.below !== undefined) parts.push(`is below ${condition.below}`);
      return `${condition.input}${field(condition.field)} ${parts.join(' and ')}`;
    }
  }
}

function describeAction(action: Action, trigger: Trigger): string {
  const outputs = 'outputs' in action ? action.outputs.join(' and ') : '';
  switch (action.kind) {
    case 'set':
      return `${outputs} ${action.value === 1 ? 'on' : action.value === 0 ? 'off' : `to ${action.value}`}`;
    case 'toggle':
      return `toggle ${outputs}`;
    case 'pulse':
      return `pulse ${outputs} for ${action.ms} ms`;
    case 'staircase': {
      const again = trigger.kind === 'edge' ? (trigger.edge === 'falling' ? 'fall' : 'rise') : 'trigger';
      return `${outputs} on for ${action.seconds} s (a new ${again} restarts it)`;
    }
    case 'follow':
      return `${outputs} ${action.inverted ? 'the opposite of' : 'follows'} ${'input' in trigger ? trigger.input : 'the input'}`;
    case 'cover':
      return action.command !== undefined ? `${action.command} cover ${action.cover}` : `cover ${action.cover} to ${action.position} %`;
    case 'delay':
      return `wait ${action.seconds} s`;
    case 'enable':
      return `${action.enabled ? 'enable' : 'disable'} automation ${action.automation}`;
  }
}
