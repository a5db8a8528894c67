/** The first line of an error's message: enough for a log line, never a stack. */
export function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0];
}
