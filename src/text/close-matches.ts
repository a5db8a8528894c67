// "Did you mean ...?": names close in spelling to one that is not known
// (config keys, board models).

/**
 * The names closest to an unknown one: the same letters in another case or
 * with `-`/`_` swapped first, then those one or two edits away.
 */
export function closeMatches(name: string, known: Iterable<string>, max = 3): string[] {
  const squash = (text: string) => text.toUpperCase().replace(/[-_ ]/g, '');
  const wanted = squash(name);
  const scored: Array<{ candidate: string; score: number }> = [];
  for (const candidate of known) {
    const distance = editDistance(wanted, squash(candidate));
    const limit = wanted.length <= 3 ? 1 : 2;
    if (distance <= limit) scored.push({ candidate, score: distance });
  }
  // The same name but for case and dashes is the one meant: only those, then.
  const exact = scored.some(({ score }) => score === 0);
  return scored
    .filter(({ score }) => !exact || score === 0)
    .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate))
    .slice(0, max)
    .map(({ candidate }) => candidate);
}

/** Levenshtein distance, for names of a few characters. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
