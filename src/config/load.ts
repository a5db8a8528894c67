// Builds the daemon's Config from an EVOK config.yaml (plus autogen.yaml when
// it asks for it) or, without a file, from the built-in simulator setup.
// Problems are collected and thrown together as one ConfigError.
import { existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { AuditConfig, Config, QualityConfig } from './types.js';
import { ConfigError } from './errors.js';
import { selfSignedFiles } from '../tls/self-signed-store.js';
import { ConfigSection } from './section.js';
import { Findings } from './findings.js';
import { formatOrigin, readYamlFile, readYamlText, type MapNode, type Origin, type TreeNode } from './yaml-tree.js';
import { mergeOver } from './merge.js';
import { readApis } from './read-apis.js';
import { readBuses } from './read-buses.js';
import { readCovers, readInterlocks } from './read-outputs.js';
import { readAutomations, readLocation } from '../automations/read-config.js';
import {
  BUILT_IN_ALIAS_FILE,
  BUILT_IN_CONFIG_YAML,
  DEFAULT_AUDIT_MAX_MB,
  DEFAULT_AUTOGEN_FILE,
  DEFAULT_COUNTER_SAVE_S,
  DEFAULT_STALE_MIN_MS,
  DEFAULT_STALE_PERIODS,
  EVOK_ALIAS_FILE,
} from './defaults.js';

export interface LoadOptions {
  /** EVOK config.yaml; absent = built-in simulator configuration. */
  file?: string;
  /** Overrides both `autogen_file:` and EVOK's fixed /etc/evok/autogen.yaml. */
  autogenFile?: string;
  /** Command-line values that win over the file. */
  overrides?: { port?: number; address?: string; hwDir?: string };
  /**
   * Checks that need more than the file (board models against the hw
   * definitions): their problems are reported with the file's own, in one pass.
   */
  check?: (config: Config) => { problems: CheckProblem[]; warnings: string[] };
}

export interface CheckProblem {
  /** Where in the file, to order it; the text names it already. */
  at: Origin | undefined;
  text: string;
}

export function loadConfig(opts: LoadOptions): { config: Config; warnings: string[] } {
  const findings = new Findings();
  const config = opts.file === undefined ? builtInConfig(findings) : fileConfig(resolve(opts.file), opts.autogenFile, findings);
  const overrides = opts.overrides ?? {};
  if (overrides.port !== undefined) config.apis.port = overrides.port;
  if (overrides.address !== undefined) config.apis.address = overrides.address;
  if (overrides.hwDir !== undefined) addHwDir(config.hwDefinitionDirs, resolve(overrides.hwDir), undefined, findings);
  const checked = opts.check?.(config);
  for (const { at, text } of checked?.problems ?? []) findings.errorText(at, text);
  if (findings.hasErrors) throw new ConfigError(findings.errorTexts());
  return { config, warnings: [...findings.warningTexts(), ...(checked?.warnings ?? [])] };
}

function builtInConfig(findings: Findings): Config {
  const { tree } = readYamlText(BUILT_IN_CONFIG_YAML, '<built-in configuration>');
  const root = rootSection(tree, findings);
  return {
    ...readSections(root, process.cwd(), findings),
    hwDefinitionDirs: [],
    aliasFile: resolve(BUILT_IN_ALIAS_FILE),
    stateDir: demoStateDir(),
    quality: readQuality(root.section('quality')),
    audit: readAudit(root.section('audit')),
  };
}

/**
 * Where the demo without a configuration file keeps its state (counter
 * totals, covers' positions …): $XDG_STATE_HOME/iogate, else a folder of
 * this user's in the OS temp dir; never the current folder (a checkout) nor
 * /var/lib, which belong to an installed daemon.
 */
export function demoStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_STATE_HOME'];
  if (xdg !== undefined && xdg.startsWith('/')) return join(xdg, 'iogate');
  const user = typeof process.getuid === 'function' ? String(process.getuid()) : 'user';
  return join(tmpdir(), `iogate-demo-state-${user}`);
}

function fileConfig(file: string, autogenOption: string | undefined, findings: Findings): Config {
  const configDir = dirname(file);
  const own = readYamlFile(file);
  for (const { at, message } of own.warnings) findings.warn(at, message);
  let tree = own.tree;

  // `autogen` is decided by config.yaml alone, as in EVOK.
  const ownRoot = rootSection(own.tree, findings);
  if (ownRoot.boolean('autogen', false)) {
    const setting = ownRoot.optionalString('autogen_file');
    const autogenFile = autogenOption !== undefined ? resolve(autogenOption)
      : setting !== undefined ? resolve(configDir, setting)
      : DEFAULT_AUTOGEN_FILE;
    if (existsSync(autogenFile)) {
      const autogen = readYamlFile(autogenFile);
      for (const { at, message } of autogen.warnings) findings.warn(at, message);
      requireMapping(autogen.tree);
      tree = mergeOver(autogen.tree, own.tree);
    } else {
      findings.warn(ownRoot.at, `autogen is enabled but ${autogenFile} does not exist; using ${file} alone`);
    }
  }

  const root = rootSection(tree, findings);
  root.markKnown('autogen', 'autogen_file');
  const aliasFile = resolve(configDir, root.string('alias_file', EVOK_ALIAS_FILE));
  const config: Config = {
    file,
    ...readSections(root, configDir, findings),
    hwDefinitionDirs: readHwDirs(root, configDir, findings),
    aliasFile,
    // Beside the alias file unless said otherwise: one folder holds all that
    // must survive a restart, and a config that moves its aliases (as every
    // test does) moves the rest with them.
    stateDir: resolve(configDir, root.string('state_dir', dirname(aliasFile))),
    quality: readQuality(root.section('quality')),
    audit: readAudit(root.section('audit')),
  };
  root.warnUnknownKeys();
  if (config.apis.tls?.selfSigned) config.apis.tls = { ...selfSignedFiles(config.stateDir), selfSigned: true };
  return config;
}

/** `quality:` (ours): when values turn stale, and how often counter totals are saved. */
function readQuality(section: ConfigSection): QualityConfig {
  const quality: QualityConfig = {
    stalePeriods: section.number('stale_periods', DEFAULT_STALE_PERIODS, 1),
    staleMinMs: section.integer('stale_min_ms', DEFAULT_STALE_MIN_MS, 0, 86_400_000),
    counterSaveMs: Math.round(section.number('counter_save_interval', DEFAULT_COUNTER_SAVE_S, 0.1) * 1000),
  };
  section.warnUnknownKeys();
  return quality;
}

/** `audit:` (ours): how much disk the audit log may take; `max_mb: 0` keeps none. */
function readAudit(section: ConfigSection): AuditConfig {
  const audit: AuditConfig = { maxBytes: Math.round(section.number('max_mb', DEFAULT_AUDIT_MAX_MB, 0) * 1024 * 1024) };
  section.warnUnknownKeys();
  return audit;
}

function rootSection(tree: TreeNode, findings: Findings): ConfigSection {
  return new ConfigSection(requireMapping(tree), '', tree.origin, findings);
}

function requireMapping(tree: TreeNode): MapNode {
  if (tree.kind !== 'map') {
    throw new ConfigError([`${formatOrigin(tree.origin)}: the top level must be a mapping (apis:, comm_channels:, ...)`]);
  }
  return tree;
}

function readSections(root: ConfigSection, baseDir: string, findings: Findings): Pick<Config, 'logging' | 'apis' | 'buses' | 'oneWireBuses' | 'interlocks' | 'covers' | 'automations' | 'location'> {
  const logging = root.section('logging');
  const level = logging.choice('level', ['CRITICAL', 'ERROR', 'WARNING', 'INFO', 'DEBUG'] as const, 'INFO');
  // Kept as written: EVOK opens it relative to its working directory.
  const file = logging.optionalString('file');
  logging.warnUnknownKeys();

  if (!root.has('comm_channels')) {
    findings.warn(root.at, 'no comm_channels section, no buses configured');
  }
  return {
    logging: file === undefined ? { level } : { level, file },
    apis: readApis(root.section('apis'), baseDir),
    ...readBuses(root.section('comm_channels')),
    interlocks: readInterlocks(root),
    covers: readCovers(root),
    ...readAutomationSections(root),
  };
}

function readAutomationSections(root: ConfigSection): Pick<Config, 'automations' | 'location'> {
  const location = readLocation(root);
  return { location, automations: readAutomations(root, location) };
}

/**
 * Our `hw_definitions:` key (a directory or a list of them, relative to the
 * config file), after `<config dir>/hw_definitions` when that exists, which
 * is where EVOK keeps user definitions.
 */
function readHwDirs(root: ConfigSection, configDir: string, findings: Findings): string[] {
  const dirs: string[] = [];
  const besideConfig = resolve(configDir, 'hw_definitions');
  if (isDirectory(besideConfig)) dirs.push(besideConfig);
  const listed = root.value('hw_definitions');
  for (const dir of root.stringList('hw_definitions', [])) {
    addHwDir(dirs, resolve(configDir, dir), listed?.origin ?? root.at, findings);
  }
  return dirs;
}

/** `from` is where the directory was named; undefined for the command line. */
function addHwDir(dirs: string[], dir: string, from: Origin | undefined, findings: Findings): void {
  if (!isDirectory(dir)) findings.warn(from, `hw_definitions directory ${dir} does not exist, ignored`);
  else if (!dirs.includes(dir)) dirs.push(dir);
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
