import { UsageError } from "./usage-error";

/** An option's value as a whole number, or a usage error naming the option. */
export function wholeNumber(value: string, option: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${option} must be a whole number`);
  return Number(value);
}

/** The id a subcommand takes as its first argument, ready for a URL path; `missing` is the usage error without it. */
export function idArgument(args: string[], missing: string): string {
  const id = args[0];
  if (!id || id.startsWith("--")) throw new UsageError(missing);
  return encodeURIComponent(id);
}
