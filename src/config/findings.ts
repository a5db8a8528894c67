// Problems (fatal) and warnings gathered while reading the configuration,
// reported in file order so they read top to bottom like the file itself.
import { formatOrigin, type Origin } from './yaml-tree.js';

interface Finding {
  /** Undefined for findings about command-line values. */
  at: Origin | undefined;
  text: string;
}

export class Findings {
  private readonly errors: Finding[] = [];
  private readonly warnings: Finding[] = [];

  error(at: Origin | undefined, message: string): void {
    this.errors.push({ at, text: at === undefined ? message : `${formatOrigin(at)}: ${message}` });
  }

  /** A problem whose text already names its place; `at` only orders it among the others. */
  errorText(at: Origin | undefined, text: string): void {
    this.errors.push({ at, text });
  }

  warn(at: Origin | undefined, message: string): void {
    this.warnings.push({ at, text: at === undefined ? message : `${formatOrigin(at)}: ${message}` });
  }

  get hasErrors(): boolean {
    return this.errors.length > 0;
  }

  errorTexts(): string[] {
    return inFileOrder(this.errors);
  }

  warningTexts(): string[] {
    return inFileOrder(this.warnings);
  }
}

/**
 * Files in the order they were first mentioned, lines ascending within each,
 * unlocated ones last; findings on one line keep the order they were made in.
 */
function inFileOrder(findings: Finding[]): string[] {
  const fileRank = new Map<string, number>();
  for (const { at } of findings) {
    if (at !== undefined && !fileRank.has(at.file)) fileRank.set(at.file, fileRank.size);
  }
  const rank = (at: Origin | undefined): [number, number] => (at === undefined ? [Infinity, 0] : [fileRank.get(at.file) ?? 0, at.line]);
  return [...findings]
    .sort((a, b) => {
      const [ra, rb] = [rank(a.at), rank(b.at)];
      return ra[0] - rb[0] || ra[1] - rb[1];
    })
    .map((finding) => finding.text);
}
