/**
 * Text Postgres can store in text and jsonb alike: a lone surrogate (a string cut inside an
 * emoji, which models produce) becomes U+FFFD and NUL is dropped. jsonb refuses both, and a
 * refused insert would fail the whole run.
 */
export function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd").replaceAll("\u0000", "");
}
