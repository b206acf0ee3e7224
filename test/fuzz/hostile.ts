import fc from "fast-check";

/**
 * Hostile request bodies as fast-check arbitraries (seeded, shrinking): a real-shaped base
 * (a fixture, a valid request) mutated at one path, any JSON at all, and text that is not
 * JSON. Each yields the bytes to send and a short label for the report.
 */
export interface HostileBody {
  label: string;
  body: Buffer;
  contentType: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Nested `depth` levels of arrays and objects, as text (JSON.stringify could not make it). */
const nestedText = (depth: number) => `${'[{"a":'.repeat(Math.floor(depth / 2))}1${"}]".repeat(Math.floor(depth / 2))}`;

/** Values that have broken parsers and databases: NUL, lone surrogates, huge, deep, wrong types. */
const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>("\u0000", "a\u0000b", "\ud800", "x\udc00y", "\ud83d", "", " ", "🤖".repeat(50), "\u202e", "%00", "../../etc/passwd", "null"),
  fc.constantFrom<Json>(null, true, false, 0, -1, 1e308, -1e308, 2 ** 53 + 1, 1.5, -0),
  fc.constantFrom<Json>([], {}, [[[]]], { "": "" }, { "__proto__": { polluted: true } }, { constructor: { prototype: { polluted: true } } }),
  fc.string({ unit: "binary", maxLength: 64 }),
  fc.integer({ min: 1, max: 100_000 }).map((n) => "x".repeat(n)),
  fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>,
);

/** Every path into a JSON value (keys and indexes), the root first. */
function pathsOf(value: Json, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((item, index) => pathsOf(item, [...at, index], out));
  else if (value !== null && typeof value === "object") for (const [key, item] of Object.entries(value)) pathsOf(item, [...at, key], out);
  return out;
}

function setAt(value: Json, path: (string | number)[], next: Json | undefined): Json {
  if (path.length === 0) return next ?? null;
  const copy: Json = structuredClone(value);
  let node = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, Json>;
  const last = path.at(-1)!;
  if (next === undefined) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else node[last] = next;
  return copy;
}

/** One mutation of `base`: a value replaced by a hostile one, a key dropped, a key added (a lone surrogate, a NUL in it). */
function mutated(base: Json): fc.Arbitrary<{ label: string; value: Json }> {
  const paths = pathsOf(base);
  return fc.tuple(fc.integer({ min: 0, max: paths.length - 1 }), fc.integer({ min: 0, max: 3 }), hostileValue).map(([index, how, value]) => {
    const path = paths[index]!;
    const where = path.join(".") || "(root)";
    if (how === 0 && path.length > 0) return { label: `drop ${where}`, value: setAt(base, path, undefined) };
    if (how === 1) {
      const target = path.length > 0 ? path.slice(0, -1) : path;
      const parent = target.reduce<Json>((node, key) => (node as Record<string | number, Json>)[key]!, base);
      if (parent !== null && typeof parent === "object" && !Array.isArray(parent)) {
        return { label: `add key under ${target.join(".") || "(root)"}`, value: setAt(base, [...target, "k\ud800\u0000"], value) };
      }
    }
    return { label: `set ${where}`, value: setAt(base, path, value) };
  });
}

const text = (label: string, body: string, contentType = "application/json"): HostileBody => ({ label, body: Buffer.from(body), contentType });

/**
 * Bodies for a target whose real bodies look like `bases`. `wrap` turns a deep-nesting
 * payload into the target's shape (so the depth reaches the fields it parses).
 */
export function hostileBodies(bases: Json[], wrap: (inner: string) => string = (inner) => inner): fc.Arbitrary<HostileBody> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...bases).chain(mutated).map(({ label, value }) => text(label, JSON.stringify(value))) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 6 }).map((value) => text("any JSON", JSON.stringify(value))) },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 40_000 }).map((depth) => text(`nested ${depth} deep`, wrap(nestedText(depth)))) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.string({ maxLength: 200 }).map((s) => text("not JSON", s)),
        fc.constantFrom("{", "[", '{"a":', "nul\u0000", '"\\ud800"', '{"a":"\\u0000"}', "1e999999", "-", "[1,]", "\ufeff{}").map((s) => text("broken JSON", s)),
        fc.uint8Array({ minLength: 1, maxLength: 256 }).map((bytes) => ({ label: "bytes (invalid UTF-8)", body: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(bytes)]), contentType: "application/json" })),
        fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1").map((type) => text(`content-type ${type}`, "{}", type)),
      ),
    },
  );
}
