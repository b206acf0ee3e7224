/** Bad command-line usage: exit status 2, with the usage text. */
export class UsageError extends Error {
  override name = "UsageError";
}
