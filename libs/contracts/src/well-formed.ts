import { err, ok, type Result } from "./result";

/**
 * Text Postgres can store in text and jsonb alike: a lone surrogate (a string cut inside an
 * emoji, which models produce) becomes U+FFFD and NUL is dropped. jsonb refuses both, and a
 * refused insert would fail the whole run.
 */
export function wellFormed(text: string): string {
  // Nearly every text has neither: one test instead of two replacing passes.
  if (!SURROGATE_OR_NUL.test(text)) return text;
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd").replaceAll("\u0000", "");
}

const SURROGATE_OR_NUL = /[\ud800-\udfff\u0000]/;

/** The deepest nesting of arrays and objects Nahida takes in any JSON it receives or stores. */
export const MAX_JSON_DEPTH = 64;

/**
 * How deeply JSON text nests its arrays and objects, read without parsing it (strings
 * skipped); counting stops at `limit + 1`. A body checked with it before `JSON.parse` can
 * never make anything that walks the parsed value recursive too deep.
 */
export function jsonTextDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/**
 * A JSON-like value made storable in Postgres text and jsonb: every string, keys included,
 * {@link wellFormed}. It walks with an explicit stack, never recursion, so no input can
 * overflow the call stack; a value nested deeper than `maxDepth` is an error with the
 * reason. An object met twice (shared, which parsed JSON never is) is copied once, at the
 * depth it was first met. Two keys that clean to the same key keep the later one's value.
 * A value with nothing to clean comes back as it is, not copied.
 */
export function storableJson<T>(value: T, maxDepth = MAX_JSON_DEPTH): Result<T, string> {
  return walk(value, maxDepth, "error");
}

/**
 * {@link storableJson} for keeping what could not be taken (a quarantined event): whatever
 * nests deeper than `maxDepth` is cut and replaced by a marker string, never an error.
 */
export function storableJsonCut(value: unknown, maxDepth = MAX_JSON_DEPTH): unknown {
  const walked = walk(value, maxDepth, "cut");
  return walked.ok ? walked.value : null;
}

function walk<T>(value: T, maxDepth: number, tooDeep: "error" | "cut"): Result<T, string> {
  if (typeof value === "string") return ok(wellFormed(value) as T);
  if (!isContainer(value)) return ok(value);
  // Nearly every value is clean and shallow: a read-only pass first, which costs a fraction of
  // a copy (a profile of the ingress had the copy at a fifth of its CPU per message). Not
  // when cutting (quarantined events, rare): the scan lets an object met twice through at
  // any depth, where the cut must cut it.
  if (tooDeep === "error" && cleanAndShallow(value, maxDepth)) return ok(value);
  const copies = new Map<object, unknown>();
  const copyOf = (source: object): unknown => (Array.isArray(source) ? new Array(source.length) : {});
  const root = copyOf(value);
  copies.set(value, root);
  const stack: { source: object; copy: unknown; depth: number }[] = [{ source: value, copy: root, depth: 1 }];
  while (stack.length > 0) {
    const { source, copy, depth } = stack.pop()!;
    if (depth > maxDepth && tooDeep === "error") return err(`nested deeper than ${maxDepth} levels`);
    for (const [key, child] of Object.entries(source)) {
      let cleaned: unknown = child;
      if (typeof child === "string") cleaned = wellFormed(child);
      else if (isContainer(child) && depth >= maxDepth && tooDeep === "cut") cleaned = `[nested deeper than ${maxDepth} levels]`;
      else if (isContainer(child)) {
        const seen = copies.get(child);
        if (seen !== undefined) cleaned = seen;
        else {
          cleaned = copyOf(child);
          copies.set(child, cleaned);
          stack.push({ source: child, copy: cleaned, depth: depth + 1 });
        }
      }
      if (Array.isArray(copy)) copy[Number(key)] = cleaned;
      // An own "__proto__" key (JSON.parse makes one) stays a key, never the copy's prototype.
      else Object.defineProperty(copy, wellFormed(key), { value: cleaned, enumerable: true, writable: true, configurable: true });
    }
  }
  return ok(root as T);
}

/** Whether no string of `value`, keys included, needs cleaning and nothing nests deeper than `maxDepth`. */
function cleanAndShallow(value: object, maxDepth: number): boolean {
  const seen = new Set<object>([value]);
  const stack: { source: object; depth: number }[] = [{ source: value, depth: 1 }];
  while (stack.length > 0) {
    const { source, depth } = stack.pop()!;
    const isArray = Array.isArray(source);
    for (const key in source) {
      if (!Object.hasOwn(source, key)) continue;
      if (!isArray && SURROGATE_OR_NUL.test(key)) return false;
      const child: unknown = (source as Record<string, unknown>)[key];
      if (typeof child === "string") {
        if (SURROGATE_OR_NUL.test(child) && wellFormed(child) !== child) return false;
      } else if (isContainer(child) && !seen.has(child)) {
        if (depth >= maxDepth) return false;
        seen.add(child);
        stack.push({ source: child, depth: depth + 1 });
      }
    }
  }
  return true;
}

/** Arrays and plain objects are walked; anything else (a Date, a Buffer) is kept as it is. */
function isContainer(value: unknown): value is object {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
